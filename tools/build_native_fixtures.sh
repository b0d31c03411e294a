#!/usr/bin/env bash
# Builds the small, REAL native libraries that bnbdoctor's tests parse, so tests never need a
# compiler, CUDA or a second OS. Outputs (committed): tests/data/elf/** and tests/data/pe/*.dll.
# Every library is a stub: its exports do nothing; what matters is its SONAME, DT_NEEDED,
# RUNPATH and symbol versions, which are what the dynamic loader checks.
#
# Needs: gcc, binutils (readelf, strip, as, ld), python3, glibc >= 2.34 on the build machine
# (for dlopen@GLIBC_2.34). Optional: binutils-aarch64-linux-gnu (aarch64 sample),
# gcc-mingw-w64-x86-64 (PE samples). A missing optional tool keeps the committed files.
# Idempotent: every run rebuilds everything from scratch in a temporary folder and then
# replaces the outputs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ELF_OUT="$ROOT/tests/data/elf"
PE_OUT="$ROOT/tests/data/pe"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
LIBC="$(gcc -print-file-name=libc.so.6)"
if [[ "$LIBC" != /* ]]; then LIBC=/lib/x86_64-linux-gnu/libc.so.6; fi

# Common flags: a tiny, deterministic shared object with no startup files and no libgcc.
# shellcheck disable=SC2054  # commas inside -Wl,... are gcc's, not array separators
CFLAGS=(-shared -fPIC -nostdlib -fno-builtin -Os -fno-asynchronous-unwind-tables -fno-stack-protector
        -Wl,--no-as-needed -Wl,--hash-style=gnu -Wl,--build-id=none -Wl,-z,noseparate-code)

# ---------------------------------------------------------------------------------------------
# libstdc++ stubs. Each version node inherits the previous one (like the real libstdc++) and
# defines one dummy symbol; some nodes also define the real symbols that bnb binds to them.
# ---------------------------------------------------------------------------------------------
declare -A REAL_SYMS=(
  [GLIBCXX_3.4]="_Znwm _ZNSo5flushEv"
  [GLIBCXX_3.4.9]="_ZSt16__ostream_insertIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_PKS3_l"
  [GLIBCXX_3.4.11]="_ZSt20__throw_system_errori"
  [GLIBCXX_3.4.21]="_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm"
  [GLIBCXX_3.4.29]="_ZSt28__throw_bad_array_new_lengthv"
  [GLIBCXX_3.4.30]="_ZSt21__glibcxx_assert_failPKciS0_S0_"
  [CXXABI_1.3]="__gxx_personality_v0 __cxa_guard_acquire"
  [CXXABI_1.3.7]="__cxa_thread_atexit"
  [CXXABI_1.3.9]="_ZdlPvm"
  [CXXABI_1.3.13]="_ZNSt15__exception_ptr13exception_ptr10_M_releaseEv"
)

# version_chain PREFIX BASE LAST -> "PREFIX_BASE PREFIX_BASE.1 ... PREFIX_BASE.LAST"
version_chain() {
  local prefix=$1 base=$2 last=$3 i
  printf '%s_%s\n' "$prefix" "$base"
  for ((i = 1; i <= last; i++)); do printf '%s_%s.%d\n' "$prefix" "$base" "$i"; done
}

# libstdcxx_stub DIR GLIBCXX_LAST CXXABI_LAST [EXTRA_NODE...]
libstdcxx_stub() {
  local dir=$1 glibcxx_last=$2 cxxabi_last=$3
  shift 3
  local src="$WORK/$dir-stdcxx.c" map="$WORK/$dir-stdcxx.map" node prev sym syms first=1
  : >"$src"
  : >"$map"
  for chain in "GLIBCXX 3.4 $glibcxx_last" "CXXABI 1.3 $cxxabi_last" "EXTRA"; do
    prev=""
    if [[ $chain == EXTRA ]]; then
      nodes=("$@")
    else
      # shellcheck disable=SC2086
      mapfile -t nodes < <(version_chain $chain)
    fi
    for node in "${nodes[@]}"; do
      syms="bnbdoctor_stub_${node//./_} ${REAL_SYMS[$node]:-}"
      printf '%s {\n  global:\n' "$node" >>"$map"
      for sym in $syms; do
        printf 'void %s(void) {}\n' "$sym" >>"$src"
        printf '    %s;\n' "$sym" >>"$map"
      done
      if ((first)); then printf '  local:\n    *;\n' >>"$map"; first=0; fi
      printf '}%s;\n' "${prev:+ $prev}" >>"$map"
      if [[ $chain != EXTRA ]]; then prev=$node; fi
    done
  done
  mkdir -p "$WORK/out/$dir"
  gcc "${CFLAGS[@]}" -o "$WORK/out/$dir/libstdc++.so.6" "$src" \
    -Wl,-soname,libstdc++.so.6 -Wl,--version-script,"$map"
}

# CentOS 7 (GCC 4.8.5): GLIBCXX_3.4.19, CXXABI_1.3.7.
libstdcxx_stub centos7 19 7
# An older conda libstdcxx-ng (GCC 11): GLIBCXX_3.4.29, CXXABI_1.3.12.
libstdcxx_stub conda_old 29 12
# Debian 12 (GCC 12): GLIBCXX_3.4.30, CXXABI_1.3.13, plus the two odd nodes it also defines.
libstdcxx_stub modern 30 13 CXXABI_TM_1 CXXABI_FLOAT128

# ---------------------------------------------------------------------------------------------
# CUDA runtime stubs: one version node named after the SONAME, as NVIDIA's libraries have.
# ---------------------------------------------------------------------------------------------
# cuda_stub DIR SONAME "SYMBOLS" [EXTRA LINK ARGS...]
cuda_stub() {
  local dir=$1 soname=$2 syms=$3 sym
  shift 3
  local src="$WORK/$dir-$soname.c" map="$WORK/$dir-$soname.map"
  : >"$src"
  printf '%s {\n  global:\n' "$soname" >"$map"
  for sym in $syms; do
    printf 'void %s(void) {}\n' "$sym" >>"$src"
    printf '    %s;\n' "$sym" >>"$map"
  done
  printf '  local:\n    *;\n};\n' >>"$map"
  mkdir -p "$WORK/out/$dir"
  gcc "${CFLAGS[@]}" -o "$WORK/out/$dir/$soname" "$src" \
    -Wl,-soname,"$soname" -Wl,--version-script,"$map" "$@"
}

CUDART_SYMS="cudaGetDeviceCount cudaRuntimeGetVersion cudaDeviceGetAttribute cudaGetLastError cudaMallocManaged cudaMemPrefetchAsync"
CUBLASLT_SYMS="cublasLtCreate cublasLtMatmul cublasLtMatmulDescCreate"
CUBLAS_SYMS="cublasCreate_v2 cublasGemmEx cublasGemmStridedBatchedEx"

# libcublas needs libcublasLt next to it ($ORIGIN), like NVIDIA's; cuda11 uses the old DT_RPATH
# tag, cuda12 the new DT_RUNPATH, so both tags are covered.
cuda_stub cuda12 libcudart.so.12 "$CUDART_SYMS"
cuda_stub cuda12 libcublasLt.so.12 "$CUBLASLT_SYMS"
printf 'extern void cublasLtCreate(void);\nvoid bnbdoctor_uses_lt(void) { cublasLtCreate(); }\n' >"$WORK/uses_lt.c"
# shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader, not the shell
cuda_stub cuda12 libcublas.so.12 "$CUBLAS_SYMS" "$WORK/uses_lt.c" \
  "$WORK/out/cuda12/libcublasLt.so.12" -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN'
cuda_stub cuda11 libcudart.so.11.0 "$CUDART_SYMS"
cuda_stub cuda11 libcublasLt.so.11 "$CUBLASLT_SYMS"
# shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader, not the shell
cuda_stub cuda11 libcublas.so.11 "$CUBLAS_SYMS" "$WORK/uses_lt.c" \
  "$WORK/out/cuda11/libcublasLt.so.11" -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN'

# ---------------------------------------------------------------------------------------------
# bitsandbytes stand-ins. Each calls the symbols that bind to the versions it should need.
# ---------------------------------------------------------------------------------------------
# bnb_lib OUT SONAME "UNDEFINED SYMBOLS" "EXPORTS" LINK-INPUTS...
bnb_lib() {
  local out=$1 soname=$2 undef=$3 exports=$4 sym
  shift 4
  local src="$WORK/${soname%.so}.c"
  : >"$src"
  for sym in $undef; do printf 'extern void %s(void);\n' "$sym" >>"$src"; done
  printf 'void *bnbdoctor_refs[] = {\n' >>"$src"
  for sym in $undef; do printf '  (void *)%s,\n' "$sym" >>"$src"; done
  printf '};\n' >>"$src"
  for sym in $exports; do printf 'void %s(void) {}\n' "$sym" >>"$src"; done
  mkdir -p "$(dirname "$WORK/out/$out")"
  gcc "${CFLAGS[@]}" -o "$WORK/out/$out" "$src" -Wl,-soname,"$soname" "$@"
}

STDCXX_USES="_Znwm _ZSt16__ostream_insertIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_PKS3_l _ZSt20__throw_system_errori _ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm __gxx_personality_v0 _ZdlPvm"
CUDA_USES="cudaGetLastError cudaMallocManaged cudaMemPrefetchAsync cublasCreate_v2 cublasGemmEx cublasLtCreate cublasLtMatmul memset"
CUDA_EXPORTS="cquantize_blockwise_fp16 cdequantize_blockwise_fp16 cgemm_4bit_inference_naive_fp16 cget_managed_ptr"
CPU_EXPORTS="cquantize_blockwise_cpu_fp32 cdequantize_blockwise_cpu_fp32"
M=$WORK/out

bnb_lib bnb/libbitsandbytes_cuda121.so libbitsandbytes_cuda121.so "$STDCXX_USES $CUDA_USES" "$CUDA_EXPORTS" \
  "$M/cuda12/libcudart.so.12" "$M/cuda12/libcublas.so.12" "$M/cuda12/libcublasLt.so.12" \
  "$M/modern/libstdc++.so.6" "$LIBC" \
  -Wl,--enable-new-dtags -Wl,-rpath,/usr/local/cuda-12.1/targets/x86_64-linux/lib
bnb_lib bnb/libbitsandbytes_cuda118.so libbitsandbytes_cuda118.so "$STDCXX_USES $CUDA_USES" "$CUDA_EXPORTS" \
  "$M/cuda11/libcudart.so.11.0" "$M/cuda11/libcublas.so.11" "$M/cuda11/libcublasLt.so.11" \
  "$M/modern/libstdc++.so.6" "$LIBC" \
  -Wl,--enable-new-dtags -Wl,-rpath,/usr/local/cuda-11.8/targets/x86_64-linux/lib
# Like 0.45.5's cuda126: dlopen/dlsym@GLIBC_2.34 (fails on glibc < 2.34) and the 0.43-0.45 RUNPATH.
bnb_lib bnb/libbitsandbytes_cuda126.so libbitsandbytes_cuda126.so "$STDCXX_USES $CUDA_USES dlopen dlsym" "$CUDA_EXPORTS" \
  "$M/cuda12/libcudart.so.12" "$M/cuda12/libcublas.so.12" "$M/cuda12/libcublasLt.so.12" \
  "$M/modern/libstdc++.so.6" "$LIBC" \
  -Wl,--enable-new-dtags -Wl,-rpath,/usr/local/cuda/lib64
bnb_lib bnb/libbitsandbytes_cpu.so libbitsandbytes_cpu.so \
  "__gxx_personality_v0 _ZSt20__throw_system_errori memset __stack_chk_fail" "$CPU_EXPORTS" \
  "$M/modern/libstdc++.so.6" "$LIBC"
# A source build with GCC 12: needs GLIBCXX_3.4.30, which conda's older libstdc++ lacks.
bnb_lib bnb_source_build/libbitsandbytes_cuda124.so libbitsandbytes_cuda124.so \
  "$STDCXX_USES _ZSt28__throw_bad_array_new_lengthv _ZSt21__glibcxx_assert_failPKciS0_S0_ $CUDA_USES" "$CUDA_EXPORTS" \
  "$M/cuda12/libcudart.so.12" "$M/cuda12/libcublas.so.12" "$M/cuda12/libcublasLt.so.12" \
  "$M/modern/libstdc++.so.6" "$LIBC"

# ---------------------------------------------------------------------------------------------
# Other architectures, assembled without a cross compiler: a stub libc.so.6 plus a library
# that needs it. They model "a wheel for the wrong machine" (EM_386, EM_AARCH64).
# ---------------------------------------------------------------------------------------------
other_arch() {
  local dir=$1 as=$2 ld=$3 emul=$4 glibc=$5 call=$6
  local w="$WORK/$dir" lsrc libsrc
  mkdir -p "$w" "$M/$dir"
  printf '%s {\n  global:\n    memset;\n  local:\n    *;\n};\n' "$glibc" >"$w/libc.map"
  lsrc=$'\t.text\n\t.globl memset\n\t.type memset, %function\nmemset:\n\tnop\n'
  libsrc=$'\t.text\n\t.globl cquantize_blockwise_cpu_fp32\n\t.type cquantize_blockwise_cpu_fp32, %function\ncquantize_blockwise_cpu_fp32:\n\t'"$call"$'\n'
  printf '%s' "$lsrc" | $as -o "$w/libc.o"
  printf '%s' "$libsrc" | $as -o "$w/bnb.o"
  $ld -m "$emul" -shared --hash-style=gnu --build-id=none -z noseparate-code -z max-page-size=4096 -soname libc.so.6 \
    --version-script "$w/libc.map" -o "$M/$dir/libc.so.6" "$w/libc.o"
  $ld -m "$emul" -shared --hash-style=gnu --build-id=none -z noseparate-code -z max-page-size=4096 -soname libbitsandbytes_cpu.so \
    --no-as-needed -o "$M/$dir/libbitsandbytes_cpu.so" "$w/bnb.o" "$M/$dir/libc.so.6"
}
other_arch i386 "as --32" ld elf_i386 GLIBC_2.0 "call memset@PLT"
if command -v aarch64-linux-gnu-as >/dev/null && command -v aarch64-linux-gnu-ld >/dev/null; then
  other_arch aarch64 aarch64-linux-gnu-as aarch64-linux-gnu-ld aarch64linux GLIBC_2.17 "bl memset"
  AARCH64_STRIP=aarch64-linux-gnu-strip
else
  echo "warning: binutils-aarch64-linux-gnu not installed; keeping committed aarch64/ files" >&2
  AARCH64_STRIP=""
fi

# Strip everything built so far (strip --strip-unneeded keeps the dynamic tables).
find "$M" -path "$M/aarch64" -prune -o -type f -print0 | xargs -0 strip --strip-unneeded -R .comment
if [[ -n $AARCH64_STRIP ]]; then
  $AARCH64_STRIP --strip-unneeded -R .comment "$M"/aarch64/*
fi

# ---------------------------------------------------------------------------------------------
# Corrupt samples.
# ---------------------------------------------------------------------------------------------
mkdir -p "$M/corrupt"
head -c 200 "$M/bnb/libbitsandbytes_cuda121.so" >"$M/corrupt/truncated.so"
printf 'This is not a shared library.\nIt is text that someone saved with a .so name.\n' >"$M/corrupt/not_elf.so"
: >"$M/corrupt/empty.so"
python3 - "$M/bnb/libbitsandbytes_cpu.so" "$M/corrupt" <<'PY'
"""bad_dynamic.so: the .dynamic section (and PT_DYNAMIC) point past EOF.
bad_class.so: EI_CLASS is 3, neither 32- nor 64-bit."""
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "expects a 64-bit LSB ELF"
past_eof = len(data) + 0x1000
(shoff,) = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
for i in range(shnum):
    hdr = shoff + i * shentsize
    if struct.unpack_from("<I", data, hdr + 4)[0] == 6:  # SHT_DYNAMIC
        struct.pack_into("<Q", data, hdr + 0x18, past_eof)  # sh_offset
(phoff,) = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
for i in range(phnum):
    hdr = phoff + i * phentsize
    if struct.unpack_from("<I", data, hdr)[0] == 2:  # PT_DYNAMIC
        struct.pack_into("<Q", data, hdr + 0x08, past_eof)  # p_offset
open(f"{out}/bad_dynamic.so", "wb").write(data)
bad_class = bytearray(open(src, "rb").read())
bad_class[4] = 3
open(f"{out}/bad_class.so", "wb").write(bad_class)
PY

# Replace the committed ELF outputs (README.md stays).
mkdir -p "$ELF_OUT"
for d in "$M"/*/; do
  name=$(basename "$d")
  if [[ $name == aarch64 && -z $AARCH64_STRIP ]]; then continue; fi
  rm -rf "${ELF_OUT:?}/$name"
  cp -r "$d" "$ELF_OUT/$name"
done

# ---------------------------------------------------------------------------------------------
# PE samples (Windows DLLs), built with mingw-w64 without its C runtime.
# ---------------------------------------------------------------------------------------------
MINGW=x86_64-w64-mingw32
if ! command -v $MINGW-gcc >/dev/null; then
  echo "warning: gcc-mingw-w64-x86-64 not installed; keeping committed tests/data/pe files" >&2
  exit 0
fi
P="$WORK/pe"
mkdir -p "$P"
# shellcheck disable=SC2054  # commas inside -Wl,... are gcc's, not array separators
PEFLAGS=(-shared -nostdlib -fno-builtin -Os -s -fno-asynchronous-unwind-tables -Wl,--no-insert-timestamp
         -Wl,--disable-auto-image-base -Wl,--image-base,0x180000000 -Wl,-e,DllMainCRTStartup)
entry='int DllMainCRTStartup(void *h, unsigned reason, void *r) { (void)h; (void)reason; (void)r; return 1; }'

# cudart64_12.dll: exports only, no imports at all.
printf '%s\n__declspec(dllexport) int cudaRuntimeGetVersion(int *v) { *v = 12010; return 0; }\n__declspec(dllexport) int cudaGetLastError(void) { return 0; }\n' \
  "$entry" >"$P/cudart.c"
$MINGW-gcc "${PEFLAGS[@]}" -o "$P/cudart64_12.dll" "$P/cudart.c"

# Import libraries for DLLs we do not build: name -> exported symbols.
implib() {
  local dll=$1 syms=$2 def="$P/${1%.dll}.def" sym
  printf 'LIBRARY "%s"\nEXPORTS\n' "$dll" >"$def"
  for sym in $syms; do printf '  %s\n' "$sym" >>"$def"; done
  $MINGW-dlltool --input-def "$def" --dllname "$dll" --output-lib "$P/lib${dll%.dll}.a"
}
implib cublas64_12.dll "cublasCreate_v2 cublasGemmEx"
implib cublasLt64_12.dll "cublasLtCreate cublasLtMatmul"
implib MSVCP140.dll "_Thrd_yield"
implib VCRUNTIME140.dll "memset"
implib api-ms-win-crt-runtime-l1-1-0.dll "_initterm"
implib KERNEL32.dll "GetProcAddress LoadLibraryA"

# A delay-load import of cusparse64_12.dll, laid out as MSVC's link.exe writes it: descriptor
# array ending in a zero descriptor, INT, IAT, names. GNU ld does not fill in the delay-import
# data directory, so it is set below from the descriptor symbol's address.
cat >"$P/delay.s" <<'ASM'
	.section .didat,"dw"
	.p2align 3
	.globl bnbdoctor_delay_descriptors
bnbdoctor_delay_descriptors:
	.long 1                  # grAttrs: the fields below are RVAs
	.rva dll_name            # rvaDLLName
	.rva dll_handle          # rvaHmod
	.rva delay_iat           # rvaIAT
	.rva delay_int           # rvaINT
	.long 0, 0, 0            # rvaBoundIAT, rvaUnloadIAT, dwTimeStamp
	.fill 32, 1, 0           # the zero descriptor that ends the array
dll_handle:
	.quad 0
delay_iat:
	.quad 0, 0
delay_int:
	.rva hint_name
	.long 0
	.quad 0
hint_name:
	.short 0
	.asciz "cusparseCreate"
	.p2align 1
dll_name:
	.asciz "cusparse64_12.dll"
ASM

cat >"$P/bnb.c" <<EOF
$entry
extern int cudaGetLastError(void);
extern void cublasCreate_v2(void), cublasGemmEx(void), cublasLtCreate(void), cublasLtMatmul(void);
extern void _Thrd_yield(void), memset(void), _initterm(void);
extern void GetProcAddress(void), LoadLibraryA(void);
extern char bnbdoctor_delay_descriptors[];
__declspec(dllexport) void *bnbdoctor_refs[] = {
  (void *)cudaGetLastError, (void *)cublasCreate_v2, (void *)cublasGemmEx, (void *)cublasLtCreate,
  (void *)cublasLtMatmul, (void *)_Thrd_yield, (void *)memset, (void *)_initterm,
  (void *)GetProcAddress, (void *)LoadLibraryA, (void *)bnbdoctor_delay_descriptors,
};
__declspec(dllexport) void cquantize_blockwise_fp16(void) {}
EOF
# Link once with symbols to learn the descriptor's address, then again stripped (same layout;
# running strip afterwards would stamp the current time into the COFF header).
NOSTRIP=()
for f in "${PEFLAGS[@]}"; do [[ $f == -s ]] || NOSTRIP+=("$f"); done
PE_INPUTS=("$P/bnb.c" "$P/delay.s" "$P/cudart64_12.dll" -L"$P" -lcublas64_12 -lcublasLt64_12
           -lMSVCP140 -lVCRUNTIME140 -lapi-ms-win-crt-runtime-l1-1-0 -lKERNEL32)
$MINGW-gcc "${NOSTRIP[@]}" -o "$P/with_symbols.dll" "${PE_INPUTS[@]}"
DESC_VMA=$($MINGW-nm "$P/with_symbols.dll" | awk '$3 == "bnbdoctor_delay_descriptors" {print $1}')
$MINGW-gcc "${PEFLAGS[@]}" -o "$P/libbitsandbytes_cuda121.dll" "${PE_INPUTS[@]}"
python3 - "$P/libbitsandbytes_cuda121.dll" "$DESC_VMA" <<'PY'
"""Point data directory 13 (delay imports) at the descriptor array: 2 descriptors, 64 bytes."""
import struct
import sys

path, vma = sys.argv[1], int(sys.argv[2], 16)
data = bytearray(open(path, "rb").read())
(pe,) = struct.unpack_from("<I", data, 0x3C)
opt = pe + 4 + 20
assert struct.unpack_from("<H", data, opt)[0] == 0x20B, "expects PE32+"
(image_base,) = struct.unpack_from("<Q", data, opt + 24)
struct.pack_into("<II", data, opt + 112 + 13 * 8, vma - image_base, 64)
# Recompute the PE checksum (16-bit one's-complement-style sum, checksum field taken as 0).
struct.pack_into("<I", data, opt + 64, 0)
total = sum(struct.unpack_from(f"<{len(data) // 2}H", data)) + (data[-1] if len(data) % 2 else 0)
while total >> 16:
    total = (total & 0xFFFF) + (total >> 16)
struct.pack_into("<I", data, opt + 64, total + len(data))
open(path, "wb").write(data)
PY

mkdir -p "$PE_OUT"
cp "$P/cudart64_12.dll" "$P/libbitsandbytes_cuda121.dll" "$PE_OUT/"
echo "built native fixtures in $ELF_OUT and $PE_OUT"
