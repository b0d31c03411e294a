#!/usr/bin/env bash
# Regenerates every native binary of the recorded machines in platform_fixtures/: the
# libbitsandbytes_* file each machine selects, the system libraries the loader looks for (in the
# distro's real folders, with the distro's real file names and symlinks), the CUDA libraries of
# nvidia-* wheels and toolkits, and the loader cache (/etc/ld.so.cache, or for glibc < 2.32 the
# recorded output of `ldconfig -p` in machine.json). Everything is built by tools/make_bnb_stub.py
# from the recorded wheel data in bnbdoctor/data/bnb_wheels.json; libstdc++ copies come from
# tests/data/elf (built by tools/build_native_fixtures.sh) where one matches the distro.
#
# Needs: python3, binutils (as, ld, strip, readelf), binutils-aarch64-linux-gnu (Jetson),
# gcc-mingw-w64-x86-64 (Windows). Deterministic and idempotent: files are overwritten in place,
# and a second run gives byte-identical output. Unselected libbitsandbytes_* files stay 0-byte
# placeholders (nothing reads them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FX="$ROOT/platform_fixtures"
ELF="$ROOT/tests/data/elf"
stub() { python3 "$ROOT/tools/make_bnb_stub.py" "$@"; }

# link DIR NAME TARGET: a relative symlink DIR/NAME -> TARGET (replacing whatever is there)
link() { mkdir -p "$1"; rm -f "$1/$2"; ln -s "$3" "$1/$2"; }

# bnb FIXTURE_ROOT PACKAGE_DIR VERSION FILE [ARCH]: the selected bitsandbytes library
bnb() {
  local dir="$1$2"
  mkdir -p "$dir"
  rm -f "$dir/$4"
  stub bnb --version "$3" --file "$4" --arch "${5:-x86_64}" -o "$dir/$4"
}

# cuda DIR SONAME [REALNAME] [ARCH]: a CUDA library stub; with REALNAME, SONAME is a link to it
cuda() {
  local dir=$1 soname=$2 real=${3:-$2} arch=${4:-x86_64}
  mkdir -p "$dir"
  rm -f "$dir/$real"
  stub system --soname "$soname" --arch "$arch" -o "$dir/$real"
  if [[ $real != "$soname" ]]; then link "$dir" "$soname" "$real"; fi
}

# wheel SITE_PACKAGES SUBDIR SONAME...: libraries of an nvidia-* wheel (real files named by SONAME)
wheel() {
  local site=$1 sub=$2
  shift 2
  for soname in "$@"; do cuda "$site/nvidia/$sub/lib" "$soname"; done
}

# glibc DIR GLIBC ARCH: libc, libm, libpthread, libdl, librt. glibc >= 2.34 installs them as plain
# files named by SONAME; older releases as libX-2.NN.so with the SONAME as a symlink.
glibc() {
  local dir=$1 version=$2 arch=$3 soname stem
  mkdir -p "$dir"
  for soname in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
    stem=${soname%%.so*}
    rm -f "$dir/$soname" "$dir/$stem-$version.so"
    if [[ $(printf '%s\n' "$version" 2.34 | sort -V | head -1) == 2.34 ]]; then
      stub system --soname "$soname" --glibc "$version" --arch "$arch" -o "$dir/$soname"
    else
      stub system --soname "$soname" --glibc "$version" --arch "$arch" -o "$dir/$stem-$version.so"
      link "$dir" "$soname" "$stem-$version.so"
    fi
  done
}

# gcc_runtime DIR GCC ARCH LIBGCC_FILE STDCXX_STUB STDCXX_FILE [nogomp]: libgcc_s, libgomp, libstdc++.
# STDCXX_STUB is a file from tests/data/elf or "gen:GLIBCXX_LAST:CXXABI_LAST".
gcc_runtime() {
  local dir=$1 gcc=$2 arch=$3 libgcc=$4 stdcxx=$5 stdcxx_file=$6 gomp=${7:-gomp}
  mkdir -p "$dir"
  rm -f "$dir/$libgcc" "$dir/$stdcxx_file"
  stub system --soname libgcc_s.so.1 --gcc "$gcc" --arch "$arch" -o "$dir/$libgcc"
  if [[ $libgcc != libgcc_s.so.1 ]]; then link "$dir" libgcc_s.so.1 "$libgcc"; fi
  if [[ $gomp == gomp ]]; then
    rm -f "$dir/libgomp.so.1.0.0"
    stub system --soname libgomp.so.1 --gcc "$gcc" --arch "$arch" -o "$dir/libgomp.so.1.0.0"
    link "$dir" libgomp.so.1 libgomp.so.1.0.0
  fi
  if [[ $stdcxx == gen:* ]]; then
    IFS=: read -r _ glibcxx cxxabi <<<"$stdcxx"
    stub system --soname libstdc++.so.6 --glibcxx "$glibcxx" --cxxabi "$cxxabi" --arch "$arch" -o "$dir/$stdcxx_file"
  else
    cp "$stdcxx" "$dir/$stdcxx_file"
  fi
  link "$dir" libstdc++.so.6 "$stdcxx_file"
}

# debian ROOT ARCH GLIBC GCC STDCXX STDCXX_FILE [nogomp]: a merged-/usr Debian/Ubuntu system
# (/lib -> usr/lib, libraries in /usr/lib/<triplet>)
debian() {
  local root=$1 arch=$2 dir="$1/usr/lib/$2-linux-gnu"
  link "$root" lib usr/lib
  glibc "$dir" "$3" "$arch"
  gcc_runtime "$dir" "$4" "$arch" libgcc_s.so.1 "$5" "$6" "${7:-gomp}"
}

# cache ROOT GENERATOR [ARCH]: /etc/ld.so.cache as ldconfig >= 2.33 writes it
cache() { stub ldcache --root "$1/root" --arch "${3:-x86_64}" --generator "$2"; }
# ldconfig_p FIXTURE OSABI [LAYOUT]: glibc < 2.32 writes the old+new cache format; the machine
# records `ldconfig -p` instead (bnbdoctor reads it when /etc/ld.so.cache is absent)
ldconfig_p() { stub ldcache --root "$1/root" --manifest "$1/machine.json" --osabi "$2" --layout "${3:-debian}"; }

UBUNTU2204="ldconfig (Ubuntu GLIBC 2.35-0ubuntu3.6) stable release version 2.35"
STDCXX_GCC12="$ELF/modern/libstdc++.so.6"  # GLIBCXX_3.4.30 / CXXABI_1.3.13 (GCC 12)

# ubuntu2204 FIXTURE [nogomp]: Ubuntu 22.04 (glibc 2.35, libstdc++6 12.3 -> libstdc++.so.6.0.30)
ubuntu2204() {
  debian "$1/root" x86_64 2.35 12 "$STDCXX_GCC12" libstdc++.so.6.0.30 "${2:-gomp}"
  cache "$1" "$UBUNTU2204"
}

# ---------------------------------------------------------------------------------------------
# The recorded machines
# ---------------------------------------------------------------------------------------------
SITE=/home/alice/venvs/llm/lib/python3.11/site-packages
# The a100-healthy machine, and the same machine with another bitsandbytes: 0.48.0 (not recorded: the
# 0.48.2 library stands in, same CUDA matrix), 0.45.5 under transformers 5, and 0.50.2 over a 0.41-era folder.
for M in "$FX/a100-healthy" "$FX/bnb0480-a100-known-bad" "$FX/transformers5-bnb0455" "$FX/bnb-overlaid-stale-files"; do
  case $M in
    *known-bad)
      bnb "$M/root" "$SITE/bitsandbytes" 0.48.2 libbitsandbytes_cuda121.so
      wheel "$M/root$SITE" cusparse libcusparse.so.12
      wheel "$M/root$SITE" nvjitlink libnvJitLink.so.12 ;;
    *bnb0455)
      bnb "$M/root" "$SITE/bitsandbytes" 0.45.5 libbitsandbytes_cuda121.so
      wheel "$M/root$SITE" cusparse libcusparse.so.12 ;;
    *) bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda121.so ;;
  esac
  wheel "$M/root$SITE" cuda_runtime libcudart.so.12
  wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
  T="$M/root/usr/local/cuda-12.2/targets/x86_64-linux/lib"
  cuda "$T" libcudart.so.12 libcudart.so.12.2.140
  link "$T" libcudart.so libcudart.so.12
  cuda "$T" libcublas.so.12 libcublas.so.12.2.5.6
  cuda "$T" libcublasLt.so.12 libcublasLt.so.12.2.5.6
  ubuntu2204 "$M"
done

M="$FX/ngc-2401-torch-prerelease-bnb0461"
SITE=/usr/local/lib/python3.10/dist-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.46.1 libbitsandbytes_cuda123.so
T="$M/root/usr/local/cuda-12.3/targets/x86_64-linux/lib"
cuda "$T" libcudart.so.12 libcudart.so.12.3.101
link "$T" libcudart.so libcudart.so.12
cuda "$T" libcublas.so.12 libcublas.so.12.3.4.1
cuda "$T" libcublasLt.so.12 libcublasLt.so.12.3.4.1
cuda "$T" libcusparse.so.12 libcusparse.so.12.2.0.103
cuda "$T" libnvJitLink.so.12 libnvJitLink.so.12.3.101
ubuntu2204 "$M"

M="$FX/cpu-laptop"
SITE=/home/bob/venvs/nlp/lib/python3.12/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cpu.so
rm -f "$M/root$SITE/torch/lib/libgomp.so.1"
stub system --soname libgomp.so.1 --gcc 11 -o "$M/root$SITE/torch/lib/libgomp.so.1"
debian "$M/root" x86_64 2.39 14 gen:33:15 libstdc++.so.6.0.33
cache "$M" "ldconfig (Ubuntu GLIBC 2.39-0ubuntu8.3) stable release version 2.39"

M="$FX/driver-cuda118-torch-cu124"
SITE=/home/frank/venvs/ft/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda124.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
ubuntu2204 "$M"

M="$FX/jetson-orin-aarch64"
SITE=/home/kim/venvs/vlm/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.46.1 libbitsandbytes_cpu.so aarch64
# What bitsandbytes itself loads there (torch sees the GPU; NVML does not): the cuda126 library.
bnb "$M/root" "$SITE/bitsandbytes" 0.46.1 libbitsandbytes_cuda126.so aarch64
T="$M/root/usr/local/cuda-12.6/targets/aarch64-linux/lib"
cuda "$T" libcudart.so.12 libcudart.so.12.6.77 aarch64
cuda "$T" libcublas.so.12 libcublas.so.12.6.3.3 aarch64
cuda "$T" libcublasLt.so.12 libcublasLt.so.12.6.3.3 aarch64
cuda "$T" libcusparse.so.12 libcusparse.so.12.5.4.2 aarch64
cuda "$T" libnvJitLink.so.12 libnvJitLink.so.12.6.77 aarch64
debian "$M/root" aarch64 2.35 12 gen:30:13 libstdc++.so.6.0.30
cache "$M" "ldconfig (Ubuntu GLIBC 2.35-0ubuntu3.6) stable release version 2.35" aarch64

# The same board with a CPU-only torch and bitsandbytes 0.45.5 built on it (an egg holding only
# libbitsandbytes_cuda126.so, a 0-byte placeholder: the CPU library is selected, and absent).
M="$FX/jetson-cpu-torch-egg"
T="$M/root/usr/local/cuda-12.6/targets/aarch64-linux/lib"
cuda "$T" libcudart.so.12 libcudart.so.12.6.77 aarch64
cuda "$T" libcublas.so.12 libcublas.so.12.6.3.3 aarch64
cuda "$T" libcublasLt.so.12 libcublasLt.so.12.6.3.3 aarch64
cuda "$T" libcusparse.so.12 libcusparse.so.12.5.4.2 aarch64
cuda "$T" libnvJitLink.so.12 libnvJitLink.so.12.6.77 aarch64
debian "$M/root" aarch64 2.35 12 gen:30:13 libstdc++.so.6.0.30
cache "$M" "ldconfig (Ubuntu GLIBC 2.35-0ubuntu3.6) stable release version 2.35" aarch64

# An Apple-silicon Mac with bitsandbytes 0.49.2: macOS wheels are not recorded, so the selected
# libbitsandbytes_cpu.dylib is a bare Mach-O header (64-bit arm64 MH_DYLIB, no load commands).
python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<IiiIIIII", 0xFEEDFACF, 0x0100000C, 0, 6, 0, 0, 0, 0))' \
  "$FX/macos-bnb049-transformers440/root/Users/judy/venvs/llm/lib/python3.11/site-packages/bitsandbytes/libbitsandbytes_cpu.dylib"

# An aarch64 server whose venv holds the x86-64 bitsandbytes wheel (copied from an x86-64 machine):
# the bnb library is x86-64, everything else is the aarch64 system's (the same files as the Jetson's
# Ubuntu 22.04 above). One root cause (BNB313); the glibc/loader checks follow from it.
M="$FX/altra-aarch64-x86-64-bnb"
SITE=/home/alice/venvs/llm/lib/python3.11/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda121.so x86_64
wheel_arm() { for soname in "${@:3}"; do cuda "$1/nvidia/$2/lib" "$soname" "$soname" aarch64; done; }
wheel_arm "$M/root$SITE" cuda_runtime libcudart.so.12
wheel_arm "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
debian "$M/root" aarch64 2.35 12 gen:30:13 libstdc++.so.6.0.30
cache "$M" "ldconfig (Ubuntu GLIBC 2.35-0ubuntu3.6) stable release version 2.35" aarch64

M="$FX/kepler-k80"
SITE=/home/azureuser/venvs/bnb/lib/python3.8/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.45.5 libbitsandbytes_cuda117.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.11.0
wheel "$M/root$SITE" cublas libcublas.so.11 libcublasLt.so.11
wheel "$M/root$SITE" cusparse libcusparse.so.11
debian "$M/root" x86_64 2.31 10 gen:28:12 libstdc++.so.6.0.28
ldconfig_p "$M" 3.2.0

# bitsandbytes 0.42.0 is a py3-none-any wheel of Linux ELF files, on macOS too.
M="$FX/macos-bnb042"
bnb "$M/root" /Users/judy/venvs/llm/lib/python3.11/site-packages/bitsandbytes 0.42.0 libbitsandbytes_cpu.so

for name in mixed-v100-t4:/home/erin/venvs/train/lib/python3.10 pascal-gtx1080:/home/carol/venvs/qlora/lib/python3.10; do
  M="$FX/${name%%:*}"
  SITE=${name#*:}/site-packages
  bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda121.so
  wheel "$M/root$SITE" cuda_runtime libcudart.so.12
  wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
  ubuntu2204 "$M"
done

M="$FX/rtx4090-torch-cpu"
SITE=/home/grace/venvs/llm/lib/python3.11/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cpu.so
rm -f "$M/root$SITE/torch/lib/libgomp.so.1"
stub system --soname libgomp.so.1 --gcc 11 -o "$M/root$SITE/torch/lib/libgomp.so.1"
ubuntu2204 "$M"

M="$FX/torch-missing"
bnb "$M/root" /home/leo/venvs/serve/lib/python3.11/site-packages/bitsandbytes 0.50.2 libbitsandbytes_cpu.so
debian "$M/root" x86_64 2.36 12 "$STDCXX_GCC12" libstdc++.so.6.0.30
cache "$M" "ldconfig (Debian GLIBC 2.36-9+deb12u8) stable release version 2.36"

# bitsandbytes 0.49.2's XPU library (libsycl.so.8) under a sourced oneAPI 2026.0 runtime (libsycl.so.9).
M="$FX/xpu-bnb0492-oneapi2026-sycl9"
bnb "$M/root" /home/ines/venvs/xpu/lib/python3.12/site-packages/bitsandbytes 0.49.2 libbitsandbytes_xpu.so
ONEAPI_LIB="$M/root/opt/intel/oneapi/compiler/2026.0/lib"
for soname in libsvml.so libirng.so libimf.so libintlc.so.5; do cuda "$ONEAPI_LIB" "$soname"; done
cuda "$ONEAPI_LIB" libsycl.so.9 libsycl.so.9.0.0
debian "$M/root" x86_64 2.39 14 gen:33:15 libstdc++.so.6.0.33
cache "$M" "ldconfig (Ubuntu GLIBC 2.39-0ubuntu8.3) stable release version 2.39"

M="$FX/turing-gtx1650"
SITE=/home/dave/venvs/llm/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.44.1 libbitsandbytes_cuda121.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
ubuntu2204 "$M"

# torch's own CUDA library: a stub whose .nv_fatbin headers carry the build's TORCH_CUDA_ARCH_LIST
M="$FX/pascal-gtx1080-torch-cu128"
SITE=/home/carol/venvs/qlora/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda128.so
python3 "$ROOT/tools/make_torch_stub.py" --arch-list "7.5;8.0;8.6;9.0;10.0;12.0+PTX" -o "$M/root$SITE/torch/lib/libtorch_cuda.so"
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
ubuntu2204 "$M"

M="$FX/rtx5090-torch-cu124"
SITE=/home/frank/venvs/ft/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda124.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
ubuntu2204 "$M"

# A stale BNB_CUDA_VERSION=117 on 0.45.5 with torch cu129: the override's cuda117 library needs CUDA 11
# libraries that are nowhere; without it 0.45.5 has no cuda129 build (issue 11 item 4).
M="$FX/bnb0455-override-117-torch-cu129"
SITE=/home/dave/venvs/llm/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.45.5 libbitsandbytes_cuda117.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
ubuntu2204 "$M"

# One V100, and a DGX-2's sixteen (the same software: only the NVML answer differs).
SITE=/home/ubuntu/venvs/llm/lib/python3.11/site-packages
for M in "$FX/v100-bnb0461-cu128" "$FX/dgx2-v100x16-bnb0461-cu128"; do
  bnb "$M/root" "$SITE/bitsandbytes" 0.46.1 libbitsandbytes_cuda128.so
  wheel "$M/root$SITE" cuda_runtime libcudart.so.12
  wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
  wheel "$M/root$SITE" cusparse libcusparse.so.12
  wheel "$M/root$SITE" nvjitlink libnvJitLink.so.12
  ubuntu2204 "$M"
done

# bitsandbytes 0.41.1 on Windows: the Linux ELF file the legacy setup picks.
M="$FX/windows-bnb041"
bnb "$M/root" /C/Users/ivan/projects/llm-finetune/venv/Lib/site-packages/bitsandbytes 0.41.1 libbitsandbytes_cuda118.so

M="$FX/wsl2-missing-wsl-lib"
bnb "$M/root" /home/heidi/venvs/llm/lib/python3.10/site-packages/bitsandbytes 0.50.2 libbitsandbytes_cpu.so
ubuntu2204 "$M"

# ---------------------------------------------------------------------------------------------
# Machines recorded with the native probe (issue 3)
# ---------------------------------------------------------------------------------------------
# CentOS 7.9: /lib64 -> usr/lib64, glibc 2.17, GCC 4.8.5 runtime, libstdc++.so.6.0.19.
M="$FX/centos7-cxxabi"
SITE=/home/chen/venvs/qlora/lib/python3.8/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.42.0 libbitsandbytes_cuda121.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
link "$M/root" lib64 usr/lib64
glibc "$M/root/usr/lib64" 2.17 x86_64
gcc_runtime "$M/root/usr/lib64" 4.8.5 x86_64 libgcc_s-4.8.5-20150702.so.1 "$ELF/centos7/libstdc++.so.6" libstdc++.so.6.0.19
ldconfig_p "$M" 2.6.32 rhel

# The same node after `pip install -U torch` (2.4.0+cu124): 0.42.0 selects libbitsandbytes_cuda124.so,
# which it does not ship, so no bitsandbytes library is read (its files stay 0-byte placeholders).
M="$FX/centos7-bnb042-torch-cu124"
SITE=/home/chen/venvs/qlora/lib/python3.8/site-packages
: > "$M/root$SITE/bitsandbytes/libbitsandbytes_cuda121.so"
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
link "$M/root" lib64 usr/lib64
glibc "$M/root/usr/lib64" 2.17 x86_64
gcc_runtime "$M/root/usr/lib64" 4.8.5 x86_64 libgcc_s-4.8.5-20150702.so.1 "$ELF/centos7/libstdc++.so.6" libstdc++.so.6.0.19
ldconfig_p "$M" 2.6.32 rhel

# torch 2.0.1+cu118 from download.pytorch.org (CUDA libraries bundled under hashed names), a CUDA
# 11.8 runfile install in /usr/local/cuda-11.8 without the /usr/local/cuda link or an ld.so.conf entry.
M="$FX/libcudart-missing-ld-path"
bnb "$M/root" /home/nina/venvs/sd/lib/python3.10/site-packages/bitsandbytes 0.43.3 libbitsandbytes_cuda118.so
T="$M/root/usr/local/cuda-11.8/targets/x86_64-linux/lib"
cuda "$T" libcudart.so.11.0 libcudart.so.11.8.89
link "$T" libcudart.so libcudart.so.11.0
cuda "$T" libcublas.so.11 libcublas.so.11.11.3.6
cuda "$T" libcublasLt.so.11 libcublasLt.so.11.11.3.6
cuda "$T" libcusparse.so.11 libcusparse.so.11.7.5.86
link "$M/root/usr/local/cuda-11.8" lib64 targets/x86_64-linux/lib
ubuntu2204 "$M"

# Two runfile toolkits, both on LD_LIBRARY_PATH (11.8 first), torch with nvidia-* wheels.
M="$FX/cuda11-first-ld-path-torch-cu12"
SITE=/home/omar/venvs/llm/lib/python3.11/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda121.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
T="$M/root/usr/local/cuda-11.8/targets/x86_64-linux/lib"
cuda "$T" libcudart.so.11.0 libcudart.so.11.8.89
cuda "$T" libcublas.so.11 libcublas.so.11.11.3.6
cuda "$T" libcublasLt.so.11 libcublasLt.so.11.11.3.6
link "$M/root/usr/local/cuda-11.8" lib64 targets/x86_64-linux/lib
T="$M/root/usr/local/cuda-12.1/targets/x86_64-linux/lib"
cuda "$T" libcudart.so.12 libcudart.so.12.1.105
cuda "$T" libcublas.so.12 libcublas.so.12.1.3.1
cuda "$T" libcublasLt.so.12 libcublasLt.so.12.1.3.1
cuda "$T" libcusparse.so.12 libcusparse.so.12.1.0.106
cuda "$T" libnvJitLink.so.12 libnvJitLink.so.12.1.105
link "$M/root/usr/local/cuda-12.1" lib64 targets/x86_64-linux/lib
link "$M/root/usr/local" cuda cuda-12.1
ubuntu2204 "$M"

# A conda env whose own libstdc++ (defaults' libstdcxx-ng 11.2.0) is older than the system's,
# with bitsandbytes built from source by the system GCC 12.
M="$FX/conda-old-libstdcxx"
ENV=/home/maria/miniconda3/envs/bnb-dev
SITE=$ENV/lib/python3.11/site-packages
mkdir -p "$M/root$SITE/bitsandbytes"
cp "$ELF/bnb_source_build/libbitsandbytes_cuda124.so" "$M/root$SITE/bitsandbytes/libbitsandbytes_cuda124.so"
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
gcc_runtime "$M/root$ENV/lib" 11.2 x86_64 libgcc_s.so.1 "$ELF/conda_old/libstdc++.so.6" libstdc++.so.6.0.29
T="$M/root/usr/local/cuda-12.4/targets/x86_64-linux/lib"
cuda "$T" libcudart.so.12 libcudart.so.12.4.127
link "$M/root/usr/local/cuda-12.4" lib64 targets/x86_64-linux/lib
ubuntu2204 "$M"

M="$FX/ubuntu2004-bnb0455-cu126"
SITE=/home/ravi/venvs/llm/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.45.5 libbitsandbytes_cuda126.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
debian "$M/root" x86_64 2.31 10 gen:28:12 libstdc++.so.6.0.28
ldconfig_p "$M" 3.2.0

# BNB_CUDA_VERSION=117 selects a file 0.50.2 does not ship: no library is loaded, nothing to build.

# conda-forge env with libstdcxx-ng 12.2 (libstdc++.so.6.0.30) and libgcc-ng 12.2.
M="$FX/conda-healthy"
ENV=/home/yuki/miniforge3/envs/llm
SITE=$ENV/lib/python3.11/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.50.2 libbitsandbytes_cuda121.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
gcc_runtime "$M/root$ENV/lib" 12 x86_64 libgcc_s.so.1 "$STDCXX_GCC12" libstdc++.so.6.0.30
ubuntu2204 "$M"

M="$FX/windows-bnb050-missing-dll"
mkdir -p "$M/root/C/Users/sam/llm/venv/Lib/site-packages/bitsandbytes"
stub pe --version 0.50.2 --file libbitsandbytes_cuda121.dll \
  -o "$M/root/C/Users/sam/llm/venv/Lib/site-packages/bitsandbytes/libbitsandbytes_cuda121.dll"

M="$FX/mixed-gt1030-a6000-bnb042"
SITE=/home/pat/venvs/llm/lib/python3.10/site-packages
bnb "$M/root" "$SITE/bitsandbytes" 0.42.0 libbitsandbytes_cuda121.so
wheel "$M/root$SITE" cuda_runtime libcudart.so.12
wheel "$M/root$SITE" cublas libcublas.so.12 libcublasLt.so.12
wheel "$M/root$SITE" cusparse libcusparse.so.12
ubuntu2204 "$M"

echo "rebuilt the native files of $(find "$FX" -name machine.json | wc -l) recorded machines in $FX"
