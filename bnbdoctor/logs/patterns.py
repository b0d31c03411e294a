"""The message families as compiled regular expressions with named groups.

Each :class:`Pattern` has ``keys``: literal substrings of which at least one must occur in a line
before its expressions are tried. One combined expression of every key (:data:`PREFILTER`) skips
the vast majority of lines of a long log in a single C-level scan, so the cost per line is
constant. Expressions match the *structure* of a message (the fixed words bitsandbytes, the
loader, torch or transformers print, with versions, library names and paths as groups), never one
user's text, and are written to run in linear time on a line of bounded length: no nested
quantifiers, bounded repeats, and a fixed word to anchor every search. Where a message puts the
interesting token *before* a fixed phrase (``<library>: cannot open shared object file``), the
expression matches the phrase and the extractor reads the token before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_Q = r"[`'‘’\"]"  # the quotes the loader and Python put around names


@dataclass(frozen=True)
class Pattern:
    name: str
    keys: tuple[str, ...]
    regexes: tuple[re.Pattern[str], ...]

    def search(self, line: str) -> re.Match[str] | None:
        for regex in self.regexes:
            match = regex.search(line)
            if match:
                return match
        return None


def _p(name: str, keys: tuple[str, ...] | str, *regexes: str, flags: int = 0) -> Pattern:
    if isinstance(keys, str):
        keys = (keys,)
    return Pattern(name, keys, tuple(re.compile(r, flags) for r in regexes))


_LIB = r"libbitsandbytes_\w{1,80}\.(?:so|dll|dylib)"
_VER = r"\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|post|rc|a|b)\d*)?(?:\+[\w.]+)?"

PATTERNS: tuple[Pattern, ...] = (
    # --- the dynamic loader ------------------------------------------------------------------
    _p("version_not_found", "not found",
       rf"version\s*{_Q}?(?P<symver>(?P<ns>GLIBCXX|CXXABI|GLIBC|GCC)_[\d.]{{1,20}}){_Q}?\s*not found"
       r"(?:\s*\(required by\s*(?P<requirer>[^)\s]{1,1000}))?"),
    _p("cannot_open", "cannot open shared object file", r":\s*cannot open shared object file"),
    _p("missing_dependency", ("CUDA SETUP ERROR", "SETUP ERROR"), r"Missing dependency:\s*(?P<lib>[\w+.-]{1,200})"),
    _p("undefined_symbol", "undefined symbol",
       r"undefined symbol:\s*(?P<sym>[\w@.]{1,200})(?:,\s*version\s*(?P<ver>[\w.]{1,100}))?"),
    _p("function_not_found", "' not found", r"function '(?P<func>c\w{1,80})' not found"),
    _p("could_not_find_module", "Could not find module", r"Could not find module\s+'(?P<path>[^']{1,1000})'"),
    _p("winerror_193", ("WinError 193", "Win32", "not designed to run on Windows"),
       r"\[WinError 193\]|not a valid Win32 application|is either not designed to run on Windows|不是有效的 Win32"),
    _p("windowspath_not_iterable", "WindowsPath' is not iterable", r"argument of type 'WindowsPath' is not iterable"),
    _p("macho", ("mach-o",),
       r"not a mach-o file|mach-o file, but is an incompatible architecture|incompatible architecture"),
    # --- bitsandbytes' own loader messages ---------------------------------------------------
    _p("bnb_binary_not_found", ("bitsandbytes", "binary not found", "No compatible"),
       r"Could not find the bitsandbytes (?P<backend>\w{1,10}) binary at\s*(?:\w{0,10}Path\(\s*)?"
       r"(?:'(?P<qpath>[^']{1,1000})'|(?P<path>\S{1,1000}))",
       r"Configured (?P<backend>\w{1,10}) binary not found at\s*(?P<path>\S{1,1000})",
       r"No compatible (?P<backend>\w{1,10}) binary found at\s*(?P<path>\S{1,1000})"),
    _p("required_library_not_found", ("version not found", "Library not found"),
       rf"Required library version not found:\s*(?P<file>{_LIB})",
       rf"Library not found:\s*(?P<path>\S{{0,1000}}?{_LIB})"),
    _p("loading_binary", "Loading binary", rf"Loading binary\s+(?P<path>.{{0,1000}}?{_LIB})"),
    _p("bin_line", "libbitsandbytes_", rf"^\s*bin\s+(?P<path>\S.{{0,1000}}?{_LIB})\s*$"),
    _p("cpu_defaulting", ("libbitsandbytes_cpu", "CPU-only"),
       r"Defaulting to libbitsandbytes_cpu|Proceeding to load CPU-only library"),
    _p("compiled_without_gpu", ("without GPU support", "only available on CUDA"),
       r"compiled without GPU support|8-bit optimizer is not available on your device"),
    _p("none_attribute", "has no attribute", r"'NoneType' object has no attribute '(?P<attr>\w{1,80})'"),
    _p("native_unavailable", ("bitsandbytes native library", "CPU-only"),
       r"Attempted to use bitsandbytes native library functionality|not available in CPU-only version of bitsandbytes"),
    _p("cuda_setup_failed", ("CUDA",),
       r"CUDA Setup failed despite (?:GPU|CUDA) being available|CUDA SETUP: Setup Failed!|CUDA detection failed"
       r"|Something unexpected happened\. Please compile from source"
       r"|The main issue seems to be that the main CUDA (?:runtime )?library was not detected"),
    _p("load_error", ("bitsandbytes",),
       r"(?:Could not load bitsandbytes native library|bitsandbytes library load error):\s*(?P<err>.{0,2000})"),
    _p("not_compiled", ("bitsandbytes", "str2optimizer"),
       r"Forgot to compile the bitsandbytes library|name 'str2optimizer(?:32|8)bit\w{0,20}' is not defined"),
    _p("override", ("BNB_",),
       r"(?P<var>BNB_(?:CUDA|ROCM)_VERSION)=(?P<value>\d{1,6}) environment variable detected",
       r"Loading CUDA version: (?P<var>BNB_CUDA_VERSION)=(?P<value>\d{1,6})",
       r"(?P<var>BNB_(?:CUDA|ROCM)_VERSION)=(?P<value>'[^']{0,20}'|\S{0,20}): value must be digits only",
       r"(?P<var>BNB_CUDA_VERSION)=(?P<value>\d{0,6}) detected for ROCm",
       r"Manual override via (?P<var>BNB_CUDA_VERSION) env variable detected"),
    _p("legacy_libcudart", "not found in any environmental path",
       r"(?:libcudart\.so|CUDA runtime files) not found in any environmental path"),
    _p("did_not_contain", "did not contain", r"did not contain\s*\[?'?(?:libcudart|cudart64)"),
    _p("nonexistent", "non-existent",
       r"listed in your path (?:were|was|is) found to be non-existent|directory listed in your path is found to be non-existent"),
    _p("duplicates", "Found duplicate", r"Found duplicate (?:\[[^\]]{0,300}\] files|CUDA runtime files)"),
    _p("cuda_lt_11", "CUDA version lower", r"CUDA version lower than 11 (?:are|is) currently not supported"),
    _p("torch_settings", "CUDA_VERSION=",
       r"PyTorch settings found: CUDA_VERSION=(?P<cuda>\d{2,4}), Highest Compute Capability: \(?(?P<major>\d{1,2})(?:\.|,\s*)(?P<minor>\d{1,2})"),
    _p("cuda_specs", "CUDASpecs",
       r"CUDASpecs\(highest_compute_capability=\((?P<major>\d{1,2}), (?P<minor>\d{1,2})\), cuda_version_string='(?P<cuda>\d{2,4})'"),
    _p("highest_cc", "among GPUs",
       r"Highest compute capability among GPUs detected: (?P<major>\d{1,2})\.(?P<minor>\d{1,2})"),
    _p("detected_cuda", "CUDA version", r"Detected CUDA version (?P<cuda>\d{2,4})"),
    _p("runtime_path", "CUDA runtime", r"CUDA runtime path found: (?P<path>.{1,1000})"),
    _p("legacy_marker", ("cuda_setup", "CUDA SETUP: ", "bitsandbytes"),
       r"bitsandbytes[/\\]cuda_setup[/\\]"
       r"|CUDA SETUP: (?:Loading binary|Detected CUDA version|CUDA runtime path found|Required library version"
       r"|Highest compute capability|PyTorch settings found: CUDA_VERSION=\d+, Highest Compute Capability: \d)"
       r"|Welcome to bitsandbytes\. For bug reports"),
    # --- driver, GPU and kernels -------------------------------------------------------------
    _p("no_gpu_detected", ("GPU detected", "libcuda.so not found", "CUDA is not available"),
       r"No GPU detected!|WARNING! libcuda\.so not found!|(?:Py)?[Tt]orch says CUDA is not available"),
    _p("no_nvidia_driver", "Found no NVIDIA driver", r"Found no NVIDIA driver on your system"),
    _p("torch_not_compiled", ("CUDA enabled", "bitsandbytes_cudaNone"),
       r"Torch not compiled with CUDA enabled|libbitsandbytes_cudaNone"),
    _p("cuda_error", ("Error", "CUDA error", "CUDA exception"),
       r"Error (?P<what>[^\n]{1,200}?) at line (?P<line>\d{1,6}) in file (?P<file>\S{0,500}?ops\.(?:cu|hip|cpp))",
       r"CUDA error: (?P<what>[A-Za-z][^.`\n]{1,200})",
       r"CUDA exception! Error code: (?P<what>.{1,200})",
       r"Error (?P<code>803): (?P<what>.{1,200})",
       r"(?P<what>hipErrorNoBinaryForGpu)"),
    _p("driver_too_old", "NVIDIA driver on your system",
       r"The NVIDIA driver on your system is too old \(found version (?P<version>\d{3,6})\)"),
    _p("int8_unsupported", ("GPU does not support", "igemmlt"),
       r"Your GPU does not support Int8 Matmul|int igemmlt\(.{0,400}?Assertion"),
    _p("slow_int8", "8-bit matmul", r"Only slow 8-bit matmul is supported for your GPU"),
    _p("cuda_setup_nameerror", "cuda_setup", r"name 'cuda_setup' is not defined"),
    _p("cublaslt", ("into an error", "cuBLAS API"),
       r"cublasLt ran into an error|cuBLAS API failed with status (?P<status>\d{1,3})"),
    _p("nvidia_smi_driver", "Driver Version",
       r"Driver Version:\s*(?P<driver>[\d.]{3,20})\s*(?:\|\s*)?CUDA Version:\s*(?P<cuda>\d{1,2}\.\d{1,2})"),
    # --- imports -----------------------------------------------------------------------------
    _p("triton_ops", ("triton.o",), r"No module named '?triton\.o(?:ps)?|from triton\.ops\b|import triton\.ops\b"),
    _p("no_module", "No module", r"No module named '?(?P<module>[\w.]{1,100})'?"),
    _p("cannot_import_name", ("cannot import", "not import"),
       r"cannot import name '(?P<name>\w{1,100})' from '(?P<module>bitsandbytes[\w.]{0,100})'",
       r"can(?:'t| ?not) import '?(?P<name>sync_gpu)\b"),
    _p("transformers_importerror", ("bitsandbytes",),
       r"Using `?bitsandbytes`? (?:\d-bit )?quantization requires|requires the latest version of bitsandbytes"),
    # --- placement ---------------------------------------------------------------------------
    _p("dispatch", "dispatched", r"Some modules are dispatched on the CPU or the disk"),
    _p("old_offload_option", "8bit_fp32", r"load_in_8bit_fp32_cpu_offload"),
    _p("unexpected_kwarg", "unexpected keyword",
       r"unexpected keyword argument\s*'?(?P<kwarg>\w{0,100})'?"),
    _p("cuda_oom", ("CUDA out of memory", "OutOfMemoryError"),
       r"CUDA out of memory\.?(?: Tried to allocate (?P<alloc>[\d.]{1,10} ?[GMK]i?B))?(?:.{0,200}?GPU (?P<gpu>\d{1,3}))?",
       r"OutOfMemoryError"),
    # --- workflows ---------------------------------------------------------------------------
    _p("peft_merge", "lora module",
       r"(?P<un>[Uu]n)?[Mm]erge lora module to (?P<bits>\d{1,2})-bit linear may get different generations"),
    _p("peft_legacy_merge", "Cannot merge",
       r"Cannot merge LORA layers when the model is loaded in (?P<bits>\d{1,2})-bit mode"),
    _p("tensors_devices", "tensors to be on the same device",
       r"Expected all tensors to be on the same device, but (?:found at least two devices, )?(?P<a>[\w:]{1,20})"
       r"(?: and (?P<b>[\w:]{1,20}))?"),
    _p("replica_error", "replica", r"Caught \w{1,40} in replica (?P<replica>\d{1,3}) on device (?P<device>\d{1,3})"),
    _p("device_guard", "tensors need to be on the same GPU",
       r"All input tensors need to be on the same GPU"),
    # --- facts -------------------------------------------------------------------------------
    _p("bnb_banner", "bitsandbytes v", r"=+\s*bitsandbytes v(?P<version>\d+\.\d+\.\d+[\w.]{0,20})\s*=+"),
    _p("bnb_version", "bitsandbytes",
       r"\bbitsandbytes(?:==|-)(?P<version>\d+\.\d+\.\d+(?:\.?(?:dev|post|rc)\d*)?)",
       r"\bbitsandbytes`?\s{0,40}(?:version\s*)?[:=]?\s{0,4}v?(?P<version>\d+\.\d+\.\d+(?:\.?(?:dev|post|rc)\d*)?)\b",
       r"Requirement already satisfied: bitsandbytes in \S{1,500} \((?P<version>\d+\.\d+\.\d+[\w.]{0,10})\)"),
    _p("package_version", ("torch", "transformers", "accelerate", "peft", "triton", "PyTorch"),
       rf"\b(?P<package>transformers|accelerate|peft|triton|pytorch-triton-rocm|scipy|trl|diffusers|torch)"
       rf"(?:==|-|`?\s{{0,40}}(?:version\s*)?[:=]?\s{{0,4}}v?)(?P<version>{_VER})(?![\w.])",
       rf"PyTorch(?: version)?(?: \(GPU\?\))?:\s*(?P<version>{_VER})",
       rf"Requirement already satisfied: (?P<package>transformers|accelerate|peft|triton|scipy|torch) in \S{{1,500}}"
       rf" \((?P<version>{_VER})\)"),
    _p("torch_version_cuda", "torch.version.cuda",
       r"torch\.version\.cuda\s*(?:=|==|:|is)?\s*'?(?P<cuda>None|\d{1,2}\.\d{1,2})"),
    _p("diagnostics_runtime", ("CUDA:", "HIP:"), r"^\s{0,8}(?P<kind>CUDA|HIP|XPU): (?P<version>\d[\w.]{0,20}|N/A|None)\s*$"),
    _p("python_version", ("Python", "python3", "Python3"),
       r"\bPython(?: version)?:?\s(?P<version>3\.\d{1,2}\.\d{1,2})",
       r"python(?P<version>3\.\d{1,2})[/\\]",
       r"[/\\]Python3(?P<minor>\d{1,2})[/\\]"),
    _p("platform_line", ("Platform:", "platform:"),
       r"[Pp]latform:\s*(?P<os>Linux|Windows|macOS|Darwin)-(?P<rest>\S{1,200})"),
    _p("libc_line", ("libc:", "glibc"), r"libc:\s*glibc-(?P<version>\d\.\d{1,3})|with-glibc(?P<version2>\d\.\d{1,3})"),
    _p("wsl", ("WSL", "/usr/lib/wsl"), r"microsoft-standard-WSL2|\bWSL2?\b|/usr/lib/wsl/lib"),
    _p("jetson", ("tegra", "Jetson", "JetPack"),
       r"nv_tegra_release|\bL4T\b|JetPack|Jetson|\btegra\b|\bOrin\b|\bXavier\b"),
    _p("device_map", "device_map", r"device_map\s*=\s*['\"]?(?P<device_map>auto|balanced_low_0|balanced|sequential|\{)"),
    _p("quantization", ("4bit", "8bit"),
       r"load_in_(?P<bits>4|8)bit|bnb_(?P<bits2>4)bit|quantizer_bnb_(?P<bits3>4|8)bit|Linear(?P<bits4>4)bit"
       r"|Linear(?P<bits5>8)bitLt|matmul_(?P<bits6>4)bit|BitsAndBytesConfig|Params4bit|Int8Params"),
    _p("model_id", "from_pretrained", r"from_pretrained\(\s*(?:pretrained_model_name_or_path\s*=\s*)?['\"](?P<model>[\w.-]{1,100}/[\w.-]{1,200})['\"]"),
    _p("notebook", ("/content/", "<ipython-input", "ipykernel"),
       r"ipykernel|google\.colab|/content/|<ipython-input|Cell In\[|localhost:8080|jupyter"),
    _p("gpu_name", ("NVIDIA", "Tesla", "GeForce", "GPU"),
       r"(?:NVIDIA|Tesla|GeForce|Quadro|TITAN|GPU \d{1,2}:)"),
    _p("windows_hint", (":\\", "WinError", "WindowsPath", ".dll"),
       r"(?<![\w/])[A-Za-z]:\\{1,2}[\w$ .()~-]|\[WinError \d{1,5}\]|WindowsPath\(|\.dll\b|\.exe\b"),
    _p("linux_hint", ("/",),
       r"(?:^|[\s('\"=:])/(?:usr|home|opt|lib|lib64|root|tmp|mnt|content|data\w{0,10}|srv|scratch|anaconda\w{0,3}"
       r"|miniconda\w{0,3}|conda|workspace|notebooks|kaggle|etc|var|nfs|gpfs)/|PosixPath\(|dist-packages|\.so(?:\.\d+)*\b"),
    _p("macos_hint", ("/Users/", "/opt/homebrew", ".dylib", "/Library/"),
       r"(?:^|[\s('\"])/Users/|/opt/homebrew/|-darwin|\.dylib\b|/Library/Frameworks/"),
)

#: Short substrings searched in whole blocks of bytes (``bytes.find`` runs at C speed): every key
#: contains one of them, or is its own anchor. A line is looked at only when it holds an anchor.
_ANCHOR_WORDS = ("bitsandbytes", "CUDA", "cuda", "not found", "annot", "not import", "Error", "error", "GPU",
                 "NVIDIA", "device", "symbol", "Win", "bit", "lora", "No module", "Could not find", "dispatched",
                 "replica", "tensors", "Jet", "ython", "latform", "/", ":\\", "torch", "PyTorch", "Version", "triton",
                 "libc")


def _anchor(key: str) -> bytes:
    return next((word for word in _ANCHOR_WORDS if word in key), key).encode("utf-8")


#: anchor (bytes) -> the indices in PATTERNS of the patterns whose keys contain it.
ANCHORS: dict[bytes, tuple[int, ...]] = {}
for _index, _pattern in enumerate(PATTERNS):
    for _key in _pattern.keys:
        _found = ANCHORS.setdefault(_anchor(_key), ())
        if _index not in _found:
            ANCHORS[_anchor(_key)] = _found + (_index,)

#: A Python exception line: ``ValueError: ...``, ``torch.OutOfMemoryError: ...``, ``[rank1]: OSError: ...``.
EXCEPTION = re.compile(
    r"^(?:\[rank\d{1,4}\]:\s*)?(?:[A-Za-z_][\w]{0,60}\.){0,6}(?P<type>[A-Z]\w{0,60}(?:Error|Exception|Exit|Interrupt|Warning))"
    r"(?::\s?(?P<message>.*))?$")
