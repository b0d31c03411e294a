"""The dynamic loader's messages: glibc's ``ld.so``, Windows' ``LoadLibrary``, macOS' ``dlopen``.

Fills ``native`` and ``load`` evidence when a message is about bitsandbytes' library (it names
the library, or follows a bitsandbytes load message within a few lines): the libraries that
could not be opened and the symbol versions the system's glibc or C++ runtime lacks. A missing
library is classified by name (CUDA, ROCm, the driver's libcuda, a system runtime). The wording
of each loader also votes for the operating system.
"""

from __future__ import annotations

import re

from bnbdoctor.facts import AbiNeed
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import Q
from bnbdoctor.logs.state import MAX_TEXT, LogState, keep, keep_new, put
from bnbdoctor.logs.tokens import basename, token_before

#: The C entry points of bitsandbytes' GPU libraries that its CPU library lacks (``cget_col_row_stats``,
#: ``cadam32bit_grad_fp32``, ``cigemmlt_turing_32``, ``cquantize_blockwise_fp16_nf4``): one of them undefined is the
#: CPU library, also where the message lost the library's name (an issue title).
BNB_GPU_ENTRY_POINT = re.compile(
    r"c(?:get_col_row_stats|adam32bit|adam_8bit|momentum32bit|rmsprop32bit|lion32bit|igemmlt|double_row_col_quant"
    r"|dequantize_blockwise|quantize_blockwise|gemm_4bit|percentile_clipping)\w{0,60}$"
)
#: A HIP/CUDA kernel launcher stub (``_Z36__device_stub__kOptimizer32bit1State...``): defined by the kernel's
#: translation unit, so undefined only when the library was built without that kernel (issue #1550).
DEVICE_STUB = re.compile(r"_Z\d+__device_stub__")

COLLECTOR = Collector("loader")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises

#: How many lines after a bitsandbytes load message a missing library is still attributed to it.
BNB_CONTEXT_LINES = 6

_CUDA_LIBS = (
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libcusparse",
    "libnvJitLink",
    "libcurand",
    "libnvrtc",
    "libcufft",
    "libcudnn",
    "libnccl",
    "libcusolver",
)
_ROCM_LIBS = ("libhip", "libamdhip", "librocblas", "librocrand", "librocsparse", "libroctx", "libhsa", "librocm")
_OTHER_RUNTIMES = ("libgomp", "libomp", "libiomp", "libstdc++", "libgcc_s")
#: Intel's oneAPI runtime, which the XPU library links (the SYCL runtime's SONAME changes with its major).
_ONEAPI_LIBS = (
    "libsycl",
    "libsvml",
    "libimf",
    "libintlc",
    "libirng",
    "libur_loader",
    "libze_loader",
    "libumf",
    "libtbb",
)
_ONEAPI_SONAME = re.compile(
    r"(?P<path>(?:/[\w.+-]{1,200}){0,30}/(?P<name>(?P<stem>lib(?:sycl|ur_loader)\.so)\.\d{1,3}))(?![\w.])"
)


def _library_kind(name: str) -> str:
    """What a shared library is, by its file name: bitsandbytes, driver, cuda, rocm, cxx_runtime, system, other."""
    if name.startswith("libbitsandbytes"):
        return "bitsandbytes"
    if name.startswith("libcuda.so"):
        return "driver"
    if name.startswith(_CUDA_LIBS) or name.startswith(("cudart64", "cublas64", "cusparse64")):
        return "cuda"
    if name.startswith(_ROCM_LIBS):
        return "rocm"
    if name.startswith(("libstdc++", "libgcc_s")):
        return "cxx_runtime"
    if name.startswith(_ONEAPI_LIBS):
        return "oneapi"
    if name.startswith(("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so")):
        return "system"
    return "other"  # libgomp (the OpenMP runtime of the CPU build), ...


def _in_bnb_context(state: LogState, number: int, line: str) -> bool:
    return "bitsandbytes" in line or state.since(state.recent.bnb_message, number) <= BNB_CONTEXT_LINES


def _missing_library(state: LogState, name: str, number: int, line: str) -> None:
    kind = _library_kind(name)
    if kind == "bitsandbytes":
        state.bnb.library_absent(name)
        state.match(S.BNB_CPU_LIBRARY_NOT_FOUND if "_cpu" in name else S.BNB_LIBRARY_NOT_FOUND, number, line)
        state.bnb.seen = True
        return
    if kind == "driver":
        state.match(S.LIBCUDA_NOT_FOUND, number, line)
        return
    signature = {
        "cuda": S.CUDART_NOT_FOUND if name.startswith(("libcudart", "cudart64")) else S.CUDA_LIBRARY_NOT_FOUND,
        "rocm": S.ROCM_LIBRARY_NOT_FOUND,
        "cxx_runtime": S.SYSTEM_LIBRARY_NOT_FOUND,
        "oneapi": S.ONEAPI_LIBRARY_NOT_FOUND,
    }.get(kind)
    if signature is None and name.startswith(_OTHER_RUNTIMES):
        signature = S.SYSTEM_LIBRARY_NOT_FOUND
    if signature is None or not _in_bnb_context(state, number, line):
        if signature is not None:
            state.match(signature, number, line)
        return
    state.match(signature, number, line)
    put(state.load.missing_deps, name, (kind, line.strip()[:MAX_TEXT]))
    keep(state.load.errors, line.strip())
    if kind == "oneapi" and _other_majors(state, name):
        state.match(S.SYCL_RUNTIME_OTHER_MAJOR, number, line)


def _other_majors(state: LogState, name: str) -> list[str]:
    """Paths the log shows for the same library under another SONAME (libsycl.so.9 for libsycl.so.8)."""
    stem = name.rsplit(".so.", 1)[0] + ".so"
    return [path for soname, path in state.load.present.items() if soname != name and soname.startswith(stem + ".")]


@collects(("libsycl.so.", "libur_loader.so."), _ONEAPI_SONAME.pattern)
def oneapi_soname_present(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A path to a versioned SYCL runtime (``ls``, ``ldd`` or ``find`` output): the SONAME this machine provides."""
    for found in _ONEAPI_SONAME.finditer(line):
        if found.group("path").startswith("/"):
            put(state.load.present, found.group("name"), found.group("path"))
    missing = [n for n, (kind, _) in state.load.missing_deps.items() if kind == "oneapi" and _other_majors(state, n)]
    if missing:
        state.match(S.SYCL_RUNTIME_OTHER_MAJOR, number, line)


@collects(
    "not found",
    rf"version\s*{Q}?(?P<symver>(?P<ns>GLIBCXX|CXXABI|GLIBC|GCC)_[\d.]{{1,20}}){Q}?\s*not found"
    r"(?:\s*\(required by\s*(?P<requirer>[^)\s]{1,1000}))?",
)
def version_not_found(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    namespace, symver = m.group("ns"), m.group("symver")
    provider = token_before(line, m.start())
    library = basename(provider) or ("libc.so.6" if namespace == "GLIBC" else "libstdc++.so.6")
    requirer = (m.group("requirer") or "").rstrip(")")
    signature = {"CXXABI": S.CXXABI_VERSION_NOT_FOUND, "GLIBC": S.GLIBC_VERSION_NOT_FOUND}.get(
        namespace, S.GLIBCXX_VERSION_NOT_FOUND
    )
    state.match(signature, number, line)
    if namespace == "GLIBC":
        state.platform.glibc_seen = True
    state.platform.os_votes["linux"] += 2
    requirer_name = basename(requirer)
    # a library in bitsandbytes' own folder is its library, also when the paste cut its name (``…/libbitsandb``)
    in_bnb_folder = "/bitsandbytes/" in requirer.replace("\\", "/")
    if (
        requirer_name.startswith("libbitsandbytes")
        or in_bnb_folder
        or (not requirer and _in_bnb_context(state, number, line))
    ):
        if requirer_name.startswith("libbitsandbytes") and "." in requirer_name:
            state.bnb.library_exists(requirer_name)
            state.bnb_path(requirer)
            keep(state.bnb.selected, (requirer, number))
        provider_path = provider if "/" in provider else None
        need = put(state.load.abi, library, AbiNeed(library=library, provider=provider_path, source="log"))
        for target in (need.required, need.missing):
            keep_new(target, symver)
        keep(state.load.errors, line.strip())


@collects("cannot open shared object file", r":\s*cannot open shared object file")
def cannot_open(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    token = token_before(line, m.start())
    name = basename(token)
    if not name or "." not in name:
        return
    state.platform.os_votes["linux"] += 2  # the wording of glibc's dynamic loader
    if name.startswith("libbitsandbytes"):
        state.bnb_path(token)
    _missing_library(state, name, number, line)


@collects(("CUDA SETUP ERROR", "SETUP ERROR"), r"Missing dependency:\s*(?P<lib>[\w+.-]{1,200})")
def missing_dependency(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.recent.bnb_message = number
    state.bnb.set_era("exact")
    _missing_library(state, basename(m.group("lib")), number, line)


@collects(
    "undefined symbol",
    r"undefined symbol:\s*(?P<sym>[\w@.]{1,200})(?:,\s*version\s*(?P<ver>[\w.]{1,100}))?",
    r"undefined symbol:\s*$",  # the name wrapped onto the next line: the library is still named
)
def undefined_symbol(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    symbol = m.groupdict().get("sym") or ""
    library = basename(token_before(line, m.start()))
    if symbol.startswith("__nvJitLink"):
        state.match(S.NVJITLINK_UNDEFINED_SYMBOL, number, line)
    elif symbol.startswith("__fatbinwrap"):
        state.match(S.FATBINWRAP_UNDEFINED_SYMBOL, number, line)
    elif symbol.startswith("cudaRuntimeGetVersion"):
        state.match(S.CUDA_RUNTIME_SYMBOL_MISSING, number, line)
    elif "libbitsandbytes_cpu" in line or (not library.startswith("lib") and BNB_GPU_ENTRY_POINT.match(symbol)):
        state.match(S.CPU_LIBRARY_MISSING_SYMBOL, number, line)
        state.bnb.library_exists(library if library.startswith("libbitsandbytes") else "libbitsandbytes_cpu.so")
    elif DEVICE_STUB.match(symbol) and library.startswith("libbitsandbytes_"):
        # a HIP library built without some kernel instantiations: the file exists and its needs resolved
        state.match(S.ROCM_DEVICE_STUB_UNDEFINED, number, line)
        state.bnb.library_exists(library)
        path = token_before(line, m.start())
        if "/" in path:
            state.bnb_path(path)
        keep(state.load.errors, line[max(line.find(path), 0) :].strip())
        state.load.undefined_symbol = symbol
    state.platform.os_votes["linux"] += 1


recognises(S.CPU_LIBRARY_MISSING_SYMBOL, "' not found", r"function '(?P<func>c\w{1,80})' not found")


@collects("Could not find module", r"Could not find module\s+'(?P<path>[^']{1,1000})'")
def could_not_find_module(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    path = m.group("path")
    name = basename(path)
    state.platform.os_votes["windows"] += 3
    if not name.startswith("libbitsandbytes"):
        return
    state.bnb_path(path)
    keep(state.bnb.selected, (path, number))
    if "_cpu" in name:
        state.bnb.library_absent(name)
        state.match(S.BNB_CPU_LIBRARY_NOT_FOUND, number, line)
    else:
        state.match(S.WINDOWS_DLL_NOT_LOADED, number, line)
        keep(state.load.errors, line.strip())


@collects(
    ("WinError 193", "Win32", "not designed to run on Windows"),
    r"\[WinError 193\]|not a valid Win32 application|is either not designed to run on Windows|不是有效的 Win32",
)
def winerror_193(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.os_votes["windows"] += 3
    state.match(S.WINDOWS_LINUX_LIBRARY, number, line)


@collects("WindowsPath' is not iterable", r"argument of type 'WindowsPath' is not iterable")
def windowspath_not_iterable(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.os_votes["windows"] += 3
    state.match(S.WINDOWS_PATH_NOT_ITERABLE, number, line)


@collects(
    ("mach-o", "dlopen("),
    r"not a mach-o file|mach-o file, but is an incompatible architecture|incompatible architecture",
    # macOS' dlopen failing on one of bitsandbytes' Linux libraries (.so; Mac builds are .dylib), the reason cut
    r"dlopen\(\[?[^,\]\s]{0,1000}libbitsandbytes_\w{1,80}\.so\b",
)
def macho(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "mach-o" not in line and "libbitsandbytes" not in line and "dlopen" not in line:
        return
    state.platform.os_votes["macos"] += 5
    need = re.search(r"need '?(arm64e?|x86_64)", line)
    if need:
        state.platform.arch = "aarch64" if need.group(1).startswith("arm64") else "x86_64"
    state.match(S.MACOS_NOT_MACHO, number, line)
