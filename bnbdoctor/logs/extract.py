"""From log lines to Facts: the same records the probes fill, as far as a log shows them.

:class:`LogExtractor` is fed cleaned lines one at a time (:func:`bnbdoctor.logs.clean.read_lines`).
For each line that holds a key of some :class:`~bnbdoctor.logs.patterns.Pattern`, the pattern's
handler (``_on_<name>``) records a :class:`~bnbdoctor.facts.LogMatch` and accumulates evidence.
:meth:`LogExtractor.facts` then builds :class:`~bnbdoctor.facts.Facts`:

- ``platform`` when the log shows the operating system (paths, ``WinError``, ``Platform:`` lines);
- ``gpu`` when it names GPUs or compute capabilities (or torch says there is no driver);
- ``python`` (torch, bitsandbytes, other packages) when it shows any of them;
- ``native`` and ``load`` when it shows which library bitsandbytes chose and what the loader said;
- ``env`` for ``BNB_CUDA_VERSION`` / ``BNB_ROCM_VERSION`` when bitsandbytes reports them;
- ``log``: every matched line with its number, the versions seen and the last exception.

A fact the log does not show stays unknown: a section is left out, a version is None, and
``TorchFacts``/``BnbFacts`` say ``installed=False`` with ``error`` explaining that the log does
not show the package (``bnbdoctor explain`` never lets a rule conclude from that absence).
Memory is bounded: at most :data:`MAX_MATCHES_PER_SIGNATURE` lines are kept per signature.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import BinaryIO

from bnbdoctor.facts import (
    AbiNeed,
    BnbFacts,
    Facts,
    GpuDevice,
    GpuFacts,
    LoadCheck,
    LogFacts,
    LogMatch,
    NativeFacts,
    PlatformFacts,
    ProbeRun,
    PythonFacts,
    ResolvedDependency,
    SelectedLibrary,
    TorchFacts,
)
from bnbdoctor.knowledge.signatures import SIGNATURES
from bnbdoctor.logs.clean import ReadStats, decode_line, read_blocks
from bnbdoctor.logs.gpus import compute_capability, find_gpus
from bnbdoctor.logs.patterns import ANCHORS, EXCEPTION, PATTERNS

#: Lines kept per signature in facts.log.matches (the count of all of them is in the report source).
MAX_MATCHES_PER_SIGNATURE = 20
#: Characters of a matched line kept in a LogMatch.
MAX_TEXT = 300
#: Evidence-only patterns stop running after this many hits (the answer will not change).
EVIDENCE_PATTERNS = {"windows_hint": 40, "linux_hint": 40, "macos_hint": 40, "python_version": 20,
                     "notebook": 5, "wsl": 5, "jetson": 5, "gpu_name": 200, "legacy_marker": 40,
                     "device_map": 20, "quantization": 40, "libc_line": 5, "platform_line": 5, "model_id": 5}
#: Evidence-only patterns stop after this many blocks of the log (the machine is described early).
EVIDENCE_BLOCKS = 4
#: How many lines after a bitsandbytes load message a missing library is still attributed to it.
_BNB_CONTEXT_LINES = 6

_LINUX_SEARCH = ["loaded by torch before bitsandbytes", "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "default directories"]
_WINDOWS_SEARCH = ["loaded by torch before bitsandbytes", "the DLL's own folder", "System32",
                   "os.add_dll_directory (torch)"]
_CUDA_LIBS = ("libcudart", "libcublas", "libcublasLt", "libcusparse", "libnvJitLink", "libcurand", "libnvrtc",
              "libcufft", "libcudnn", "libnccl", "libcusolver")
_ROCM_LIBS = ("libhip", "libamdhip", "librocblas", "librocrand", "librocsparse", "libroctx", "libhsa", "librocm")
_OTHER_RUNTIMES = ("libgomp", "libomp", "libiomp", "libstdc++", "libgcc_s")
_BNB_LIB = re.compile(r"libbitsandbytes_(?P<backend>cuda|rocm|hip|xpu|cpu|mps)(?P<digits>\d*)\w*\.(?:so|dll|dylib)")
_ARCH = re.compile(r"\b(x86_64|aarch64|arm64|AMD64|amd64|sbsa)\b")


def _basename(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1]


def _dirname(path: str) -> str:
    parts = re.split(r"([\\/])", path)
    return "".join(parts[:-2]) if len(parts) > 2 else ""


def _cuda_from_digits(digits: str) -> str | None:
    """bitsandbytes' version tags: "117" -> "11.7", "121" -> "12.1", "102" -> "10.2", "92" -> "9.2"."""
    if not digits.isdigit() or len(digits) < 2:
        return None
    if len(digits) == 2:
        return f"{digits[0]}.{digits[1]}"
    return f"{digits[:2]}.{digits[2:]}" if digits[0] == "1" else f"{digits[0]}.{digits[1:]}"


def _cuda_from_torch_version(version: str) -> tuple[str | None, str | None, bool]:
    """``2.1.0+cu121`` -> ("12.1", None, False); ``+rocm6.0`` -> (None, "6.0", False); ``+cpu`` -> (None, None, True)."""
    local = version.partition("+")[2].lower()
    match = re.match(r"cu(\d{2,3})", local)
    if match:
        return _cuda_from_digits(match.group(1)), None, False
    match = re.match(r"rocm(\d+(?:\.\d+)*)", local)
    if match:
        return None, match.group(1), False
    return None, None, local == "cpu"


def _token_before(line: str, end: int) -> str:
    """The whitespace-separated token just before ``end``, without quotes or a trailing colon."""
    head = line[:end].rstrip().rstrip(":").rstrip()
    token = head.split()[-1] if head.split() else ""
    return token.strip("'\"`‘’()*[],")


def _library_kind(name: str) -> str:
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
    if name.startswith(("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so")):
        return "system"
    return "other"  # libgomp (the OpenMP runtime of the CPU build), ...


class LogExtractor:
    """Feed lines with :meth:`feed`; read the result with :meth:`facts`."""

    def __init__(self, label: str = "log") -> None:
        self.label = label
        self.lines = 0
        self.matches: list[LogMatch] = []
        self.counts: dict[str, int] = {}
        self.first_line: dict[str, int] = {}
        self.versions: dict[str, str] = {}
        self.version_lines: dict[str, int] = {}
        self.exception: str | None = None
        self._retired: set[str] = set()
        self._hits: dict[str, int] = {}
        self._blocks = 0
        self._handlers: dict[str, Callable[[re.Match[str], int, str], None]] = {
            p.name: getattr(self, f"_on_{p.name}") for p in PATTERNS}
        # platform
        self.os_votes = {"windows": 0, "linux": 0, "macos": 0}
        self.os_explicit: str | None = None
        self.arch: str | None = None
        self.kernel = ""
        self.os_version: str | None = None
        self.libc_version: str | None = None
        self.glibc_seen = False
        self.wsl = False
        self.jetson: str | None = None
        self.notebook = False
        # gpu
        self.gpus: dict[str, tuple[int | None, tuple[int, int] | None, int]] = {}
        self.highest_cc: tuple[tuple[int, int], int] | None = None
        self.driver_version: str | None = None
        self.driver_cuda: str | None = None
        self.no_driver: str | None = None
        # python, torch, bitsandbytes
        self.python_version: str | None = None
        self.python_version_strong = False
        self.site_packages: list[str] = []
        self.torch_cuda: str | None = None
        self.torch_hip: str | None = None
        self.torch_cpu = False
        self.torch_location: str | None = None
        self.torch_missing = False
        self.bnb_seen = False
        self.bnb_missing = False
        self.bnb_banner_version: str | None = None
        self.bnb_location: str | None = None
        self.bnb_legacy = False
        self.bnb_era: str | None = None  # legacy | fallback | exact | nearest (the message families seen)
        self.bnb_existing: list[str] = []
        self.bnb_absent: list[str] = []
        self.bnb_selected: list[tuple[str, int]] = []  # (path, line) of libraries bnb chose to load
        self.detected_cuda: str | None = None
        self.bnb_context_line = -100
        # loader errors attributed to bitsandbytes' library
        self.missing_deps: dict[str, tuple[str, str]] = {}  # name -> (kind, message)
        self.abi: dict[str, AbiNeed] = {}
        self.load_errors: list[str] = []
        self.env: dict[str, str] = {}
        self.override_rejected: str | None = None
        # state carried between lines
        self._pytorch_line = -100
        self._pip_show_bnb = -100
        self._kwarg_pending = -100
        self._dispatch_line = -100

    # ------------------------------------------------------------------ feeding
    def feed_block(self, first: int, block: bytes) -> None:
        """Look at the lines of a block (whole lines, ``\\n``-separated) that hold an anchor.

        Each anchor is searched with ``bytes.find`` over the whole block; only the lines it occurs in
        are decoded and matched, so a long log costs a few C-level scans per block."""
        self._blocks += 1
        if self._blocks > EVIDENCE_BLOCKS:
            self._retired.update(EVIDENCE_PATTERNS)  # the machine's facts are known by now
        candidates: dict[int, set[int]] = {}
        find, rfind = block.find, block.rfind
        retired = self._retired_index
        for anchor, indices in ANCHORS.items():
            live = [i for i in indices if i not in retired]
            if not live:
                continue
            budget = self._budget(live)
            pos, seen = find(anchor), 0
            while pos != -1:
                start = rfind(b"\n", 0, pos) + 1
                found = candidates.get(start)
                if found is None:
                    candidates[start] = set(live)
                else:
                    found.update(live)
                seen += 1
                end = find(b"\n", pos)
                if end == -1 or seen >= budget:
                    break
                pos = find(anchor, end + 1)
        self._last_exception(first, block)
        number, previous = first, 0
        for start in sorted(candidates):
            number += block.count(b"\n", previous, start)
            previous = start
            end = find(b"\n", start)
            self._feed_line(number, decode_line(block[start:] if end == -1 else block[start:end]), candidates[start])
        self.lines = max(self.lines, first + block.count(b"\n"))

    @property
    def _retired_index(self) -> set[int]:
        return {i for i, p in enumerate(PATTERNS) if p.name in self._retired}

    def _budget(self, indices: list[int]) -> int:
        """How many more lines an anchor may bring: unlimited unless all its patterns are evidence-only."""
        remaining = 0
        for index in indices:
            name = PATTERNS[index].name
            limit = EVIDENCE_PATTERNS.get(name)
            if limit is None:
                return 1 << 62
            remaining = max(remaining, limit - self._hits.get(name, 0))
        return 8 * remaining + 32

    def _last_exception(self, first: int, block: bytes) -> None:
        """The last Python exception line of the block (``ValueError: ...``), if any."""
        best = -1
        for word in (b"Error", b"Exception", b"Interrupt"):
            pos = block.rfind(word)
            while pos > best:
                start = block.rfind(b"\n", 0, pos) + 1
                end = block.find(b"\n", pos)
                line = decode_line(block[start:] if end == -1 else block[start:end]).strip()
                if (line[:1].isalpha() or line.startswith("[rank")) and EXCEPTION.match(line):
                    best = start
                    self.exception = line[:MAX_TEXT]
                    break
                pos = block.rfind(word, 0, start) if start else -1

    def feed(self, number: int, line: str) -> None:
        """One line on its own (the block reader is faster for whole logs)."""
        self.feed_block(number, line.encode("utf-8", "surrogatepass").replace(b"\n", b" "))

    def _feed_line(self, number: int, line: str, indices: set[int]) -> None:
        if not line:
            return
        for index in sorted(indices):  # declaration order, so state-keeping handlers run predictably
            pattern = PATTERNS[index]
            if pattern.name in self._retired:
                continue
            for key in pattern.keys:
                if key in line:
                    break
            else:
                continue
            match = pattern.search(line)
            if match is None:
                continue
            self._handlers[pattern.name](match, number, line)
            limit = EVIDENCE_PATTERNS.get(pattern.name)
            if limit is not None:
                hits = self._hits[pattern.name] = self._hits.get(pattern.name, 0) + 1
                if hits >= limit:
                    self._retired.add(pattern.name)

    def feed_all(self, blocks: Iterable[tuple[int, bytes]]) -> None:
        for first, block in blocks:
            self.feed_block(first, block)

    def match(self, signature: str, number: int, line: str) -> None:
        """Record that ``line`` belongs to ``signature``."""
        assert signature in SIGNATURES, signature
        count = self.counts.get(signature, 0)
        self.counts[signature] = count + 1
        if count == 0:
            self.first_line[signature] = number
        if count < MAX_MATCHES_PER_SIGNATURE:
            text = line.strip()
            self.matches.append(LogMatch(signature, number, text[:MAX_TEXT] + ("…" if len(text) > MAX_TEXT else "")))

    def seen(self, *signatures: str) -> bool:
        return any(s in self.counts for s in signatures)

    # ------------------------------------------------------------------ helpers
    def _bnb_path(self, path: str, number: int) -> None:
        """A path inside the bitsandbytes package: where it is installed."""
        self.bnb_seen = True
        folder = _dirname(path)
        if folder and re.search(r"bitsandbytes$", folder):
            self.bnb_location = folder
        self._site_packages(path)

    def _site_packages(self, path: str) -> None:
        match = re.search(r"^(.{0,500}?[\\/](?:site|dist)-packages)(?=[\\/])", path)
        if match and match.group(1) not in self.site_packages and len(self.site_packages) < 5:
            self.site_packages.append(match.group(1))

    def _library_exists(self, name: str) -> None:
        if name not in self.bnb_existing:
            self.bnb_existing.append(name)

    def _library_absent(self, name: str) -> None:
        if name not in self.bnb_absent:
            self.bnb_absent.append(name)

    def _set_era(self, era: str) -> None:
        order = ["legacy", "fallback", "exact", "nearest"]
        if self.bnb_era is None or order.index(era) > order.index(self.bnb_era):
            self.bnb_era = era
        self.bnb_seen = True

    def _cuda_version_seen(self, cuda: str | None, number: int, line: str) -> None:
        if cuda and cuda[0].isdigit() and int(cuda.split(".")[0]) < 11:
            self.match("cuda_older_than_11", number, line)

    def _gpu_cc(self, cc: tuple[int, int], number: int, line: str, *, source: str) -> None:
        if source == "highest":
            self.highest_cc = (cc, number)
        if cc < (6, 0):
            self.match("gpu_below_minimum_cc", number, line)

    def _in_bnb_context(self, number: int, line: str) -> bool:
        return "bitsandbytes" in line or number - self.bnb_context_line <= _BNB_CONTEXT_LINES

    def _missing_library(self, name: str, number: int, line: str) -> None:
        kind = _library_kind(name)
        if kind == "bitsandbytes":
            self._library_absent(name)
            self.match("bnb_cpu_library_not_found" if "_cpu" in name else "bnb_library_not_found", number, line)
            self.bnb_seen = True
            return
        if kind == "driver":
            self.match("libcuda_not_found", number, line)
            return
        signature = {"cuda": "cudart_not_found" if name.startswith(("libcudart", "cudart64")) else "cuda_library_not_found",
                     "rocm": "rocm_library_not_found", "cxx_runtime": "system_library_not_found"}.get(kind)
        if signature is None and name.startswith(_OTHER_RUNTIMES):
            signature = "system_library_not_found"
        if signature is None or not self._in_bnb_context(number, line):
            if signature is not None:
                self.match(signature, number, line)
            return
        self.match(signature, number, line)
        self.missing_deps.setdefault(name, (kind, line.strip()[:MAX_TEXT]))
        self.load_errors.append(line.strip())

    # ------------------------------------------------------------------ the loader
    def _on_version_not_found(self, m: re.Match[str], number: int, line: str) -> None:
        namespace, symver = m.group("ns"), m.group("symver")
        provider = _token_before(line, m.start())
        library = _basename(provider) or ("libc.so.6" if namespace == "GLIBC" else "libstdc++.so.6")
        requirer = (m.group("requirer") or "").rstrip(")")
        signature = {"CXXABI": "cxxabi_version_not_found", "GLIBC": "glibc_version_not_found"}.get(
            namespace, "glibcxx_version_not_found")
        self.match(signature, number, line)
        if namespace == "GLIBC":
            self.glibc_seen = True
        self.os_votes["linux"] += 2
        requirer_name = _basename(requirer)
        if requirer_name.startswith("libbitsandbytes") or (not requirer and self._in_bnb_context(number, line)):
            if requirer_name:
                self._library_exists(requirer_name)
                self._bnb_path(requirer, number)
                self.bnb_selected.append((requirer, number))
            need = self.abi.setdefault(library, AbiNeed(library=library, provider=provider if "/" in provider else None,
                                                        source="log"))
            for target in (need.required, need.missing):
                if symver not in target:
                    target.append(symver)
            self.load_errors.append(line.strip())

    def _on_cannot_open(self, m: re.Match[str], number: int, line: str) -> None:
        token = _token_before(line, m.start())
        name = _basename(token)
        if not name or "." not in name:
            return
        self.os_votes["linux"] += 2  # the wording of glibc's dynamic loader
        if name.startswith("libbitsandbytes"):
            self._bnb_path(token, number)
        self._missing_library(name, number, line)

    def _on_missing_dependency(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_context_line = number
        self._set_era("exact")
        self._missing_library(_basename(m.group("lib")), number, line)

    def _on_undefined_symbol(self, m: re.Match[str], number: int, line: str) -> None:
        symbol = m.group("sym")
        library = _basename(_token_before(line, m.start()))
        if symbol.startswith("__nvJitLink"):
            self.match("nvjitlink_undefined_symbol", number, line)
        elif symbol.startswith("__fatbinwrap"):
            self.match("fatbinwrap_undefined_symbol", number, line)
        elif symbol.startswith("cudaRuntimeGetVersion"):
            self.match("cuda_runtime_symbol_missing", number, line)
        elif "libbitsandbytes_cpu" in line:
            self.match("cpu_library_missing_symbol", number, line)
            self._library_exists(library or "libbitsandbytes_cpu.so")
        self.os_votes["linux"] += 1

    def _on_function_not_found(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("cpu_library_missing_symbol", number, line)

    def _on_could_not_find_module(self, m: re.Match[str], number: int, line: str) -> None:
        path = m.group("path")
        name = _basename(path)
        self.os_votes["windows"] += 3
        if not name.startswith("libbitsandbytes"):
            return
        self._bnb_path(path, number)
        self.bnb_selected.append((path, number))
        if "_cpu" in name:
            self._library_absent(name)
            self.match("bnb_cpu_library_not_found", number, line)
        else:
            self.match("windows_dll_not_loaded", number, line)
            self.load_errors.append(line.strip())

    def _on_winerror_193(self, m: re.Match[str], number: int, line: str) -> None:
        self.os_votes["windows"] += 3
        self.match("windows_linux_library", number, line)

    def _on_windowspath_not_iterable(self, m: re.Match[str], number: int, line: str) -> None:
        self.os_votes["windows"] += 3
        self.match("windows_path_not_iterable", number, line)

    def _on_macho(self, m: re.Match[str], number: int, line: str) -> None:
        if "mach-o" not in line and "libbitsandbytes" not in line and "dlopen" not in line:
            return
        self.os_votes["macos"] += 5
        need = re.search(r"need '?(arm64e?|x86_64)", line)
        if need:
            self.arch = "aarch64" if need.group(1).startswith("arm64") else "x86_64"
        self.match("macos_not_macho", number, line)

    # ------------------------------------------------------------------ bitsandbytes' loader
    def _on_bnb_binary_not_found(self, m: re.Match[str], number: int, line: str) -> None:
        path = (m.group("qpath") if "qpath" in m.re.groupindex else None) or m.group("path") or ""
        path = path.rstrip("')\".,")
        name = _basename(path)
        self._set_era("fallback" if line.count("Could not find") else "nearest" if "No compatible" in line else "exact")
        self.bnb_context_line = number
        if name.startswith("libbitsandbytes"):
            self._bnb_path(path, number)
            self._library_absent(name)
        self.match("bnb_cpu_library_not_found" if "_cpu" in name else "bnb_library_not_found", number, line)
        digits = _BNB_LIB.search(name)
        if digits and digits.group("backend") == "cuda":
            self._cuda_version_seen(_cuda_from_digits(digits.group("digits")), number, line)

    def _on_required_library_not_found(self, m: re.Match[str], number: int, line: str) -> None:
        if m.groupdict().get("file"):
            name = m.group("file")
            self._set_era("legacy")
        else:
            name = _basename(m.group("path"))
            self._bnb_path(m.group("path"), number)
            self._set_era("fallback")
        self._library_absent(name)
        self.bnb_context_line = number
        self.match("bnb_cpu_library_not_found" if "_cpu" in name else "bnb_library_not_found", number, line)
        lib = _BNB_LIB.search(name)
        if lib and lib.group("backend") == "cuda":
            self._cuda_version_seen(_cuda_from_digits(lib.group("digits")), number, line)

    def _selected(self, path: str, number: int, line: str) -> None:
        self._bnb_path(path, number)
        self.bnb_selected.append((path, number))
        self.bnb_context_line = number
        self.match("bnb_library_selected", number, line)
        if "libbitsandbytes_cpu" in path:
            self.match("cpu_library_selected", number, line)

    def _on_loading_binary(self, m: re.Match[str], number: int, line: str) -> None:
        self._set_era("legacy")
        self._selected(m.group("path").strip(), number, line)

    def _on_bin_line(self, m: re.Match[str], number: int, line: str) -> None:
        self._set_era("legacy")
        self._selected(m.group("path").strip(), number, line)

    def _on_cpu_defaulting(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("cpu_library_selected", number, line)

    def _on_compiled_without_gpu(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("compiled_without_gpu_support", number, line)
        path = re.search(r"(\S{0,500}bitsandbytes[\\/])cextension\.py", line)
        if path:
            self._bnb_path(path.group(1) + "cextension.py", number)

    def _on_none_attribute(self, m: re.Match[str], number: int, line: str) -> None:
        attribute = m.group("attr")
        if attribute == "split":
            if "bitsandbytes" in line or "native library" in line or "cuda_specs" in line:
                self.match("torch_cuda_none", number, line)
                self.torch_cpu = True
        elif attribute.startswith("c"):  # cquantize_..., cint8_vector_quant, cuDeviceGetCount
            self.bnb_seen = True
            self.match("native_library_unavailable", number, line)

    def _on_native_unavailable(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("exact")
        self.match("native_library_unavailable", number, line)

    def _on_cuda_setup_failed(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("cuda_setup_failed", number, line)

    def _on_load_error(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.bnb_context_line = number
        self._set_era("exact" if "library load error" in line else "fallback")
        self.match("native_load_error", number, line)
        error = m.group("err").strip()
        if error:
            self.load_errors.append(error)

    def _on_not_compiled(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("bnb_not_compiled", number, line)

    def _on_override(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        groups = m.groupdict()
        variable = groups["var"]
        value = groups.get("value")
        if value is not None:
            self.env[variable] = value.strip("'\"")
        self.match("bnb_cuda_version_override", number, line)
        if "digits only" in line or "detected for ROCm" in line:
            self.override_rejected = line.strip()[:MAX_TEXT]
            if "digits only" in line:
                self._set_era("nearest")  # only 0.50+ validates the value
        loading = re.search(r"loading (libbitsandbytes_\w{1,80}\.(?:so|dll|dylib))", line)
        if loading:
            self.bnb_selected.append((loading.group(1), number))
        if "environment variable detected" in line:
            self._set_era("fallback")
        elif "Loading CUDA version" in line or "Manual override" in line:
            self._set_era("legacy")

    def _on_legacy_libcudart(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        if "libcudart.so" in line:
            self.bnb_legacy = True
            self._set_era("legacy")
        self.match("legacy_libcudart_not_found", number, line)

    def _on_did_not_contain(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("legacy_path_did_not_contain", number, line)

    def _on_nonexistent(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("nonexistent_paths", number, line)
        if "WindowsPath(" in line:
            self.os_votes["windows"] += 3
        elif "PosixPath(" in line:
            self.os_votes["linux"] += 1

    def _on_duplicates(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("duplicate_cuda_runtimes", number, line)
        torch_default = re.search(r"PyTorch default (?:CUDA runtime|libcudart\.so), which is (\d{1,2}\.\d)", line)
        if torch_default:
            self.torch_cuda = torch_default.group(1)

    def _on_cuda_lt_11(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("legacy")
        self.match("cuda_older_than_11", number, line)

    def _on_torch_settings(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("torch_cuda_settings", number, line)
        self.torch_cuda = _cuda_from_digits(m.group("cuda"))
        self._cuda_version_seen(self.torch_cuda, number, line)
        self._gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, source="highest")
        self._set_era("legacy" if "(" not in line.split("Capability:")[-1] else "fallback")

    def _on_cuda_specs(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("fallback")
        self.match("torch_cuda_settings", number, line)
        self.torch_cuda = _cuda_from_digits(m.group("cuda"))
        self._cuda_version_seen(self.torch_cuda, number, line)
        self._gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, source="highest")

    def _on_highest_cc(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("legacy")
        self.match("compute_capability", number, line)
        self._gpu_cc((int(m.group("major")), int(m.group("minor"))), number, line, source="highest")

    def _on_detected_cuda(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("legacy")
        self.detected_cuda = _cuda_from_digits(m.group("cuda"))
        self.match("detected_cuda_version", number, line)
        self._cuda_version_seen(self.detected_cuda, number, line)

    def _on_runtime_path(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self._set_era("legacy")
        self.match("cuda_runtime_path", number, line)

    def _on_legacy_marker(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.bnb_legacy = True
        self._set_era("legacy")
        if "cuda_setup" in m.group(0):
            path = re.search(r"(\S{0,500}bitsandbytes)[\\/]cuda_setup", line)
            if path:
                self.bnb_location = path.group(1).lstrip("'\"(")
                self._site_packages(self.bnb_location + "/")
        if self.counts.get("bnb_legacy_loader", 0) < 3:
            self.match("bnb_legacy_loader", number, line)

    # ------------------------------------------------------------------ driver and GPU
    def _on_no_gpu_detected(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("no_gpu_detected", number, line)
        if "libcuda.so not found" in line:
            self.match("libcuda_not_found", number, line)

    def _on_no_nvidia_driver(self, m: re.Match[str], number: int, line: str) -> None:
        self.no_driver = line.strip()[:MAX_TEXT]
        self.match("no_nvidia_driver", number, line)

    def _on_torch_not_compiled(self, m: re.Match[str], number: int, line: str) -> None:
        self.torch_cpu = True
        self.match("torch_cuda_none", number, line)

    def _on_cuda_error(self, m: re.Match[str], number: int, line: str) -> None:
        if "If you get" in line or "errors, the above" in line:
            return  # bitsandbytes' advice text quotes the error it warns about
        what = (m.groupdict().get("what") or "").lower()
        code = m.groupdict().get("code")
        if "no kernel image" in what:
            signature = "no_kernel_image"
        elif "named symbol not found" in what:
            signature = "named_symbol_not_found"
        elif "invalid device function" in what:
            signature = "invalid_device_function"
        elif "driver version is insufficient" in what:
            signature = "cuda_driver_insufficient"
        elif "unsupported display driver" in what or code == "803":
            signature = "cuda_error_803"
        elif "hiperrornobinaryforgpu" in what:
            signature = "hip_no_binary_for_gpu"
        elif "out of memory" in what:
            signature = "cuda_out_of_memory"
        else:
            return
        self.match(signature, number, line)
        file = m.groupdict().get("file") or ""
        if file.endswith(".hip"):
            self.torch_hip = self.torch_hip or ""

    def _on_driver_too_old(self, m: re.Match[str], number: int, line: str) -> None:
        found = m.group("version")
        self.driver_cuda = f"{int(found) // 1000}.{int(found) % 1000 // 10}"
        self.match("driver_too_old", number, line)

    def _on_int8_unsupported(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("int8_matmul_unsupported", number, line)

    def _on_slow_int8(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("slow_int8_matmul", number, line)

    def _on_cuda_setup_nameerror(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("cuda_setup_nameerror", number, line)

    def _on_cublaslt(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("cublaslt_error", number, line)

    def _on_nvidia_smi_driver(self, m: re.Match[str], number: int, line: str) -> None:
        self.driver_version, self.driver_cuda = m.group("driver"), m.group("cuda")
        self.match("nvidia_smi_driver", number, line)

    # ------------------------------------------------------------------ imports
    def _on_triton_ops(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("triton_ops_missing", number, line)

    def _on_no_module(self, m: re.Match[str], number: int, line: str) -> None:
        module = m.group("module").split(".")[0]
        if m.group("module").startswith("triton.o"):
            return
        if module == "scipy":
            self.match("scipy_missing", number, line)
        elif module == "torch":
            self.torch_missing = True
            self.match("torch_not_installed", number, line)
        elif module == "bitsandbytes":
            self.bnb_missing = True
            self.match("bnb_not_installed", number, line)

    def _on_cannot_import_name(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("stale_bnb_modules", number, line)

    def _on_transformers_importerror(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("transformers_bnb_importerror", number, line)

    # ------------------------------------------------------------------ placement
    def _on_dispatch(self, m: re.Match[str], number: int, line: str) -> None:
        self._dispatch_line = number
        self.match("dispatch_cpu_disk_valueerror", number, line)
        if "load_in_8bit_fp32_cpu_offload" in line:
            self.match("dispatch_message_old_option", number, line)

    def _on_old_offload_option(self, m: re.Match[str], number: int, line: str) -> None:
        if "unexpected keyword argument" in line or number - self._kwarg_pending <= 1:
            self.match("fp32_offload_kwarg_typeerror", number, line)
        elif number - self._dispatch_line > 0 and not self.counts.get("dispatch_message_old_option"):
            self.match("dispatch_message_old_option", number, line)

    def _on_unexpected_kwarg(self, m: re.Match[str], number: int, line: str) -> None:
        if not m.group("kwarg"):
            self._kwarg_pending = number  # the argument's name is on the next line

    def _on_cuda_oom(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("cuda_out_of_memory", number, line)

    # ------------------------------------------------------------------ workflows
    def _on_peft_merge(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("peft_merge_quantized_warning", number, line)

    def _on_peft_legacy_merge(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("peft_legacy_merge_error", number, line)

    def _on_tensors_devices(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("tensors_different_devices", number, line)

    def _on_replica_error(self, m: re.Match[str], number: int, line: str) -> None:
        self.match("dataparallel_replica_error", number, line)

    def _on_device_guard(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.match("bnb_device_guard", number, line)

    # ------------------------------------------------------------------ facts
    def _version(self, package: str, version: str, number: int, line: str, signature: str = "package_version") -> None:
        lowered = line.lower()
        if "existing installation" in lowered or "uninstall" in lowered:
            return  # the version being replaced, not the one in use
        self.versions[package] = version
        self.version_lines[package] = number
        self.match(signature, number, line)

    def _on_bnb_banner(self, m: re.Match[str], number: int, line: str) -> None:
        self.bnb_seen = True
        self.bnb_banner_version = m.group("version")
        self._version("bitsandbytes", m.group("version"), number, line, "bnb_version")

    def _on_bnb_version(self, m: re.Match[str], number: int, line: str) -> None:
        if self.bnb_banner_version:
            return
        self.bnb_seen = True
        self._version("bitsandbytes", m.group("version"), number, line, "bnb_version")

    def _on_package_version(self, m: re.Match[str], number: int, line: str) -> None:
        package = (m.groupdict().get("package") or "torch").lower()
        version = m.group("version")
        if package == "torch":
            if not re.match(r"\d+\.\d+\.\d+", version):
                return  # "torch 2.1" in prose is too vague to trust
            cuda, hip, cpu = _cuda_from_torch_version(version)
            self.torch_cuda = cuda or self.torch_cuda
            self.torch_hip = hip or self.torch_hip
            self.torch_cpu = self.torch_cpu or cpu
            if "PyTorch:" in line:
                self._pytorch_line = number
        self._version(package, version, number, line)

    def _on_torch_version_cuda(self, m: re.Match[str], number: int, line: str) -> None:
        value = m.group("cuda")
        if value == "None":
            self.torch_cpu = True
        else:
            self.torch_cuda = value
        self.match("torch_cuda_settings", number, line)

    def _on_diagnostics_runtime(self, m: re.Match[str], number: int, line: str) -> None:
        if number - self._pytorch_line > 3:
            return  # "CUDA: 12.6" is torch's only right under the "PyTorch:" line of python -m bitsandbytes
        value = m.group("version")
        if not value[0].isdigit():
            return
        if m.group("kind") == "CUDA":
            self.torch_cuda = value
        elif m.group("kind") == "HIP":
            self.torch_hip = value
        self.match("torch_cuda_settings", number, line)

    def _on_python_version(self, m: re.Match[str], number: int, line: str) -> None:
        groups = m.groupdict()
        if groups.get("minor"):
            version, strong = f"3.{groups['minor']}", False
        else:
            version = groups["version"]
            strong = version.count(".") == 2
        if strong or not self.python_version_strong:
            if self.python_version != version:
                self.match("python_version", number, line)
            self.python_version = version
            self.python_version_strong = strong

    def _on_platform_line(self, m: re.Match[str], number: int, line: str) -> None:
        system, rest = m.group("os"), m.group("rest")
        self.os_explicit = {"Linux": "linux", "Windows": "windows"}.get(system, "macos")
        arch = _ARCH.search(rest)
        if arch:
            self.arch = arch.group(1)
        if self.os_explicit == "linux":
            kernel = re.match(r"([\w.+-]{1,80}?)-(?:x86_64|aarch64|arm64|ppc64le)", rest)
            if kernel:
                self.kernel = kernel.group(1)
            glibc = re.search(r"glibc(\d\.\d{1,3})", rest)
            if glibc:
                self.libc_version = glibc.group(1)
            if re.search(r"microsoft|WSL", rest, re.IGNORECASE):
                self.wsl = True
        else:
            version = re.match(r"([\d.]{1,20})", rest)
            if version:
                self.os_version = version.group(1).rstrip(".")
        self.match("platform", number, line)

    def _on_libc_line(self, m: re.Match[str], number: int, line: str) -> None:
        self.libc_version = m.group("version") or m.group("version2")

    def _on_wsl(self, m: re.Match[str], number: int, line: str) -> None:
        if m.group(0) == "WSL" and not re.search(r"\bWSL\b.{0,40}\b(?:2|Ubuntu|Debian)\b", line):
            return  # "WSL" alone in prose; WSL2 kernels and paths are matched above
        self.wsl = True
        self.os_votes["linux"] += 1
        if self.counts.get("platform", 0) < 5:
            self.match("platform", number, line)

    def _on_jetson(self, m: re.Match[str], number: int, line: str) -> None:
        self.jetson = self.jetson or line.strip()[:120]
        if self.counts.get("platform", 0) < 5:
            self.match("platform", number, line)

    def _on_device_map(self, m: re.Match[str], number: int, line: str) -> None:
        if self.counts.get("device_map_argument", 0) < 3:
            self.match("device_map_argument", number, line)

    def _on_quantization(self, m: re.Match[str], number: int, line: str) -> None:
        if self.counts.get("quantization_config", 0) < 3:
            self.match("quantization_config", number, line)

    def _on_model_id(self, m: re.Match[str], number: int, line: str) -> None:
        if self.counts.get("model_id", 0) < 3:
            self.match("model_id", number, line)

    def _on_notebook(self, m: re.Match[str], number: int, line: str) -> None:
        self.notebook = True
        self.os_votes["linux"] += "/content/" in line
        if self.counts.get("notebook", 0) < 2:
            self.match("notebook", number, line)

    def _on_gpu_name(self, m: re.Match[str], number: int, line: str) -> None:
        for gpu in find_gpus(line):
            key = f"{gpu.number}:{gpu.name}" if gpu.number is not None else gpu.name
            if key not in self.gpus and len(self.gpus) < 16:
                self.gpus[key] = (gpu.number, gpu.cc, number)
                self.match("gpu_name", number, line)
                if gpu.cc is not None:
                    self._gpu_cc(gpu.cc, number, line, source="name")

    def _on_windows_hint(self, m: re.Match[str], number: int, line: str) -> None:
        if "csrc" in line and "ops.cu" in line:
            return  # the build machine's path inside a kernel error, not this machine's
        self.os_votes["windows"] += 2 if re.search(r"[A-Za-z]:\\", line) or "WinError" in line else 1
        self._windows_paths(line, number)

    def _windows_paths(self, line: str, number: int) -> None:
        for match in re.finditer(r"([A-Za-z]:\\[^'\"\n<>|*?]{0,500}?\\bitsandbytes)\\", line):
            self.bnb_location = match.group(1)
            self.bnb_seen = True
            self._site_packages(match.group(1) + "\\")
            break
        for match in re.finditer(r"([A-Za-z]:\\[^'\"\n<>|*?]{0,500}?\\torch)\\", line):
            self.torch_location = match.group(1)
            break
        python = re.search(r"\\Python3(\d{1,2})\\", line)
        if python and not self.python_version:
            self.python_version = f"3.{python.group(1)}"

    def _on_linux_hint(self, m: re.Match[str], number: int, line: str) -> None:
        if "csrc" in line and "ops.cu" in line:
            return
        self.os_votes["linux"] += 1
        arch = _ARCH.search(line)
        if arch and not self.arch:
            self.arch = arch.group(1)
        for match in re.finditer(r"(/[^\s'\"():,]{0,500}?/bitsandbytes)/", line):
            if not match.group(1).endswith("/csrc/bitsandbytes"):
                self.bnb_location = match.group(1)
                self.bnb_seen = True
                self._site_packages(match.group(1) + "/")
                break
        for match in re.finditer(r"(/[^\s'\"():,]{0,500}?[/-]packages/torch)/", line):
            self.torch_location = match.group(1)
            break

    def _on_macos_hint(self, m: re.Match[str], number: int, line: str) -> None:
        self.os_votes["macos"] += 2

    # ------------------------------------------------------------------ building facts
    def _platform(self) -> PlatformFacts | None:
        os_name = self.os_explicit
        if os_name is None:
            votes = self.os_votes
            if votes["windows"] >= 2:
                os_name = "windows"
            elif votes["macos"] >= 2 and votes["macos"] >= votes["linux"] // 2:
                os_name = "macos"
            elif votes["linux"] >= 1 or self.glibc_seen or self.wsl:
                os_name = "linux"
        if os_name is None:
            return None
        arch = {"AMD64": "x86_64", "amd64": "x86_64", "arm64": "aarch64" if os_name != "macos" else "arm64",
                "sbsa": "aarch64"}.get(self.arch or "", self.arch or "unknown")
        if os_name == "macos" and arch == "arm64":
            arch = "aarch64"
        platform = PlatformFacts(os=os_name, arch=arch, kernel=self.kernel, os_version=self.os_version)
        if os_name == "linux":
            if self.glibc_seen or self.libc_version:
                platform.libc = "glibc"
                platform.libc_version = self.libc_version
            if self.wsl:
                platform.wsl = 2
                platform.wsl_lib_dir = "/usr/lib/wsl/lib"
                platform.wsl_lib_on_loader_path = False if self.seen("libcuda_not_found") else None
            if self.jetson:
                platform.jetson_release = self.jetson
        return platform

    def _gpu(self) -> GpuFacts | None:
        devices: list[GpuDevice] = []
        used: set[int] = set()
        for name, (index, cc, _line) in sorted(self.gpus.items(), key=lambda item: (item[1][0] is None, item[1][0] or 0)):
            label = name.split(":", 1)[1] if index is not None else name
            if index is None or index in used:
                index = next(i for i in range(64) if i not in used)
            used.add(index)
            devices.append(GpuDevice(index=index, name=label, compute_capability=list(cc) if cc else None))
        if self.highest_cc is not None:
            cc, _line = self.highest_cc
            if not any(d.cc == cc for d in devices):
                index = next(i for i in range(64) if i not in used)
                devices.append(GpuDevice(index=index, name="name not in the log", compute_capability=list(cc)))
        if devices:
            return GpuFacts(nvml_available=True, devices=devices, driver_version=self.driver_version,
                            driver_cuda_version=self.driver_cuda)
        if self.no_driver:
            return GpuFacts(nvml_available=False, nvml_error=self.no_driver, nvml_error_kind="library_not_found")
        return None

    def _bnb_version(self) -> str | None:
        """The version the log prints, else a release line that one of its messages pins (``0.45.x``)."""
        version = self.versions.get("bitsandbytes")
        if version:
            return version
        if self.bnb_era == "nearest" and self.override_rejected:
            return "0.50.x"  # "value must be digits only": the 0.50 override check (0.50.0-0.50.2 so far)
        # One failure pins the release line: the 0.45.x CUDA 12.6/12.8 builds needing glibc 2.34.
        need = self.abi.get("libc.so.6")
        selected = [_basename(p) for p, _ in self.bnb_selected]
        if need and need.missing and selected:
            from bnbdoctor.knowledge.releases import recorded_wheels

            wanted = max(need.missing)
            lines = {w.version.rsplit(".", 1)[0] for w in recorded_wheels() if w.os == "linux"
                     for name in selected if name in w.libraries
                     and w.libraries[name].max_required.get("GLIBC", "GLIBC_0") >= wanted}
            if len(lines) == 1:
                return f"{lines.pop()}.x"
        return None

    def _python(self) -> PythonFacts | None:
        torch_known = bool(self.torch_cuda or self.torch_hip or self.torch_cpu or "torch" in self.versions)
        if not (torch_known or self.bnb_seen or self.bnb_missing or self.torch_missing or self.python_version):
            return None
        torch = TorchFacts(installed=torch_known and not self.torch_missing)
        if torch.installed:
            torch.version = self.versions.get("torch")
            torch.cuda = None if self.torch_cpu and not self.torch_cuda else self.torch_cuda
            torch.hip = self.torch_hip or None
            torch.location = self.torch_location
        else:
            torch.error = "No module named 'torch'" if self.torch_missing else "not shown in the log"
        bnb = BnbFacts(installed=self.bnb_seen and not self.bnb_missing)
        if bnb.installed:
            bnb.version = self._bnb_version()
            bnb.location = self.bnb_location
            bnb.has_metadata = bool(self.bnb_location and re.search(r"[\\/](?:site|dist)-packages[\\/]", self.bnb_location))
            bnb.native_libraries = [n for n in self.bnb_existing if n not in self.bnb_absent]
            bnb.legacy_cuda_setup = self.bnb_legacy
        else:
            bnb.error = "No module named 'bitsandbytes'" if self.bnb_missing else "not shown in the log"
        packages: dict[str, str | None] = {k: v for k, v in self.versions.items()
                    if k in ("transformers", "accelerate", "peft", "triton", "pytorch-triton-rocm", "scipy", "trl",
                             "diffusers")}
        prefix = None
        if self.site_packages:
            prefix = re.split(r"[\\/](?:lib|Lib)(?:[\\/]python[\d.]+)?[\\/](?:site|dist)-packages$", self.site_packages[0])[0]
        return PythonFacts(executable="", selected_by="log", version=self.python_version, prefix=prefix,
                           site_packages=list(self.site_packages), torch=torch, bitsandbytes=bnb, packages=packages)

    def _selection(self, python: PythonFacts | None, platform: PlatformFacts | None) -> tuple[SelectedLibrary | None, str | None]:
        chosen = [(p, n) for p, n in self.bnb_selected if _BNB_LIB.search(_basename(p))]
        gpu_chosen = [(p, n) for p, n in chosen if "_cpu" not in _basename(p)]
        missing = [n for n in self.bnb_absent if "_cpu" not in n]
        override = self.env.get("BNB_CUDA_VERSION") or self.env.get("BNB_ROCM_VERSION")
        era = {"legacy": "import_error", "fallback": "cpu_fallback", "exact": "error_on_first_call",
               "nearest": "error_on_first_call"}.get(self.bnb_era or "", "cpu_fallback")
        cpu_name = next((_basename(p) for p, _ in chosen if "_cpu" in _basename(p)), None)
        if self.override_rejected:
            backend = "rocm" if "ROCM" in self.override_rejected or "ROCm" in self.override_rejected else "cuda"
            return SelectedLibrary(backend=backend, expected_file="(none: the override was rejected)", loaded_file=None,
                                   exists=False, outcome="override_error", reason="as the log shows",
                                   override=override if override is not None else "",
                                   message=self.override_rejected), None
        if missing:
            expected = missing[-1]
            backend = _BNB_LIB.search(expected)
            cpu_loads = cpu_name is not None and cpu_name not in self.bnb_absent
            return SelectedLibrary(
                backend={"hip": "rocm"}.get(backend.group("backend"), backend.group("backend")) if backend else "cuda",
                expected_file=expected, loaded_file=cpu_name if cpu_loads else None, exists=False,
                outcome=era, reason="as the log shows: the library for this CUDA/ROCm version is missing",
                override=override, message=None), None
        if gpu_chosen:
            path, _ = gpu_chosen[-1]
            name = _basename(path)
            backend = _BNB_LIB.search(name)
            exists = name not in self.bnb_absent
            return SelectedLibrary(
                backend={"hip": "rocm"}.get(backend.group("backend"), backend.group("backend")) if backend else "cuda",
                expected_file=name, loaded_file=name if exists else None, exists=exists,
                outcome="loads" if exists else era, reason="as the log shows", override=override), path
        if chosen:
            path, _ = chosen[-1]
            name = _basename(path)
            return SelectedLibrary(backend="cpu", expected_file=name, loaded_file=name, exists=name not in self.bnb_absent,
                                   outcome="cpu_library", reason="as the log shows: bitsandbytes chose its CPU library",
                                   override=override), path
        return None, None

    def _native(self, python: PythonFacts | None, platform: PlatformFacts | None) -> tuple[NativeFacts | None, LoadCheck | None]:
        selection, path = self._selection(python, platform)
        if selection is None and not self.missing_deps and not self.abi:
            return None, None
        native = NativeFacts(selection=selection)
        if path and re.search(r"[\\/]", path):
            native.library = path
            native.package_dir = _dirname(path)
        elif python and python.bitsandbytes.location and selection and selection.loaded_file:
            sep = "\\" if platform and platform.os == "windows" else "/"
            native.library = python.bitsandbytes.location + sep + selection.loaded_file
        native.search_order = list(_WINDOWS_SEARCH if platform and platform.os == "windows" else _LINUX_SEARCH)
        for name, (kind, _message) in self.missing_deps.items():
            native.dependencies.append(ResolvedDependency(name=name, kind=kind))
            native.needed.append(name)
        for need in self.abi.values():
            kind = "libc" if need.library.startswith("libc.so") else "cxx_runtime"
            native.dependencies.append(ResolvedDependency(name=need.library, kind=kind, resolved=need.provider or need.library,
                                                          via="as the loader reported"))
            native.abi.append(need)
            native.version_needs[need.library] = list(need.required)
        load = None
        if self.missing_deps or self.abi:
            load = LoadCheck(ran=True, ok=False, library=native.library, error=self.load_errors[0] if self.load_errors else None)
        return native, load

    def _derived(self, gpu: GpuFacts | None) -> None:
        """Signatures that only the whole log shows: GPUs of different generations."""
        if gpu is None or len(gpu.devices) < 2:
            return
        tiers = {0 if d.cc < (6, 0) else 1 if d.cc < (7, 5) else 2 for d in gpu.devices if d.cc}
        if len(tiers) > 1:
            line = min(n for _i, _c, n in self.gpus.values()) if self.gpus else (self.highest_cc or ((0, 0), 1))[1]
            self.match("mixed_gpu_generations", line, "GPUs: " + ", ".join(f"{d.name} (cc {d.cc_text})" for d in gpu.devices))

    def facts(self, stats: ReadStats | None = None) -> Facts:
        platform = self._platform()
        gpu = self._gpu()
        python = self._python()
        native, load = self._native(python, platform)
        self._derived(gpu)
        source = {"kind": "log", "label": self.label, "lines": self.lines}
        if stats is not None:
            source.update(bytes=stats.bytes, encoding=stats.encoding)
            if stats.truncated_lines:
                source["truncated_lines"] = stats.truncated_lines
            if stats.binary_lines:
                source["binary_lines"] = stats.binary_lines
        dropped = sum(max(0, c - MAX_MATCHES_PER_SIGNATURE) for c in self.counts.values())
        if dropped:
            source["matches_not_kept"] = dropped
        log = LogFacts(source=self.label, lines=self.lines, matches=sorted(self.matches, key=lambda m: m.line),
                       versions=dict(self.versions), exception=self.exception)
        facts = Facts(source=source, env=dict(self.env), platform=platform, gpu=gpu, python=python, native=native,
                      load=load, log=log)
        for section in ("platform", "gpu", "python", "cuda_toolkit", "native", "load"):
            if getattr(facts, section) is None:
                facts.probes.append(ProbeRun(section, ok=False, duration_s=0.0, error="not shown in the log", skipped=True))
        return facts


def extract(stream: BinaryIO, label: str = "log") -> tuple[Facts, float]:
    """Read a whole log; return its facts and the seconds spent reading it."""
    started = time.perf_counter()
    stats = ReadStats()
    extractor = LogExtractor(label)
    extractor.feed_all(read_blocks(stream, stats))
    return extractor.facts(stats), time.perf_counter() - started


def extract_text(text: str, label: str = "log") -> Facts:
    import io

    return extract(io.BytesIO(text.encode("utf-8", "surrogatepass")), label)[0]


__all__ = ["LogExtractor", "compute_capability", "extract", "extract_text"]
