"""bitsandbytes' own messages about its native library, from the legacy ``CUDA SETUP:`` loader
(<= 0.43.0) to 0.50's ``No compatible CUDA binary found``.

Fills the ``bitsandbytes`` evidence: the library it chose or could not find, which release
family (era) the wording belongs to, where the package is, the ``BNB_CUDA_VERSION`` override it
reports; and, from its CUDA-setup lines, torch's CUDA version and the highest compute capability
it saw. Each message that names bitsandbytes' library also opens a short window in which a
missing library is attributed to it (:data:`~bnbdoctor.logs.collectors.loader.BNB_CONTEXT_LINES`).
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.shipped import legacy_libraries
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import LIB, Q
from bnbdoctor.logs.state import MAX_TEXT, LogState, keep
from bnbdoctor.logs.tokens import BNB_LIB, basename, cuda_from_digits, heads_before

COLLECTOR = Collector("bitsandbytes loader")
#: What ends a path read backwards from a file name (``\\S`` in the expressions these loops replace).
_SPACE = " \t\n\r\f\v"
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises


#: CUDA majors no bitsandbytes or torch build ever had, and ROCm's: bitsandbytes' CUDA specs hold torch.version.hip
#: on a ROCm torch (``cuda_version_string='61'`` is HIP 6.1).
_HIP_MAJORS = range(5, 8)


def _cuda_version_seen(state: LogState, cuda: str | None, number: int, line: str) -> None:
    if cuda and cuda[0].isdigit() and int(cuda.split(".")[0]) < 11:
        state.match(S.CUDA_OLDER_THAN_11, number, line)


def _specs_version(state: LogState, digits: str, number: int, line: str) -> bool:
    """The CUDA version of bitsandbytes' specs line: torch's CUDA, or on ROCm the HIP version taken for one (then
    True: the line's "compute capability" is an AMD gfx number, not CUDA's)."""
    version = cuda_from_digits(digits)
    if version and int(version.split(".")[0]) in _HIP_MAJORS:
        state.match(S.ROCM_HIP_VERSION_READ_AS_CUDA, number, line)
        state.torch.hip = state.torch.hip or version
        return True
    state.torch.cuda = version
    _cuda_version_seen(state, version, number, line)
    return False


def _selected(state: LogState, path: str, number: int, line: str) -> None:
    state.bnb_path(path)
    keep(state.bnb.selected, (path, number))
    state.recent.bnb_message = number
    state.match(S.BNB_LIBRARY_SELECTED, number, line)
    if "libbitsandbytes_cpu" in path:
        state.match(S.CPU_LIBRARY_SELECTED, number, line)


def _library_cuda(state: LogState, name: str, number: int, line: str) -> None:
    """The CUDA version a library's name is built for (``libbitsandbytes_cuda102.so``: 10.2)."""
    lib = BNB_LIB.search(name)
    if lib and lib.group("backend") == "cuda":
        _cuda_version_seen(state, cuda_from_digits(lib.group("digits")), number, line)


@collects(
    ("bitsandbytes", "binary not found", "No compatible"),
    r"Could not find the bitsandbytes (?P<backend>\w{1,10}) binary at\s*(?:\w{0,10}Path\(\s*)?"
    r"(?:'(?P<qpath>[^']{1,1000})'|(?P<path>\S{1,1000}))",
    r"Configured (?P<backend>\w{1,10}) binary not found at\s*(?P<path>\S{1,1000})",
    r"No compatible (?P<backend>\w{1,10}) binary found at\s*(?P<path>\S{1,1000})",
)
def bnb_binary_not_found(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    path = (m.group("qpath") if "qpath" in m.re.groupindex else None) or m.group("path") or ""
    path = path.rstrip("')\".,")
    name = basename(path)
    state.bnb.set_era("fallback" if line.count("Could not find") else "nearest" if "No compatible" in line else "exact")
    state.recent.bnb_message = number
    if name.startswith("libbitsandbytes"):
        state.bnb_path(path)
        state.bnb.library_absent(name)
    state.match(S.BNB_CPU_LIBRARY_NOT_FOUND if "_cpu" in name else S.BNB_LIBRARY_NOT_FOUND, number, line)
    _library_cuda(state, name, number, line)


@collects(
    ("version not found", "Library not found", "compile library for specific version"),
    rf"Required library version not found:\s*(?P<file>{LIB})",
    # 0.35-0.37's legacy setup, where no library is built for the CUDA version it detected
    rf"TODO: compile library for specific version:\s*(?P<file2>{LIB})",
    rf"Library not found:\s*(?P<path>\S{{0,1000}}?{LIB})",
)
def required_library_not_found(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if m.groupdict().get("file") or m.groupdict().get("file2"):
        name = m.groupdict().get("file") or m.group("file2")
        state.bnb.set_era("legacy")
    else:
        name = basename(m.group("path"))
        state.bnb_path(m.group("path"))
        state.bnb.set_era("fallback")
    state.bnb.library_absent(name)
    state.recent.bnb_message = number
    state.match(S.BNB_CPU_LIBRARY_NOT_FOUND if "_cpu" in name else S.BNB_LIBRARY_NOT_FOUND, number, line)
    _library_cuda(state, name, number, line)


@collects("Loading binary", rf"Loading binary\s{{1,8}}(?P<path>.{{0,1000}}?{LIB})")
def loading_binary(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.set_era("legacy")
    _selected(state, m.group("path").strip(), number, line)


@collects("libbitsandbytes_", rf"^\s*bin\s+(?P<path>\S.{{0,1000}}?{LIB})\s*$")
def bin_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.set_era("legacy")
    _selected(state, m.group("path").strip(), number, line)


recognises(
    S.CPU_LIBRARY_SELECTED,
    ("libbitsandbytes_cpu", "CPU-only"),
    r"Defaulting to libbitsandbytes_cpu|Proceeding to load CPU-only library",
    bnb=True,
)


@collects(
    ("without GPU support", "only available on CUDA"),
    r"compiled without GPU support|8-bit optimizer is not available on your device",
    records=S.COMPILED_WITHOUT_GPU_SUPPORT,
    bnb=True,
)
def compiled_without_gpu(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    for head in heads_before(line, "cextension.py", _SPACE, 513):
        if head.endswith(("bitsandbytes/", "bitsandbytes\\")):
            state.bnb_path(head + "cextension.py")
            break


# The legacy CUDA setup's scan of the folders environment variables name, as a traceback shows it (0.37-0.41 let a
# PermissionError on one of them through): the frame, which comes just before the PermissionError line.
recognises(
    S.LEGACY_SETUP_PERMISSION_ERROR,
    "remove_non_existent_dirs",
    r"cuda_setup[\\/]main\.py\S{0,2},? line \d{1,5}, in remove_non_existent_dirs",
    bnb=True,
)


# bitsandbytes 0.38-0.41's cuda_setup/main.py line that raises "'NoneType' object has no attribute 'split'" when
# torch.version.cuda is None (a CPU or ROCm torch), as a traceback shows it above the bare AttributeError.
@collects("cuda.split(", r"map\(int, torch\.version\.cuda\.split\(")
def torch_cuda_split_source_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match(S.TORCH_CUDA_NONE, number, line)


@collects("has no attribute", r"'NoneType' object has no attribute '(?P<attr>\w{1,80})'")
def none_attribute(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    attribute = m.group("attr")
    if attribute == "split":
        if "bitsandbytes" in line or "native library" in line or "cuda_specs" in line:
            state.match(S.TORCH_CUDA_NONE, number, line)
            state.torch.cpu = True
    elif attribute.startswith("c"):  # cquantize_..., cint8_vector_quant, cuDeviceGetCount
        state.bnb.seen = True
        state.match(S.NATIVE_LIBRARY_UNAVAILABLE, number, line)
        if attribute == "cadam32bit_grad_fp32":
            # the legacy import-time probe (0.37-0.41 cextension.py: `lib.cadam32bit_grad_fp32`), whose
            # AttributeError is printed with "compiled without GPU support": also alone, its warning cut
            state.match(S.COMPILED_WITHOUT_GPU_SUPPORT, number, line)


recognises(
    S.NATIVE_LIBRARY_UNAVAILABLE,
    ("bitsandbytes native library", "CPU-only"),
    r"Attempted to use bitsandbytes native library functionality"
    r"|not available in CPU-only version of bitsandbytes",
    bnb=True,
    era="exact",
)


@collects("Something unexpected", r"CUDA SETUP: Something unexpected happened\. Please compile from source")
def compile_instructions(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """The legacy loader's compile instructions (0.37-0.42): ``Something unexpected happened. Please compile from
    source:``, the clone, ``cd bitsandbytes``, ``CUDA_VERSION=124`` and ``python setup.py install``."""
    state.recent.compile_instructions = number


@collects("CUDA_VERSION=", r"^\s*CUDA_VERSION=(?P<cuda>\d{2,4})(?P<make>\s+make\s+cuda\w{1,20})?\s*$")
def compile_instructions_cuda(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """The instructions' ``CUDA_VERSION=...``: the loader printed them for a library it did not find, or after one
    failed to load. Where the log shows no library chosen and no legacy wheel ever shipped that CUDA version's
    library (``CUDA_VERSION=124``), it is the missing library, whatever lines the paste cut above."""
    if not 0 < state.since(state.recent.compile_instructions, number) <= 4 or state.bnb.selected:
        return
    name = f"libbitsandbytes_cuda{m.group('cuda')}{'_nocublaslt' if 'nomatmul' in (m.group('make') or '') else ''}.so"
    if name in legacy_libraries():
        return
    state.bnb.set_era("legacy")
    state.bnb.library_absent(name)
    state.match(S.BNB_LIBRARY_NOT_FOUND, number, line)
    _library_cuda(state, name, number, line)


recognises(
    S.CUDA_SETUP_FAILED,
    ("CUDA",),
    r"CUDA Setup failed despite (?:GPU|CUDA) being available|CUDA SETUP: Setup Failed!|CUDA detection failed"
    r"|Something unexpected happened\. Please compile from source"
    # the same RuntimeError's next sentence, where a paste (an issue title) kept only that
    r"|Inspect the output of the command and see if you can locate CUDA libraries"
    r"|The main issue seems to be that the main CUDA (?:runtime )?library was not detected",
    bnb=True,
)


@collects(
    ("bitsandbytes",),
    r"(?:Could not load bitsandbytes native library|bitsandbytes library load error):\s*(?P<err>.{0,2000})",
    bnb=True,
)
def load_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.recent.bnb_message = number
    state.bnb.set_era("exact" if "library load error" in line else "fallback")
    state.match(S.NATIVE_LOAD_ERROR, number, line)
    error = m.group("err").strip()
    if error:
        keep(state.load.errors, error)


recognises(
    S.BNB_NOT_COMPILED,
    ("bitsandbytes", "str2optimizer"),
    r"Forgot to compile the bitsandbytes library|name 'str2optimizer(?:32|8)bit\w{0,20}' is not defined",
    bnb=True,
)


@collects(
    ("BNB_",),
    r"(?P<var>BNB_(?:CUDA|ROCM)_VERSION)=(?P<value>\d{1,6}) environment variable detected",
    r"Loading CUDA version: (?P<var>BNB_CUDA_VERSION)=(?P<value>\d{1,6})",
    r"(?P<var>BNB_(?:CUDA|ROCM)_VERSION)=(?P<value>'[^']{0,20}'|\S{0,20}): value must be digits only",
    r"(?P<var>BNB_CUDA_VERSION)=(?P<value>\d{0,6}) detected for ROCm",
    r"Manual override via (?P<var>BNB_CUDA_VERSION) env variable detected",
    bnb=True,
)
def override(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    groups = m.groupdict()
    variable = groups["var"]
    value = groups.get("value")
    if value is not None:
        state.env[variable] = value.strip("'\"")
    state.match(S.BNB_CUDA_VERSION_OVERRIDE, number, line)
    if "digits only" in line or "detected for ROCm" in line:
        state.bnb.override_rejected = line.strip()[:MAX_TEXT]
        if "digits only" in line:
            state.bnb.set_era("nearest")  # only 0.50+ validates the value
    loading = re.search(r"loading (libbitsandbytes_\w{1,80}\.(?:so|dll|dylib))", line)
    if loading:
        keep(state.bnb.selected, (loading.group(1), number))
    if "environment variable detected" in line:
        state.bnb.set_era("fallback")
    elif "Loading CUDA version" in line or "Manual override" in line:
        state.bnb.set_era("legacy")


@collects(
    "not found in any environmental path",
    r"(?:libcudart\.so|CUDA runtime files) not found in any environmental path",
    bnb=True,
)
def legacy_libcudart(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "libcudart.so" in line:
        state.bnb.legacy = True
        state.bnb.set_era("legacy")
    state.match(S.LEGACY_LIBCUDART_NOT_FOUND, number, line)


recognises(S.LEGACY_PATH_DID_NOT_CONTAIN, "did not contain", r"did not contain\s*\[?'?(?:libcudart|cudart64)", bnb=True)


@collects(
    "non-existent",
    r"listed in your path (?:were|was|is) found to be non-existent"
    r"|directory listed in your path is found to be non-existent",
    records=S.NONEXISTENT_PATHS,
    bnb=True,
)
def nonexistent(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "WindowsPath(" in line:
        state.platform.os_votes["windows"] += 3
    elif "PosixPath(" in line:
        state.platform.os_votes["linux"] += 1


@collects(
    "Found duplicate",
    r"Found duplicate (?:\[[^\]]{0,300}\] files|CUDA runtime files)",
    records=S.DUPLICATE_CUDA_RUNTIMES,
    bnb=True,
)
def duplicates(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    torch_default = re.search(r"PyTorch default (?:CUDA runtime|libcudart\.so), which is (\d{1,2}\.\d)", line)
    if torch_default:
        state.torch.cuda = torch_default.group(1)


recognises(
    S.CUDA_OLDER_THAN_11,
    ("CUDA version lower", "CUDA 10.0 not supported"),
    r"CUDA version lower than 11 (?:are|is) currently not supported",
    # the legacy loader's compile instructions for a CUDA 10.0 runtime (0.37-0.41)
    r"CUDA SETUP: CUDA 10\.0 not supported\. Please use a different CUDA version",
    bnb=True,
    era="legacy",
)


@collects(
    "CUDA_VERSION=",
    r"PyTorch settings found: CUDA_VERSION=(?P<cuda>\d{2,4}), Highest Compute Capability: "
    r"\(?(?P<major>\d{1,2})(?:\.|,\s*)(?P<minor>\d{1,2})",
    records=S.TORCH_CUDA_SETTINGS,
    bnb=True,
)
def torch_settings(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if not _specs_version(state, m.group("cuda"), number, line):
        state.gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, highest=True)
    state.bnb.set_era("legacy" if "(" not in line.rsplit("Capability:", maxsplit=1)[-1] else "fallback")


@collects(
    "CUDASpecs",
    r"CUDASpecs\(highest_compute_capability=\((?P<major>\d{1,2}), (?P<minor>\d{1,2})\), "
    r"cuda_version_string='(?P<cuda>\d{2,4})'",
    bnb=True,
)
def cuda_specs(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.set_era("fallback")
    state.match(S.TORCH_CUDA_SETTINGS, number, line)
    if not _specs_version(state, m.group("cuda"), number, line):
        state.gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, highest=True)


@collects(
    "among GPUs",
    r"Highest compute capability among GPUs detected: (?P<major>\d{1,2})\.(?P<minor>\d{1,2})",
    bnb=True,
)
def highest_cc(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.set_era("legacy")
    state.match(S.COMPUTE_CAPABILITY, number, line)
    state.gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, highest=True)


@collects("CUDA version", r"Detected CUDA version (?P<cuda>\d{2,4})", bnb=True)
def detected_cuda(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.set_era("legacy")
    state.bnb.detected_cuda = cuda_from_digits(m.group("cuda"))
    state.match(S.DETECTED_CUDA_VERSION, number, line)
    _cuda_version_seen(state, state.bnb.detected_cuda, number, line)


recognises(S.CUDA_RUNTIME_PATH, "CUDA runtime", r"CUDA runtime path found: (?P<path>.{1,1000})", bnb=True, era="legacy")


@collects(
    ("cuda_setup", "CUDA SETUP: ", "bitsandbytes"),
    r"bitsandbytes[/\\]cuda_setup[/\\]"
    r"|CUDA SETUP: (?:Loading binary|Detected CUDA version|CUDA runtime path found|Required library version"
    r"|Highest compute capability|PyTorch settings found: CUDA_VERSION=\d+, Highest Compute Capability: \d)"
    r"|Welcome to bitsandbytes\. For bug reports",
    evidence=40,
    bnb=True,
)
def legacy_marker(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.legacy = True
    state.bnb.set_era("legacy")
    if "cuda_setup" in m.group(0):
        for head in heads_before(line, "cuda_setup", _SPACE, 513):
            if head.endswith(("bitsandbytes/", "bitsandbytes\\")):
                state.bnb.location = head[:-1].lstrip("'\"(")
                state.python.add_site_packages(state.bnb.location + "/")
                break
    if state.count(S.BNB_LEGACY_LOADER) < 3:
        state.match(S.BNB_LEGACY_LOADER, number, line)


# The legacy CUDA setup's error printer (check_cuda_result, 0.35-0.37) decoding the NULL string cuGetErrorString
# leaves for a code the driver cannot name; the rule asks for bitsandbytes in the log (the message alone is Python's).
recognises(
    S.LEGACY_SETUP_NONETYPE_DECODE,
    "decode",
    rf"{Q}NoneType{Q} object has no attribute {Q}decode{Q}",
)


# bitsandbytes 0.38.0 renamed CUDA_RUNTIME_LIB to CUDA_RUNTIME_LIBS but kept four uses of the old name (#300).
recognises(
    S.LEGACY_SETUP_NAMEERROR_CUDA_RUNTIME_LIB,
    "CUDA_RUNTIME_LIB",
    rf"name {Q}CUDA_RUNTIME_LIB{Q} is not defined",
    bnb=True,
    era="legacy",
)
