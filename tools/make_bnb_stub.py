#!/usr/bin/env python3
"""Small, REAL stand-ins for bitsandbytes' native libraries and the system libraries around them.

The recorded machines in ``platform_fixtures/`` hold these instead of the real files (which are
megabytes each and not ours to redistribute). A stub does nothing when called; what it reproduces
is exactly what the dynamic loader and bnbdoctor's native probe check:

- ``bnb``: a ``libbitsandbytes_*.so`` with the recorded wheel's SONAME (none for 0.41/0.42, whose
  libraries have none), DT_NEEDED list in order, RUNPATH, and ``.gnu.version_r`` needs (file ->
  version names, in the recorded order), read from ``bnbdoctor/data/bnb_wheels.json``. Throwaway
  dependency libraries are built with version scripts that define exactly those nodes plus one
  symbol per node, and the stub references each symbol, so every need binds to its version.
- ``system``: ``libc.so.6``, ``libm.so.6``, ``libpthread.so.0``, ``libdl.so.2``, ``librt.so.1``
  (the version nodes of a given glibc, chained like the real ones), ``libgcc_s.so.1`` (GCC_3.0 ...
  of a given GCC), ``libgomp.so.1`` (OMP_1.0 ..., GOMP_1.0 ... of a given GCC), ``libstdc++.so.6``
  (GLIBCXX_3.4 ... / CXXABI_1.3 ...) and CUDA libraries (one node named after the SONAME). Each
  node defines ``bnbdoctor_stub_<node>``, the symbol a bnb stub references for it, so a bnb stub
  and the system stubs form a world the real ``ld.so`` can load (``GLIBC_*`` symbols also carry the
  library's name, because five libraries define those nodes).
- ``pe``: a Windows ``libbitsandbytes_*.dll`` whose import table lists the recorded DLLs in the
  recorded order (mingw-w64).
- ``ldcache``: ``/etc/ld.so.cache`` (glibc's "glibc-ld.so.cache1.1" format) or the text of
  ``ldconfig -p`` for a fixture's ``root/``, built the way ldconfig builds it: the folders of
  ``/etc/ld.so.conf`` (with its includes) and the trusted folders, one entry per SONAME.

Needs: python3, GNU binutils (as, ld, strip, readelf); binutils-aarch64-linux-gnu for --arch
aarch64; gcc-mingw-w64-x86-64 for ``pe``. Output is deterministic: no build ids, no timestamps, no
paths of the build machine, and the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "bnbdoctor" / "data" / "bnb_wheels.json"

#: How to build for, and recognise, one architecture ("as" is a keyword: the functional form).
Arch = TypedDict(
    "Arch", {"as": list[str], "ld": list[str], "strip": str, "cache_flags": int, "abi": str, "machine": str}
)
#: (version node, parent node, the symbols it defines)
Node = tuple[str, str | None, list[str]]

ARCHES: dict[str, Arch] = {
    "x86_64": {
        "as": ["as", "--64"],
        "ld": ["ld", "-m", "elf_x86_64"],
        "strip": "strip",
        "cache_flags": 0x0303,  # FLAG_ELF_LIBC6 | FLAG_X8664_LIB64
        "abi": "libc6,x86-64",
        "machine": "X86-64",  # readelf's "Machine:" text starts with "Advanced Micro Devices X86-64"
    },
    "aarch64": {
        "as": ["aarch64-linux-gnu-as"],
        "ld": ["aarch64-linux-gnu-ld", "-m", "aarch64linux"],
        "strip": "aarch64-linux-gnu-strip",
        "cache_flags": 0x0A03,  # FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64
        "abi": "libc6,AArch64",
        "machine": "AArch64",
    },
}
LD_FLAGS = [
    "-shared",
    "--hash-style=gnu",
    "--build-id=none",
    "-z",
    "noseparate-code",
    "-z",
    "max-page-size=4096",
    "--no-as-needed",
]

# ---------------------------------------------------------------------------------------------
# Version nodes of the real libraries (x86_64, read from Debian 12's glibc 2.36 / GCC 12 and the
# glibc / GCC version maps). A node is kept when its release is <= the requested one.
# ---------------------------------------------------------------------------------------------
_LIBC_X86_64 = (
    ["2.2.5", "2.2.6", "2.3", "2.3.2", "2.3.3", "2.3.4"]
    + [f"2.{m}" for m in range(4, 19)]
    + [f"2.{m}" for m in range(22, 37)]
    + ["2.38", "2.39", "2.40"]
)
GLIBC_NODES = {
    "libc.so.6": _LIBC_X86_64,
    "libm.so.6": [
        "2.2.5",
        "2.4",
        "2.15",
        "2.18",
        "2.23",
        "2.24",
        "2.25",
        "2.26",
        "2.27",
        "2.28",
        "2.29",
        "2.31",
        "2.32",
        "2.35",
        "2.38",
    ],
    "libpthread.so.0": [
        "2.2.5",
        "2.2.6",
        "2.3.2",
        "2.3.3",
        "2.3.4",
        "2.4",
        "2.11",
        "2.12",
        "2.18",
        "2.28",
        "2.30",
        "2.31",
    ],
    "libdl.so.2": ["2.2.5", "2.3.3", "2.3.4"],
    "librt.so.1": ["2.2.5", "2.3.3", "2.3.4", "2.4", "2.7"],
}
AARCH64_GLIBC_BASE = "2.17"  # the first glibc with an aarch64 port: every node below it is 2.17 there
# libgcc_s.so.1: (node, first GCC release that has it)
LIBGCC_NODES: list[tuple[str, float]] = [
    ("GCC_3.0", 3),
    ("GCC_3.3", 3),
    ("GCC_3.3.1", 3),
    ("GCC_3.4", 3),
    ("GCC_3.4.2", 3),
    ("GCC_3.4.4", 3),
    ("GCC_4.0.0", 4.0),
    ("GCC_4.2.0", 4.2),
    ("GCC_4.3.0", 4.3),
    ("GCC_4.7.0", 4.7),
    ("GCC_4.8.0", 4.8),
    ("GCC_7.0.0", 7),
    ("GCC_12.0.0", 12),
    ("GCC_13.0.0", 13),
    ("GCC_14.0.0", 14),
]
# libgomp.so.1: families, each chained like libgomp.map; (node, first GCC release that has it)
LIBGOMP_FAMILIES: list[list[tuple[str, float]]] = [
    [
        ("OMP_1.0", 4.2),
        ("OMP_2.0", 4.2),
        ("OMP_3.0", 4.4),
        ("OMP_3.1", 4.7),
        ("OMP_4.0", 4.9),
        ("OMP_4.5", 6),
        ("OMP_5.0", 9),
        ("OMP_5.0.1", 10),
        ("OMP_5.0.2", 11),
        ("OMP_5.1", 11),
        ("OMP_5.1.1", 13),
        ("OMP_5.2", 14),
    ],
    [
        ("GOMP_1.0", 4.2),
        ("GOMP_2.0", 4.4),
        ("GOMP_3.0", 4.7),
        ("GOMP_4.0", 4.9),
        ("GOMP_4.0.1", 5),
        ("GOMP_4.5", 6),
        ("GOMP_5.0", 9),
        ("GOMP_5.0.1", 11),
        ("GOMP_5.1", 12),
        ("GOMP_5.1.1", 13),
        ("GOMP_5.1.2", 14),
    ],
    [("OACC_2.0", 5), ("OACC_2.0.1", 6), ("OACC_2.5", 9), ("OACC_2.5.1", 10), ("OACC_2.6", 11)],
    [("GOACC_2.0", 5), ("GOACC_2.0.1", 6), ("GOACC_2.0.2", 11)],
    [
        ("GOMP_PLUGIN_1.0", 5),
        ("GOMP_PLUGIN_1.1", 6),
        ("GOMP_PLUGIN_1.2", 9),
        ("GOMP_PLUGIN_1.3", 10),
        ("GOMP_PLUGIN_1.4", 13),
    ],
]
# A few real entry points per CUDA library, exported next to the stub symbol.
CUDA_EXPORTS = {
    "libcudart": ["cudaGetDeviceCount", "cudaRuntimeGetVersion", "cudaGetLastError", "cudaMallocManaged"],
    "libcublas": ["cublasCreate_v2", "cublasGemmEx"],
    "libcublasLt": ["cublasLtCreate", "cublasLtMatmul"],
    "libcusparse": ["cusparseCreate", "cusparseSpMM"],
    "libnvJitLink": ["nvJitLinkCreate", "nvJitLinkAddData"],
}
BNB_EXPORTS = {
    "cuda": [
        "cquantize_blockwise_fp16",
        "cdequantize_blockwise_fp16",
        "cgemm_4bit_inference_naive_fp16",
        "cget_managed_ptr",
    ],
    "rocm": ["cquantize_blockwise_fp16", "cdequantize_blockwise_fp16"],
    "xpu": ["cdequantize_blockwise_fp16"],
    "cpu": ["cquantize_blockwise_cpu_fp32", "cdequantize_blockwise_cpu_fp32"],
}


def release(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def stub_symbol(library: str, node: str) -> str:
    """The symbol that stands for ``node`` of ``library`` (the same in bnb stubs and system stubs;
    bnbdoctor's libstdc++ stubs in tests/data/elf use the same names)."""
    base = re.sub(r"[^A-Za-z0-9]", "_", node)
    if node.startswith("GLIBC_"):
        return f"bnbdoctor_stub_{library.split('.so', maxsplit=1)[0]}_{base}"
    return f"bnbdoctor_stub_{base}"


def run(cmd: list[str], **kw: Any) -> str:
    try:
        return str(subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout)
    except FileNotFoundError:
        sys.exit(f"error: {cmd[0]} is not installed")
    except subprocess.CalledProcessError as exc:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{exc.stderr}")


# ---------------------------------------------------------------------------------------------
# ELF building
# ---------------------------------------------------------------------------------------------
def _asm(functions: list[str], refs: list[str]) -> str:
    lines = ["\t.text"]
    for name in functions:
        lines += [f"\t.globl {name}", f"\t.type {name}, %function", f"{name}:", "\tret"]
    if refs:
        lines += ["\t.data", "\t.p2align 3", "bnbdoctor_refs:"] + [f"\t.quad {r}" for r in refs]
    return "\n".join(lines) + "\n"


def build_elf(
    arch: str,
    out: Path,
    *,
    soname: str | None,
    nodes: Sequence[Node] = (),
    exports: Sequence[str] = (),
    refs: Sequence[str] = (),
    link: Sequence[Path] = (),
    runpath: str | None = None,
    work: Path,
) -> None:
    """Link a shared library. ``nodes``: (version node, parent node, symbols it defines); a library
    with nodes exports only their symbols, one without exports ``exports`` unversioned."""
    assert not (nodes and exports), "a library has either version nodes or unversioned exports"
    tools = ARCHES[arch]
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", soname or out.name)
    functions = list(exports) + [s for _, _, syms in nodes for s in syms]
    src, obj = work / f"{stem}.s", work / f"{stem}.o"
    src.write_text(_asm(functions, list(refs)))
    run(tools["as"] + ["-o", str(obj), str(src)])
    cmd = tools["ld"] + LD_FLAGS + (["-soname", soname] if soname else [])
    if nodes:
        script = work / f"{stem}.map"
        text = []
        for i, (node, parent, syms) in enumerate(nodes):
            body = "".join(f"    {s};\n" for s in syms)
            local = "  local:\n    *;\n" if i == 0 else ""
            text.append(f"{node} {{\n  global:\n{body}{local}}}{(' ' + parent) if parent else ''};\n")
        script.write_text("".join(text))
        cmd += ["--version-script", str(script)]
    if runpath:
        cmd += ["--enable-new-dtags", "-rpath", runpath]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = work / f"{stem}.out"
    run(cmd + ["-o", str(tmp), str(obj)] + [str(p) for p in link])
    run([tools["strip"], "--strip-unneeded", "-R", ".comment", str(tmp)])
    shutil.copyfile(tmp, out)
    out.chmod(0o755)


def chained(library: str, names: list[str]) -> list[Node]:
    """Version nodes that each inherit the previous one, as in glibc's and GCC's version maps."""
    nodes: list[Node] = []
    prev: str | None = None
    for name in names:
        nodes.append((name, prev, [stub_symbol(library, name)]))
        prev = name
    return nodes


def _elf_sections(data: bytes | bytearray) -> tuple[str, list[tuple[int, int, int, int]]]:
    """(endian, [(sh_type, sh_offset, sh_size, sh_link)]) of a 64-bit ELF."""
    assert data[:4] == b"\x7fELF" and data[4] == 2, "expects a 64-bit ELF"
    e = "<" if data[5] == 1 else ">"
    (shoff,) = struct.unpack_from(e + "Q", data, 0x28)
    shentsize, shnum = struct.unpack_from(e + "HH", data, 0x3A)
    out = []
    for i in range(shnum):
        at = shoff + i * shentsize
        (sh_type,) = struct.unpack_from(e + "I", data, at + 4)
        offset, size, link = struct.unpack_from(e + "QQI", data, at + 0x18)
        out.append((sh_type, offset, size, link))
    return e, out


def reorder_verneed(path: Path, order: dict[str, list[str]]) -> None:
    """Rewrite .gnu.version_r so files and their versions appear in ``order`` (GNU ld writes them
    in hash-table order). The loader checks them in this order and reports the first missing one,
    so this decides which version a failing dlopen names. Version indices (vna_other) are kept, so
    .gnu.version stays valid; the section keeps its size."""
    data = bytearray(path.read_bytes())
    e, sections = _elf_sections(data)
    verneed = next((s for s in sections if s[0] == 0x6FFFFFFE), None)
    if verneed is None:
        return
    _, offset, size, link = verneed
    strtab = sections[link][1]

    def cstr(at: int) -> str:
        end = data.index(b"\0", strtab + at)
        return data[strtab + at : end].decode()

    files: dict[str, tuple[tuple[int, int], dict[str, tuple[int, int, int, int]]]] = {}
    at = offset
    while True:
        version, cnt, file_off, aux, nxt = struct.unpack_from(e + "HHIII", data, at)
        entries: dict[str, tuple[int, int, int, int]] = {}
        a = at + aux
        for _ in range(cnt):
            vhash, flags, other, name, anext = struct.unpack_from(e + "IHHII", data, a)
            entries[cstr(name)] = (vhash, flags, other, name)
            a += anext
        files[cstr(file_off)] = ((version, file_off), entries)
        if not nxt:
            break
        at += nxt
    wanted = [f for f in order if f in files] + [f for f in files if f not in order]
    blob = bytearray()
    for i, name in enumerate(wanted):
        (version, file_off), entries = files[name]
        names = [v for v in order.get(name, []) if v in entries] + [v for v in entries if v not in order.get(name, [])]
        last = i == len(wanted) - 1
        blob += struct.pack(e + "HHIII", version, len(names), file_off, 16, 0 if last else 16 + 16 * len(names))
        for j, v in enumerate(names):
            vhash, flags, other, vname = entries[v]
            blob += struct.pack(e + "IHHII", vhash, flags, other, vname, 0 if j == len(names) - 1 else 16)
    assert len(blob) == size, (len(blob), size)
    data[offset : offset + size] = blob
    path.write_bytes(bytes(data))


# ---------------------------------------------------------------------------------------------
# The recorded wheels
# ---------------------------------------------------------------------------------------------
def wheel_library(version: str, platform_tag: str | None, file: str) -> tuple[dict[str, Any], dict[str, Any]]:
    wheels = json.loads(WHEELS.read_text(encoding="utf-8"))["wheels"]
    matches = [
        w for w in wheels if w["version"] == version and (platform_tag is None or w["platform_tag"] == platform_tag)
    ]
    if not matches:
        tags = sorted({f"{w['version']} {w['platform_tag']}" for w in wheels})
        sys.exit(f"error: no recorded wheel {version} {platform_tag or ''} (recorded: {', '.join(tags)})")
    for wheel in matches:
        for lib in wheel["libraries"]:
            if lib["file"] == file:
                return wheel, lib
    sys.exit(f"error: {file} is not in the recorded {version} wheel(s)")


def _aarch64_needs(needs: dict[str, list[str]]) -> dict[str, list[str]]:
    """The same needs on aarch64, whose glibc starts at 2.17 (so GLIBC_2.2.5 ... 2.16 become 2.17)."""
    out = {}
    for lib, versions in needs.items():
        mapped = []
        for version in versions:
            v = (
                f"GLIBC_{AARCH64_GLIBC_BASE}"
                if (version.startswith("GLIBC_") and release(version) < release(AARCH64_GLIBC_BASE))
                else version
            )
            if v not in mapped:
                mapped.append(v)
        out[lib] = mapped
    return out


def make_bnb(args: argparse.Namespace) -> None:
    wheel, lib = wheel_library(args.version, args.platform_tag, args.file)
    if not lib["file"].endswith(".so"):
        sys.exit("error: that is not a Linux library; use the `pe` command for DLLs")
    # 0.43+ (CMake builds) set SONAME to the file name; 0.41/0.42 have none (bnb_binaries.json).
    soname = lib.get("soname", lib["file"] if release(wheel["version"]) >= (0, 43) else None)
    needs = {k: list(v) for k, v in (lib.get("version_needs") or {}).items()}
    runpath = lib.get("runpath")
    if args.arch == "aarch64":
        needs = _aarch64_needs(needs)
        runpath = runpath.replace("x86_64-linux", "sbsa-linux") if runpath else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        deps = []
        for name in lib["needed"]:
            nodes: list[Node] = [(v, None, [stub_symbol(name, v)]) for v in needs.get(name, [])]
            dep = work / "deps" / name
            build_elf(args.arch, dep, soname=name, nodes=nodes, work=work)
            deps.append(dep)
        refs = [stub_symbol(name, v) for name, versions in needs.items() for v in versions]
        out = Path(args.output)
        build_elf(
            args.arch,
            out,
            soname=soname,
            exports=BNB_EXPORTS.get(lib.get("backend", "cuda"), []),
            refs=refs,
            link=deps,
            runpath=runpath,
            work=work,
        )
    reorder_verneed(out, needs)


# ---------------------------------------------------------------------------------------------
# System libraries
# ---------------------------------------------------------------------------------------------
def _gcc_nodes(table: list[tuple[str, float]], gcc: str) -> list[str]:
    wanted = release(gcc)
    return [node for node, first in table if release(str(first)) <= wanted]


def make_system(args: argparse.Namespace) -> None:
    name, arch = args.soname, args.arch
    if name in GLIBC_NODES:
        if not args.glibc:
            sys.exit(f"error: {name} needs --glibc")
        top = release(args.glibc)
        versions = [v for v in GLIBC_NODES[name] if release(v) <= top]
        if arch == "aarch64":
            versions = [AARCH64_GLIBC_BASE] + [v for v in versions if release(v) > release(AARCH64_GLIBC_BASE)]
        names = [f"GLIBC_{v}" for v in versions]
        if name == "libc.so.6" and top >= (2, 36):
            names.append("GLIBC_ABI_DT_RELR")
        nodes = [*chained(name, names), ("GLIBC_PRIVATE", None, [stub_symbol(name, "GLIBC_PRIVATE")])]
    elif name == "libgcc_s.so.1":
        nodes = chained(name, _gcc_nodes(LIBGCC_NODES, args.gcc or sys.exit("error: libgcc_s needs --gcc")))
    elif name == "libgomp.so.1":
        gcc = args.gcc or sys.exit("error: libgomp needs --gcc")
        nodes = [n for family in LIBGOMP_FAMILIES for n in chained(name, _gcc_nodes(family, gcc))]
    elif name == "libstdc++.so.6":
        if args.glibcxx is None or args.cxxabi is None:
            sys.exit("error: libstdc++.so.6 needs --glibcxx N --cxxabi M (GLIBCXX_3.4.N, CXXABI_1.3.M)")
        nodes = chained(name, ["GLIBCXX_3.4"] + [f"GLIBCXX_3.4.{i}" for i in range(1, args.glibcxx + 1)])
        nodes += chained(name, ["CXXABI_1.3"] + [f"CXXABI_1.3.{i}" for i in range(1, args.cxxabi + 1)])
        extras = ["CXXABI_TM_1"] + (["CXXABI_FLOAT128"] if arch == "x86_64" else [])
        nodes += [(n, None, [stub_symbol(name, n)]) for n in extras]
    elif re.match(r"lib(cudart|cublas|cublasLt|cusparse|nvJitLink)\.so\.\d+", name):
        # NVIDIA's libraries define one version node named after the SONAME.
        stem = name.split(".so")[0]
        nodes = [(name, None, [stub_symbol(name, name)] + CUDA_EXPORTS[stem])]
    elif re.match(r"lib(svml|irng|imf|intlc|sycl)\.so(\.\d+)*$", name):
        # Intel's oneAPI compiler runtime: the XPU library needs no symbol version from it, so one node named
        # after the SONAME (as for NVIDIA's libraries) only gives the file a defined symbol.
        nodes = [(name, None, [stub_symbol(name, name)])]
    else:
        sys.exit(f"error: no system stub recipe for {name}")
    with tempfile.TemporaryDirectory() as tmp:
        build_elf(arch, Path(args.output), soname=name, nodes=nodes, work=Path(tmp))


# ---------------------------------------------------------------------------------------------
# Windows DLLs (mingw-w64)
# ---------------------------------------------------------------------------------------------
# One real export per imported DLL, so each import has a name.
PE_IMPORT_SYMBOLS = {
    "cudart64": "cudaGetLastError",
    "cublas64": "cublasCreate_v2",
    "cublaslt64": "cublasLtCreate",
    "cusparse64": "cusparseCreate",
    "msvcp140": "_Thrd_yield",
    "vcruntime140": "memset",
    "vcruntime140_1": "__CxxFrameHandler4",
    "vcomp140": "omp_get_max_threads",
    "api-ms-win-crt-runtime-l1-1-0": "_initterm",
    "api-ms-win-crt-stdio-l1-1-0": "__stdio_common_vfprintf",
    "api-ms-win-crt-math-l1-1-0": "ceilf",
    "api-ms-win-crt-string-l1-1-0": "strncmp",
    "api-ms-win-crt-heap-l1-1-0": "malloc",
    "api-ms-win-crt-environment-l1-1-0": "getenv",
    "api-ms-win-crt-time-l1-1-0": "_time64",
    "kernel32": "GetProcAddress",
}
MINGW = "x86_64-w64-mingw32"


def _pe_symbol(dll: str) -> str:
    stem = dll.lower().rsplit(".", 1)[0]
    key = re.sub(r"_\d+$", "", stem) if stem not in PE_IMPORT_SYMBOLS else stem
    return PE_IMPORT_SYMBOLS.get(key, f"bnbdoctor_stub_{re.sub(r'[^A-Za-z0-9]', '_', stem)}")


def make_pe(args: argparse.Namespace) -> None:
    _wheel, lib = wheel_library(args.version, args.platform_tag or "win_amd64", args.file)
    if not lib["file"].endswith(".dll"):
        sys.exit("error: that is not a Windows DLL")
    if shutil.which(f"{MINGW}-gcc") is None:
        sys.exit(f"error: {MINGW}-gcc (gcc-mingw-w64-x86-64) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # GNU ld sorts import descriptors by input file name: numbered import libraries keep the
        # recorded import order.
        libs, symbols = [], []
        for i, dll in enumerate(lib["needed"]):
            symbol = _pe_symbol(dll)
            symbols.append(symbol)
            definition = work / f"{i:02d}.def"
            definition.write_text(f'LIBRARY "{dll}"\nEXPORTS\n  {symbol}\n')
            implib = work / f"{i:02d}-imports.a"
            run([f"{MINGW}-dlltool", "--input-def", str(definition), "--dllname", dll, "--output-lib", str(implib)])
            libs.append(str(implib))
        exports = BNB_EXPORTS.get(lib.get("backend", "cuda"), [])
        src = work / "stub.c"
        src.write_text(
            "int DllMainCRTStartup(void *h, unsigned reason, void *r) { (void)h; (void)reason; (void)r; return 1; }\n"
            + "".join(f"extern void {s}(void);\n" for s in dict.fromkeys(symbols))
            + "__declspec(dllexport) void *bnbdoctor_refs[] = {\n"
            + "".join(f"  (void *){s},\n" for s in dict.fromkeys(symbols))
            + "};\n"
            + "".join(f"__declspec(dllexport) void {s}(void) {{}}\n" for s in exports)
        )
        # The export directory records the output's file name: link under the real name.
        built = work / "out" / lib["file"]
        built.parent.mkdir()
        run(
            [
                f"{MINGW}-gcc",
                "-shared",
                "-nostdlib",
                "-fno-builtin",
                "-Os",
                "-s",
                "-fno-asynchronous-unwind-tables",
                "-Wl,--no-insert-timestamp",
                "-Wl,--disable-auto-image-base",
                "-Wl,--image-base,0x180000000",
                "-Wl,-e,DllMainCRTStartup",
                "-o",
                str(built),
                str(src),
                *libs,
            ]
        )
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, out)
        out.chmod(0o755)
    imports = [
        line.split(":", 1)[1].strip()
        for line in run([f"{MINGW}-objdump", "-p", str(out)]).splitlines()
        if "DLL Name:" in line
    ]
    if imports != lib["needed"]:
        sys.exit(f"error: import order {imports} differs from the recorded {lib['needed']}")


# ---------------------------------------------------------------------------------------------
# The loader cache of a fixture root
# ---------------------------------------------------------------------------------------------
TRUSTED_DIRS = {
    ("debian", "x86_64"): [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
    ],
    ("debian", "aarch64"): ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib"],
    ("rhel", "x86_64"): ["/lib64", "/usr/lib64"],
}
GLIBC_SONAMES = {
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libresolv.so.2",
    "libutil.so.1",
    "libnsl.so.1",
    "libanl.so.1",
}


class FixtureRoot:
    """Paths of a recorded machine, resolved inside its root/ (absolute links re-rooted)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def resolve(self, path: str) -> Path | None:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            local = self.root.joinpath(*done, part)
            if local.is_symlink():
                hops += 1
                if hops > 40:
                    return None
                target = os.readlink(local)
                parts = [p for p in target.split("/") if p not in ("", ".")] + parts
                if target.startswith("/"):
                    done = []
                continue
            if not local.exists():
                return None
            done.append(part)
        return self.root.joinpath(*done)

    def conf_dirs(self, path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
        local = self.resolve(path)
        if local is None or not local.is_file() or depth > 4:
            return []
        dirs = []
        for raw in local.read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line or line.startswith("hwcap"):
                continue
            if line.startswith("include"):
                pattern = line.split(None, 1)[1]
                if not pattern.startswith("/"):
                    pattern = "/etc/" + pattern
                folder, _, mask = pattern.rpartition("/")
                folder_local = self.resolve(folder)
                for entry in sorted(os.listdir(folder_local)) if folder_local and folder_local.is_dir() else []:
                    if fnmatch.fnmatch(entry, mask):
                        dirs += self.conf_dirs(f"{folder}/{entry}", depth + 1)
            else:
                dirs.append(line.rstrip("/") or "/")
        return dirs


def _soname(path: Path) -> tuple[str | None, str | None]:
    """(SONAME, machine) of an ELF shared library, or (None, None) for anything else."""
    with open(path, "rb") as handle:
        if handle.read(4) != b"\x7fELF":
            return None, None
    out = run(["readelf", "-hdW", str(path)], env=dict(os.environ, LC_ALL="C"))
    if not re.search(r"Type:\s+DYN", out):
        return None, None
    machine = re.search(r"Machine:\s+(.*)", out)
    soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", out)
    return (soname.group(1) if soname else None), (machine.group(1) if machine else None)


def _libcmp_key(name: str) -> list[tuple[int, object]]:
    """glibc's _dl_cache_libcmp: digit runs compare as numbers, other characters as bytes."""
    key: list[tuple[int, object]] = []
    for digits, other in re.findall(r"(\d+)|(\D)", name):
        key.append((1, int(digits)) if digits else (0, ord(other)))
    return key


def cache_entries(root: Path, arch: str, layout: str) -> list[tuple[str, str]]:
    """(key, path) entries as ldconfig would write them, in the cache's (descending) order."""
    fixture = FixtureRoot(root)
    seen_dirs: set[Path] = set()
    entries: dict[str, str] = {}
    for folder in fixture.conf_dirs() + TRUSTED_DIRS[(layout, arch)]:
        local = fixture.resolve(folder)
        if local is None or not local.is_dir() or local in seen_dirs:
            continue
        seen_dirs.add(local)
        for name in sorted(os.listdir(local)):
            if not name.startswith(("lib", "ld-")) or ".so" not in name:
                continue
            target = fixture.resolve(f"{folder}/{name}")
            if target is None or not target.is_file():
                continue
            soname, machine = _soname(target)
            if machine is None or ARCHES[arch]["machine"] not in machine:
                continue
            is_link = (local / name).is_symlink()
            key = name if is_link and name.endswith(".so") else (soname or name)
            if key not in entries:
                entries[key] = f"{folder}/{key}"
    return sorted(entries.items(), key=lambda kv: _libcmp_key(kv[0]), reverse=True)


def _osversion(text: str | None) -> int:
    if not text:
        return 0
    major, minor, patch = (*release(text), 0, 0, 0)[:3]
    return (0 << 24) | (major << 16) | (minor << 8) | patch  # OS 0 = Linux


def write_ld_so_cache(
    out: Path, entries: list[tuple[str, str]], arch: str, generator: str | None, osabi: str | None
) -> None:
    """glibc-ld.so.cache1.1, as ldconfig >= 2.33 writes it (little-endian, generator extension)."""
    header, entry_size = 48, 24
    strings = bytearray()
    offsets: dict[str, int] = {}
    table_start = header + entry_size * len(entries)
    for text in [s for kv in entries for s in kv]:
        if text not in offsets:
            offsets[text] = table_start + len(strings)
            strings += text.encode() + b"\0"
    body = bytearray()
    for key, path in entries:
        osversion = _osversion(osabi) if key in GLIBC_SONAMES else 0
        body += struct.pack("<iIIIQ", ARCHES[arch]["cache_flags"], offsets[key], offsets[path], osversion, 0)
    data = bytearray(header) + body + strings
    ext_offset = 0
    if generator:
        while len(data) % 4:
            data += b"\0"
        ext_offset = len(data)
        gen = generator.encode()
        data += struct.pack("<II", 0xEAA42174, 1) + struct.pack("<IIII", 0, 0, ext_offset + 8 + 16, len(gen)) + gen
    struct.pack_into("<20sIIB3xI12x", data, 0, b"glibc-ld.so.cache1.1", len(entries), len(strings), 2, ext_offset)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(bytes(data))


def ldconfig_p_text(entries: list[tuple[str, str]], arch: str, generator: str | None, osabi: str | None) -> str:
    lines = [f"{len(entries)} libs found in cache `/etc/ld.so.cache'"]
    for key, path in entries:
        abi = ARCHES[arch]["abi"]
        if key in GLIBC_SONAMES and osabi:
            abi += f", OS ABI: Linux {osabi}"
        lines.append(f"\t{key} ({abi}) => {path}")
    if generator:
        lines.append(f"Cache generated by: {generator}")
    return "\n".join(lines) + "\n"


def make_ldcache(args: argparse.Namespace) -> None:
    root = Path(args.root)
    entries = cache_entries(root, args.arch, args.layout)
    if args.manifest:
        manifest = Path(args.manifest)
        data = json.loads(manifest.read_text(encoding="utf-8"))
        record = {
            "argv": ["ldconfig", "-p"],
            "returncode": 0,
            "stdout": ldconfig_p_text(entries, args.arch, args.generator, args.osabi),
            "stderr": "",
        }
        commands = list(data.get("commands") or [])
        at = next((i for i, c in enumerate(commands) if c.get("argv") == ["ldconfig", "-p"]), None)
        if at is None:
            commands.append(record)
        else:
            commands[at] = record
        data["commands"] = commands
        manifest.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    else:
        write_ld_so_cache(root / "etc" / "ld.so.cache", entries, args.arch, args.generator, args.osabi)


# ---------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    bnb = sub.add_parser("bnb", help="a libbitsandbytes_*.so stub of a recorded wheel's library")
    bnb.add_argument("--version", required=True, help="bitsandbytes version, e.g. 0.50.2")
    bnb.add_argument("--platform-tag", help="wheel tag (default: the Linux wheel of that version)")
    bnb.add_argument("--file", required=True, help="library file name, e.g. libbitsandbytes_cuda121.so")
    bnb.add_argument(
        "--arch",
        choices=sorted(ARCHES),
        default="x86_64",
        help="aarch64 maps GLIBC_2.2.5..2.16 to 2.17 and x86_64-linux RUNPATHs to sbsa-linux",
    )
    bnb.add_argument("-o", "--output", required=True)
    bnb.set_defaults(func=make_bnb)

    system = sub.add_parser("system", help="a system or CUDA library stub")
    system.add_argument("--soname", required=True)
    system.add_argument("--glibc", help="glibc release for libc/libm/libpthread/libdl/librt, e.g. 2.35")
    system.add_argument("--gcc", help="GCC release for libgcc_s/libgomp, e.g. 12")
    system.add_argument("--glibcxx", type=int, help="libstdc++: last GLIBCXX_3.4.N")
    system.add_argument("--cxxabi", type=int, help="libstdc++: last CXXABI_1.3.M")
    system.add_argument("--arch", choices=sorted(ARCHES), default="x86_64")
    system.add_argument("-o", "--output", required=True)
    system.set_defaults(func=make_system)

    pe = sub.add_parser("pe", help="a libbitsandbytes_*.dll stub of a recorded Windows wheel's library")
    pe.add_argument("--version", required=True)
    pe.add_argument("--platform-tag", default="win_amd64")
    pe.add_argument("--file", required=True)
    pe.add_argument("-o", "--output", required=True)
    pe.set_defaults(func=make_pe)

    cache = sub.add_parser("ldcache", help="/etc/ld.so.cache (or `ldconfig -p` into a manifest) for a fixture root")
    cache.add_argument("--root", required=True, help="the fixture's root/ folder")
    cache.add_argument("--arch", choices=sorted(ARCHES), default="x86_64")
    cache.add_argument(
        "--layout", choices=["debian", "rhel"], default="debian", help="which trusted folders ldconfig adds"
    )
    cache.add_argument("--generator", help="the 'Cache generated by' string (glibc >= 2.33)")
    cache.add_argument("--osabi", help="kernel version in glibc's ABI note, e.g. 3.2.0")
    cache.add_argument(
        "--manifest", help="record `ldconfig -p` output in this machine.json instead of writing the cache file"
    )
    cache.set_defaults(func=make_ldcache)

    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
