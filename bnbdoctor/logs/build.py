"""From what the collectors read to :class:`~bnbdoctor.facts.Facts`, section by section.

- ``platform`` when the log shows the operating system (an explicit ``Platform:`` line, else
  the votes of paths, ``WinError`` and the loader's wording);
- ``gpu`` when it names GPUs or compute capabilities (or torch says there is no driver);
- ``python`` (torch, bitsandbytes, other packages) when it shows any of them;
- ``native`` and ``load`` when it shows which library bitsandbytes chose and what the loader said;
- ``env`` for ``BNB_CUDA_VERSION`` / ``BNB_ROCM_VERSION`` when bitsandbytes reports them;
- ``log``: every recognised line with its number, the versions seen and the last exception; the
  error lines (exceptions, ``Killed``, signals, non-zero exit statuses) no family names
  (``unrecognised_error``).

A fact the log does not show stays unknown: a section is left out (``probes`` says "not shown in
the log"), a version is None, and ``TorchFacts``/``BnbFacts`` say ``installed=False`` with
``error`` explaining that the log does not show the package (``bnbdoctor explain`` never lets a
rule conclude from that absence).
"""

from __future__ import annotations

import re
from typing import Any

from bnbdoctor.facts import (
    BnbFacts,
    BnbMinimum,
    Facts,
    GpuDevice,
    GpuFacts,
    LoadCheck,
    LogFacts,
    NativeFacts,
    PlatformFacts,
    ProbeRun,
    PythonFacts,
    ResolvedDependency,
    SelectedLibrary,
    TorchArchFacts,
    TorchFacts,
)
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.signatures import FACT, NOISE, ROOT, SIGNATURES
from bnbdoctor.logs.clean import ReadStats
from bnbdoctor.logs.state import MAX_MATCHES_PER_SIGNATURE, LogState
from bnbdoctor.logs.tokens import BNB_LIB, basename, dirname

_LINUX_SEARCH = [
    "loaded by torch before bitsandbytes",
    "LD_LIBRARY_PATH",
    "RUNPATH",
    "ld.so.cache",
    "default directories",
]
_WINDOWS_SEARCH = [
    "loaded by torch before bitsandbytes",
    "the DLL's own folder",
    "System32",
    "os.add_dll_directory (torch)",
]
_OTHER_PACKAGES = ("transformers", "accelerate", "peft", "triton", "pytorch-triton-rocm", "scipy", "trl", "diffusers")
#: What bitsandbytes does when its library is missing, by the release family its messages belong to.
_ERA_OUTCOME = {
    "legacy": "import_error",
    "fallback": "cpu_fallback",
    "exact": "error_on_first_call",
    "nearest": "error_on_first_call",
}


def platform_facts(state: LogState) -> PlatformFacts | None:
    seen = state.platform
    os_name = seen.os_explicit
    if os_name is None:
        votes = seen.os_votes
        if votes["windows"] >= 2:
            os_name = "windows"
        elif votes["macos"] >= 2 and votes["macos"] >= votes["linux"] // 2:
            os_name = "macos"
        elif votes["linux"] >= 1 or seen.glibc_seen or seen.wsl:
            os_name = "linux"
    if os_name is None:
        return None
    arch = {
        "AMD64": "x86_64",
        "amd64": "x86_64",
        "arm64": "aarch64" if os_name != "macos" else "arm64",
        "sbsa": "aarch64",
    }.get(seen.arch or "", seen.arch or "unknown")
    if os_name == "macos" and arch == "arm64":
        arch = "aarch64"
    platform = PlatformFacts(os=os_name, arch=arch, kernel=seen.kernel, os_version=seen.os_version)
    if os_name == "linux":
        if seen.glibc_seen or seen.libc_version:
            platform.libc = "glibc"
            platform.libc_version = seen.libc_version
        if seen.wsl:
            platform.wsl = 2
            platform.wsl_lib_dir = "/usr/lib/wsl/lib"
            platform.wsl_lib_on_loader_path = False if state.seen(S.LIBCUDA_NOT_FOUND) else None
        if seen.jetson:
            platform.jetson_release = seen.jetson
    return platform


def gpu_facts(state: LogState) -> GpuFacts | None:
    seen = state.gpu
    devices: list[GpuDevice] = []
    used: set[int] = set()
    named = sorted(seen.named.items(), key=lambda item: (item[1][0] is None, item[1][0] or 0))
    for name, (seen_index, cc, _line) in named:
        label = name.split(":", 1)[1] if seen_index is not None else name
        index = seen_index
        if index is None or index in used:
            index = next(i for i in range(64) if i not in used)
        used.add(index)
        devices.append(GpuDevice(index=index, name=label, compute_capability=list(cc) if cc else None))
    if seen.highest_cc is not None:
        highest, _line = seen.highest_cc
        if not any(d.cc == highest for d in devices):
            index = next(i for i in range(64) if i not in used)
            devices.append(GpuDevice(index=index, name="name not in the log", compute_capability=list(highest)))
    if devices:
        return GpuFacts(
            nvml_available=True,
            devices=devices,
            driver_version=seen.driver_version,
            driver_cuda_version=seen.driver_cuda,
        )
    if seen.no_driver:
        return GpuFacts(nvml_available=False, nvml_error=seen.no_driver, nvml_error_kind="library_not_found")
    return None


def _bnb_version(state: LogState) -> str | None:
    """The version the log prints, else a release line that one of its messages pins (``0.45.x``)."""
    version = state.python.versions.get("bitsandbytes")
    if version:
        return version
    if state.bnb.era == "nearest" and state.bnb.override_rejected:
        return "0.50.x"  # "value must be digits only": the 0.50 override check (0.50.0-0.50.2 so far)
    # One failure pins the release line: the 0.45.x CUDA 12.6/12.8 builds needing glibc 2.34.
    need = state.load.abi.get("libc.so.6")
    selected = [basename(p) for p, _ in state.bnb.selected]
    if need and need.missing and selected:
        from bnbdoctor.knowledge.releases import recorded_wheels

        wanted = max(need.missing)
        lines = {
            w.version.rsplit(".", 1)[0]
            for w in recorded_wheels()
            if w.os == "linux"
            for name in selected
            if name in w.libraries and w.libraries[name].max_required.get("GLIBC", "GLIBC_0") >= wanted
        }
        if len(lines) == 1:
            return f"{lines.pop()}.x"
    return None


def python_facts(state: LogState) -> PythonFacts | None:
    seen, bnb_seen, torch_seen = state.python, state.bnb, state.torch
    versions = seen.versions
    torch_known = bool(torch_seen.cuda or torch_seen.hip or torch_seen.cpu or "torch" in versions)
    if not (torch_known or bnb_seen.seen or bnb_seen.missing or torch_seen.missing or seen.version or seen.bnb_minimum):
        return None
    torch = TorchFacts(installed=torch_known and not torch_seen.missing)
    if torch.installed:
        torch.version = versions.get("torch")
        torch.cuda = None if torch_seen.cpu and not torch_seen.cuda else torch_seen.cuda
        torch.hip = torch_seen.hip or None
        torch.location = torch_seen.location
    else:
        torch.error = "No module named 'torch'" if torch_seen.missing else "not shown in the log"
    bnb = BnbFacts(installed=bnb_seen.seen and not bnb_seen.missing)
    if bnb.installed:
        bnb.version = _bnb_version(state)
        bnb.location = bnb_seen.location
        bnb.has_metadata = bool(bnb_seen.location and re.search(r"[\\/](?:site|dist)-packages[\\/]", bnb_seen.location))
        # setup.py install/develop leaves an egg folder (``bitsandbytes-0.43.2.dev0-py3.10-linux-x86_64.egg``)
        bnb.dist_format = "egg" if re.search(r"\.egg[\\/]", bnb_seen.location or "") else None
        bnb.native_libraries = [n for n in bnb_seen.existing if n not in bnb_seen.absent]
        bnb.legacy_cuda_setup = bnb_seen.legacy
    else:
        bnb.error = "No module named 'bitsandbytes'" if bnb_seen.missing else "not shown in the log"
    packages: dict[str, str | None] = {k: v for k, v in versions.items() if k in _OTHER_PACKAGES}
    prefix = None
    if seen.site_packages:
        prefix = re.split(r"[\\/](?:lib|Lib)(?:[\\/]python[\d.]+)?[\\/](?:site|dist)-packages$", seen.site_packages[0])[
            0
        ]
    return PythonFacts(
        executable="",
        selected_by="log",
        version=seen.version,
        prefix=prefix,
        site_packages=list(seen.site_packages),
        torch=torch,
        bitsandbytes=bnb,
        packages=packages,
        transformers_bnb_minimum=BnbMinimum("transformers", seen.bnb_minimum) if seen.bnb_minimum else None,
    )


def _backend(name: str) -> str:
    match = BNB_LIB.search(name)
    return {"hip": "rocm"}.get(match.group("backend"), match.group("backend")) if match else "cuda"


def _selection(state: LogState) -> tuple[SelectedLibrary | None, str | None]:
    """The library bitsandbytes chose as the log shows it, and its path when the log prints one."""
    bnb = state.bnb
    chosen = [(p, n) for p, n in bnb.selected if BNB_LIB.search(basename(p))]
    gpu_chosen = [(p, n) for p, n in chosen if "_cpu" not in basename(p)]
    missing = [n for n in bnb.absent if "_cpu" not in n]
    override = state.env.get("BNB_CUDA_VERSION") or state.env.get("BNB_ROCM_VERSION")
    era = _ERA_OUTCOME.get(bnb.era or "", "cpu_fallback")
    cpu_name = next((basename(p) for p, _ in chosen if "_cpu" in basename(p)), None)
    if bnb.override_rejected:
        backend = "rocm" if "ROCM" in bnb.override_rejected or "ROCm" in bnb.override_rejected else "cuda"
        return SelectedLibrary(
            backend=backend,
            expected_file="(none: the override was rejected)",
            loaded_file=None,
            exists=False,
            outcome="override_error",
            reason="as the log shows",
            override=override if override is not None else "",
            message=bnb.override_rejected,
        ), None
    if missing:
        expected = missing[-1]
        cpu_loads = cpu_name is not None and cpu_name not in bnb.absent
        return SelectedLibrary(
            backend=_backend(expected),
            expected_file=expected,
            loaded_file=cpu_name if cpu_loads else None,
            exists=False,
            outcome=era,
            reason="as the log shows: the library for this CUDA/ROCm version is missing",
            override=override,
            message=None,
        ), None
    if gpu_chosen:
        path, _ = gpu_chosen[-1]
        name = basename(path)
        exists = name not in bnb.absent
        return SelectedLibrary(
            backend=_backend(name),
            expected_file=name,
            loaded_file=name if exists else None,
            exists=exists,
            outcome="loads" if exists else era,
            reason="as the log shows",
            override=override,
        ), path
    if chosen:
        path, _ = chosen[-1]
        name = basename(path)
        return SelectedLibrary(
            backend="cpu",
            expected_file=name,
            loaded_file=name,
            exists=name not in bnb.absent,
            outcome="cpu_library",
            reason="as the log shows: bitsandbytes chose its CPU library",
            override=override,
        ), path
    return None, None


def native_facts(
    state: LogState, python: PythonFacts | None, platform: PlatformFacts | None
) -> tuple[NativeFacts | None, LoadCheck | None]:
    selection, path = _selection(state)
    load_seen = state.load
    if selection is None and not load_seen.missing_deps and not load_seen.abi and not load_seen.undefined_symbol:
        return None, None
    native = NativeFacts(selection=selection)
    if path and re.search(r"[\\/]", path):
        native.library = path
        native.package_dir = dirname(path)
    elif python and python.bitsandbytes.location and selection and selection.loaded_file:
        sep = "\\" if platform and platform.os == "windows" else "/"
        native.library = python.bitsandbytes.location + sep + selection.loaded_file
    native.search_order = list(_WINDOWS_SEARCH if platform and platform.os == "windows" else _LINUX_SEARCH)
    for name, (kind, _message) in load_seen.missing_deps.items():
        stem = name.rsplit(".so.", 1)[0] + ".so."
        others = [p for soname, p in load_seen.present.items() if soname != name and soname.startswith(stem)]
        native.dependencies.append(ResolvedDependency(name=name, kind=kind, other_sonames=others))
        native.needed.append(name)
    for need in load_seen.abi.values():
        kind = "libc" if need.library.startswith("libc.so") else "cxx_runtime"
        native.dependencies.append(
            ResolvedDependency(
                name=need.library, kind=kind, resolved=need.provider or need.library, via="as the loader reported"
            )
        )
        native.abi.append(need)
        native.version_needs[need.library] = list(need.required)
    load = None
    if load_seen.missing_deps or load_seen.abi or load_seen.undefined_symbol:
        load = LoadCheck(
            ran=True, ok=False, library=native.library, error=load_seen.errors[0] if load_seen.errors else None
        )
    return native, load


def _whole_log_signatures(state: LogState, gpu: GpuFacts | None) -> None:
    """Signatures that only the whole log shows: GPUs of different generations."""
    if gpu is None or len(gpu.devices) < 2:
        return
    tiers = {0 if d.cc < (6, 0) else 1 if d.cc < (7, 5) else 2 for d in gpu.devices if d.cc}
    if len(tiers) > 1:
        named = state.gpu.named
        line = min(n for _i, _c, n in named.values()) if named else (state.gpu.highest_cc or ((0, 0), 1))[1]
        state.match(
            S.MIXED_GPU_GENERATIONS, line, "GPUs: " + ", ".join(f"{d.name} (cc {d.cc_text})" for d in gpu.devices)
        )


#: Lines after an exception line that may carry its message (``RuntimeError:`` and the text below).
_MESSAGE_LINES = 3


def _unrecognised_errors(state: LogState) -> None:
    """``unrecognised_error`` for each error line no message family names: an exception line, or one
    that says the process died or exited with an error (``Killed``, ``Segmentation fault``, ``exit
    code 1``), or, in a log that names no failure, a ``Traceback`` header that no error line follows (a
    paste cut short). A line
    counts as named when a specific failure, hint or consequence family matched it or one of the few
    lines below it (where a wrapped message continues); a line that says how the process ended, when
    such a family matched a line before it. Whether the log's failure is named elsewhere
    is left to the rules: ``explain`` keeps the unnamed-error finding (BNB549) only when no error
    finding stands, so a log that shows an error is never "no error"."""
    named = {
        m.line
        for m in state.matches
        if SIGNATURES[m.signature].role not in (FACT, NOISE) and SIGNATURES[m.signature].specific
    }
    errors = list(state.errors)
    # a generic failure message that no exception line follows (CUDA out of memory without its exception's name,
    # behind a logger's prefix) is the error as far as the paste goes: quoted rather than the traceback header
    last_error = max((n for n, _ in errors), default=0)
    generic = [
        (m.line, m.text)
        for m in state.matches
        if SIGNATURES[m.signature].role == ROOT and not SIGNATURES[m.signature].specific and m.line > last_error
    ]
    if generic:
        errors = sorted(errors + list(dict(generic).items()))
    if state.traceback is not None and not named and not any(n > state.traceback[0] for n, _ in errors):
        errors.append(state.traceback)  # nothing says how it ended: the paste was cut short
    if not errors:
        return
    first_named = min(named, default=None)
    for number, text in errors:
        if number in state.endings and first_named is not None and first_named <= number:
            continue  # how the process ended after a failure the log names: that failure's end
        if not any(0 <= state.since(number, n) <= _MESSAGE_LINES for n in named):
            state.match(S.UNRECOGNISED_ERROR, number, text)


def build_facts(state: LogState, stats: ReadStats | None = None) -> Facts:
    """The Facts of a whole log (records the whole-log signatures in ``state`` first)."""
    platform = platform_facts(state)
    gpu = gpu_facts(state)
    python = python_facts(state)
    native, load = native_facts(state, python, platform)
    _whole_log_signatures(state, gpu)
    _unrecognised_errors(state)
    source: dict[str, Any] = {"kind": "log", "label": state.label, "lines": state.lines}
    if not state.content:
        source["empty"] = "true"  # nothing but whitespace: nothing to explain
    if stats is not None:
        source.update(bytes=stats.bytes, encoding=stats.encoding)
        if stats.truncated_lines:
            source["truncated_lines"] = stats.truncated_lines
        if stats.binary_lines:
            source["binary_lines"] = stats.binary_lines
    if state.repeated_lines:
        source["repeated_lines"] = state.repeated_lines
    if state.lines_not_matched:
        source["lines_not_matched"] = state.lines_not_matched
    dropped = sum(max(0, c - MAX_MATCHES_PER_SIGNATURE) for c in state.counts.values())
    if dropped:
        source["matches_not_kept"] = dropped
    log = LogFacts(
        source=state.label,
        lines=state.lines,
        matches=sorted(state.matches, key=lambda m: m.line),
        versions=dict(state.python.versions),
        exception=state.exception,
    )
    facts = Facts(
        source=source, env=dict(state.env), platform=platform, gpu=gpu, python=python, native=native, load=load, log=log
    )
    if state.torch.arch_list is not None:
        sass, ptx = state.torch.arch_list
        facts.torch_arch = TorchArchFacts(source="log", sass=list(sass), ptx=list(ptx))
    for section in ("platform", "gpu", "python", "cuda_toolkit", "native", "load"):
        if getattr(facts, section) is None:
            facts.probes.append(ProbeRun(section, ok=False, duration_s=0.0, error="not shown in the log", skipped=True))
    return facts
