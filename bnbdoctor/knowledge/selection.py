"""Which ``libbitsandbytes_*`` file a bitsandbytes release will try to load, and what happens.

Each release family has its own logic (bnb_internals.md §1.3-1.4, read from cextension.py and
cuda_setup/main.py at each tag). This module reproduces it as a pure function of facts, so the
doctor can predict the failure without importing bitsandbytes.

The same function answers "what if": :class:`SelectionInput` holds everything the choice depends on,
so a rule can ask what the release would select without the ``BNB_*_VERSION`` override in force
(:func:`underlying_selection`) or which override value would make it load a given file
(:func:`override_reaching`), instead of guessing from file names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bnbdoctor.knowledge.gpus import INT8_NAMEERROR
from bnbdoctor.knowledge.loader import (
    CUDA_OVERRIDE_READ,
    CUDA_VERSION_FROM_TORCH,
    ROCM_TORCH_WITHOUT_CUDA_VERSION,
    UNPACK_WITHOUT_GPU,
)
from bnbdoctor.knowledge.versions import major_minor, release_tuple

# Families, by the first release that behaves this way.
LEGACY = (0, 0, 0)  # <= 0.43.0: CUDASetup, _nocublaslt below cc 7.5, raises at import
CPU_FALLBACK = (0, 43, 1)  # 0.43.1-0.45.x: missing CUDA library -> CPU library, warning
EXACT = (0, 46, 0)  # 0.46-0.49: exact match, error on first native call
NEAREST = (0, 50, 0)  # 0.50+: nearest packaged version of the same major
# BNB_CUDA_VERSION is read from 0.41.0 (bnb_internals.md §1.4; the boundary lives in loader.py)
CUDA_FROM_TORCH = tuple(int(part) for part in CUDA_VERSION_FROM_TORCH.first_text.split("."))
ROCM_OVERRIDE_FROM = NEAREST  # BNB_ROCM_VERSION is read from 0.50.0; 0.46-0.49 ROCm have no override


@dataclass(frozen=True)
class LibrarySelection:
    """The prediction. ``outcome`` is one of:

    - ``loads``: the file exists (whether it then loads is the loader's business);
    - ``cpu_library``: no GPU backend applies, the CPU library is chosen on purpose;
    - ``import_error``: <= 0.43.0 raises "CUDA Setup failed despite GPU being available";
    - ``cpu_fallback``: 0.43.1-0.45.x warn and silently load the CPU library instead;
    - ``error_on_first_call``: 0.46+ import fine, then raise at the first native call;
    - ``override_error``: BNB_CUDA_VERSION / BNB_ROCM_VERSION is rejected outright.
    """

    backend: str  # cuda | rocm | xpu | cpu
    expected_file: str  # what the release asks for
    loaded_file: str | None  # what it ends up loading (None when nothing can load)
    exists: bool
    outcome: str
    reason: str
    override: str | None = None  # the BNB_*_VERSION value in force
    fallback_from: str | None = None  # 0.50+: the exact name that was missing
    message: str | None = None  # what bitsandbytes prints or raises


def backend_label(backend: str) -> str:
    """A backend as the releases' messages spell it: "CUDA", "ROCm", "XPU"."""
    return {"rocm": "ROCm"}.get(backend, backend.upper())


def library_suffix(bnb_version: tuple[int, ...], os_name: str) -> str:
    if bnb_version < (0, 43, 0):
        return ".so"  # <= 0.42 hard-codes .so everywhere, Windows included
    return {"windows": ".dll", "macos": ".dylib"}.get(os_name, ".so")


def version_tag(bnb_version: tuple[int, ...], runtime: tuple[int, int]) -> str:
    """The digits a release puts after ``cuda``/``rocm`` for a runtime version: ``f"{M}{m}"``, except
    0.46-0.49, which compute ``M*10+m`` (the same for CUDA 11/12, but ROCm 7.14 becomes "84")."""
    if EXACT <= bnb_version < NEAREST:
        return str(runtime[0] * 10 + runtime[1])
    return f"{runtime[0]}{runtime[1]}"


#: The newest ROCm major there is (builds rocm62 ... rocm715 in the 0.49/0.50 wheels, bnb_internals.md §4): a
#: 0.46-0.49 tag that reads as a newer major is ROCm 7.10+ spelled major*10+minor (ROCm 7.14 -> "84").
NEWEST_ROCM_MAJOR = 7


def rocm_from_misbuilt_tag(digits: str) -> tuple[int, int] | None:
    """The ROCm version behind a 0.46-0.49 ROCm tag that no real ROCm has ("84" -> (7, 14)), else None."""
    if not digits.isdigit() or int(digits) // 10 <= NEWEST_ROCM_MAJOR:
        return None
    return NEWEST_ROCM_MAJOR, int(digits) - NEWEST_ROCM_MAJOR * 10


def tag_misbuilt(bnb_version: tuple[int, ...], runtime: tuple[int, int]) -> bool:
    """Whether this release spells the runtime's tag wrongly (0.46-0.49 with a minor of 10 or more)."""
    return version_tag(bnb_version, runtime) != f"{runtime[0]}{runtime[1]}"


def _split_tag(backend: str, digits: str) -> tuple[int, int]:
    """0.50+ reads file names back: CUDA's first two digits are the major, ROCm's first one."""
    cut = 1 if backend == "rocm" else 2
    return int(digits[:cut]), int(digits[cut:] or 0)


@dataclass(frozen=True, kw_only=True)
class SelectionInput:
    """Everything a release's library choice depends on (what :func:`select_library` reads)."""

    bnb_version: str | None
    os_name: str
    shipped: tuple[str, ...]
    torch_cuda: str | None
    torch_hip: str | None = None
    torch_xpu: str | None = None
    gpu_available: bool
    highest_cc: tuple[int, int] | None
    bnb_cuda_version: str | None = None
    bnb_rocm_version: str | None = None
    #: Before CUDA_VERSION_FROM_TORCH the CUDASetup loader names the library after the libcudart its own
    #: search finds (cudaRuntimeGetVersion): that runtime's version, LEGACY_CUDART_MISSING when the search
    #: finds none, None when not examined (torch's CUDA version stands in).
    legacy_cudart: str | None = None
    #: The chosen library exists but cannot be loaded (a missing dependency, another architecture).
    load_fails: bool = False

    def select(self) -> LibrarySelection | None:
        return select_library(self)

    def without_override(self) -> SelectionInput:
        return replace(self, bnb_cuda_version=None, bnb_rocm_version=None)

    def with_override(self, variable: str, value: str) -> SelectionInput:
        if variable == "BNB_ROCM_VERSION":
            return replace(self.without_override(), bnb_rocm_version=value)
        return replace(self.without_override(), bnb_cuda_version=value)


#: ``legacy_cudart`` when the CUDASetup loader's libcudart search finds nothing.
LEGACY_CUDART_MISSING = "missing"


def select_library(inp: SelectionInput) -> LibrarySelection | None:
    """Predict the library choice; None when the bitsandbytes version is unknown."""
    version = release_tuple(inp.bnb_version)
    if version is None:
        return None
    chosen = _choose(inp, version)
    if inp.load_fails and chosen.loaded_file is not None:
        return _load_failed(version, chosen)
    return chosen


def _choose(inp: SelectionInput, version: tuple[int, ...]) -> LibrarySelection:
    suffix = library_suffix(version, inp.os_name)
    files = set(inp.shipped)

    def result(backend: str, name: str, outcome_if_missing: str, reason: str) -> LibrarySelection:
        exists = name in files
        return LibrarySelection(
            backend=backend,
            expected_file=name,
            loaded_file=name if exists else None,
            exists=exists,
            outcome="loads" if exists and backend != "cpu" else ("cpu_library" if exists else outcome_if_missing),
            reason=reason,
        )

    cpu_name = f"libbitsandbytes_cpu{suffix}"
    if inp.torch_xpu and version >= (0, 48, 0):
        year = re.match(r"\d{4}", inp.torch_xpu)
        names = ([f"libbitsandbytes_xpu{year.group(0)}{suffix}"] if year and version >= NEAREST else []) + [
            f"libbitsandbytes_xpu{suffix}"
        ]
        for name in names:
            if name in files:
                return result("xpu", name, "error_on_first_call", "torch is an XPU build")
        return result(  # with neither file there, the release asks for the generic name (the oracle, 0.50 aarch64)
            "xpu", names[-1], "error_on_first_call", "torch is an XPU build, and no XPU library is shipped"
        )

    crash = ROCM_TORCH_WITHOUT_CUDA_VERSION
    if crash.releases.contains(inp.bnb_version) and inp.torch_hip and not inp.torch_cuda and inp.gpu_available:
        return LibrarySelection(  # CUDASetup raises at import; 0.43.1-0.45 log it and hold no library
            backend="rocm",
            expected_file=cpu_name,
            loaded_file=None,
            exists=cpu_name in files,
            outcome="import_error" if version < CPU_FALLBACK else "error_on_first_call",
            reason="this release reads torch.version.cuda, which is None on a ROCm build of torch",
            message=crash.message,
        )
    runtime_text = inp.torch_hip if (inp.torch_hip and version >= EXACT) else inp.torch_cuda
    backend = "rocm" if (inp.torch_hip and version >= EXACT) else "cuda"
    runtime = major_minor(runtime_text)
    if runtime is None or not inp.gpu_available:
        if UNPACK_WITHOUT_GPU.releases.contains(inp.bnb_version):
            return LibrarySelection(
                backend="cpu",
                expected_file=cpu_name,
                loaded_file=None,
                exists=cpu_name in files,
                outcome="import_error",
                reason="0.40.1 returns four values where its caller unpacks five when torch sees no GPU",
                message=UNPACK_WITHOUT_GPU.message,
            )
        why = "torch has no CUDA/ROCm build" if runtime is None else "torch cannot see a GPU"
        return result("cpu", cpu_name, "error_on_first_call" if version >= CPU_FALLBACK else "import_error", why)

    if version < CPU_FALLBACK:
        if version < CUDA_FROM_TORCH and inp.legacy_cudart is not None:
            if inp.legacy_cudart == LEGACY_CUDART_MISSING:
                return _legacy_without_cudart(files, cpu_name)
            runtime = major_minor(inp.legacy_cudart) or runtime
        return _legacy(inp.bnb_version or "", version, suffix, files, runtime, inp.highest_cc, inp.bnb_cuda_version)
    if version < NEAREST:
        return _cpu_fallback_or_exact(
            version, suffix, files, backend, runtime, inp.highest_cc, inp.bnb_cuda_version, cpu_name
        )
    return _nearest(
        backend, suffix, files, runtime, inp.bnb_cuda_version if backend == "cuda" else inp.bnb_rocm_version
    )


def _legacy_without_cudart(files: set[str], cpu_name: str) -> LibrarySelection:
    """Before CUDA_VERSION_FROM_TORCH, no libcudart found: the CPU library, with a warning."""
    exists = cpu_name in files
    return LibrarySelection(
        backend="cuda",
        expected_file=cpu_name,
        loaded_file=cpu_name if exists else None,
        exists=exists,
        outcome="cpu_fallback",
        reason="the CUDASetup search found no libcudart.so, so the CPU library is loaded",
        message="The installed version of bitsandbytes was compiled without GPU support.",
    )


def _load_failed(version: tuple[int, ...], chosen: LibrarySelection) -> LibrarySelection:
    """The chosen file exists but the dynamic loader refuses it: what each era does then."""
    gpu = chosen.backend != "cpu" and not (chosen.loaded_file or "").startswith("libbitsandbytes_cpu")
    if version < CPU_FALLBACK and gpu:
        return replace(
            chosen,
            loaded_file=None,
            outcome="import_error",
            reason="CUDASetup could not load the library and raises at import",
            message="CUDA Setup failed despite GPU being available.",
        )
    return replace(
        chosen,
        loaded_file=None,
        outcome="error_on_first_call",
        reason="the library could not be loaded; the first native call fails",
        message=None,
    )


def _legacy(
    release: str,
    version: tuple[int, ...],
    suffix: str,
    files: set[str],
    runtime: tuple[int, int],
    highest_cc: tuple[int, int] | None,
    override: str | None,
) -> LibrarySelection:
    name = f"libbitsandbytes_cuda{runtime[0]}{runtime[1]}"
    if highest_cc is not None and highest_cc < (7, 5) and INT8_NAMEERROR.contains(version):
        return LibrarySelection(
            backend="cuda",
            expected_file=name + "_nocublaslt" + suffix,
            loaded_file=None,
            exists=False,
            outcome="import_error",
            reason="0.37.0's compute-capability check names an undefined variable when cc < 7.5",
            message="NameError: name 'cuda_setup' is not defined",
        )
    if highest_cc is not None and highest_cc < (7, 5):
        name += "_nocublaslt"
    name += suffix
    if override and not CUDA_OVERRIDE_READ.contains(release):
        override = None  # not read before CUDA_OVERRIDE_READ
    detected = name  # the releases that read the override still report the name torch's CUDA gave
    if override:  # only a non-empty value counts in these releases
        if version < (0, 43, 0):
            name = name[:-6] + f"{override}.so"  # the documented slicing bug with _nocublaslt
        else:
            stem = name[: -len(suffix)]
            name = re.sub(r"\d+$", "", stem) + override + suffix
    exists = name in files
    return LibrarySelection(
        backend="cuda",
        expected_file=name,
        loaded_file=name if exists else None,
        exists=exists,
        outcome="loads" if exists else "import_error",
        reason="CUDASetup: torch's CUDA version" + (" and cc < 7.5 (_nocublaslt)" if "_nocublaslt" in name else ""),
        override=override or None,
        message=None
        if exists
        else (f"CUDA SETUP: Required library version not found: {detected}. Maybe you need to compile it from source?"),
    )


def _cpu_fallback_or_exact(
    version: tuple[int, ...],
    suffix: str,
    files: set[str],
    backend: str,
    runtime: tuple[int, int],
    highest_cc: tuple[int, int] | None,
    override: str | None,
    cpu_name: str,
) -> LibrarySelection:
    name = f"libbitsandbytes_{backend}{version_tag(version, runtime)}"
    if version < (0, 45, 0) and highest_cc is not None and highest_cc < (7, 5):
        name += "_nocublaslt"
    name += suffix
    if backend == "rocm" and override and version >= (0, 47, 0):
        return LibrarySelection(
            "rocm",
            name,
            None,
            name in files,
            "override_error",
            "BNB_CUDA_VERSION is set on a ROCm build",
            override,
            message=f"BNB_CUDA_VERSION={override} detected for ROCm!!",
        )
    if backend != "cuda":
        override = None  # 0.46 ROCm builds ignore BNB_CUDA_VERSION (its re.sub finds no cuda tag)
    if override:
        if version < (0, 44, 0):
            stem = name[: -len(suffix)]
            name = re.sub(r"\d+$", "", stem) + override + suffix
        else:
            name = re.sub(r"cuda\d+", f"cuda{override}", name, count=1)
    exists = name in files
    if exists:
        return LibrarySelection(
            backend, name, name, True, "loads", f"torch's {backend.upper()} version", override or None
        )
    if version < EXACT:
        return LibrarySelection(
            backend,
            name,
            cpu_name if cpu_name in files else None,
            False,
            "cpu_fallback",
            "the exact library is missing; this release falls back to the CPU library",
            override or None,
            message=f"Could not find the bitsandbytes CUDA binary at {name!r}",
        )
    label = "CUDA" if version < (0, 47, 0) else backend_label(backend)
    return LibrarySelection(
        backend,
        name,
        None,
        False,
        "error_on_first_call",
        "the exact library is missing (this release needs an exact match)",
        override or None,
        message=f"Configured {label} binary not found at {name}",
    )


def _nearest(
    backend: str, suffix: str, files: set[str], runtime: tuple[int, int], override: str | None
) -> LibrarySelection:
    variable = "BNB_CUDA_VERSION" if backend == "cuda" else "BNB_ROCM_VERSION"
    prefix = f"libbitsandbytes_{backend}"
    if override is not None:
        if not override.isdigit():
            return LibrarySelection(
                backend,
                f"{prefix}{override}{suffix}",
                None,
                False,
                "override_error",
                f"{variable} must be digits",
                override,
                message=f"{variable}={override!r}: value must be digits only (e.g. '124' for 12.4).",
            )
        name = f"{prefix}{override}{suffix}"
        exists = name in files
        return LibrarySelection(
            backend,
            name,
            name if exists else None,
            exists,
            "loads" if exists else "error_on_first_call",
            f"{variable} override (no fallback)",
            override,
            message=None if exists else f"No compatible {backend_label(backend)} binary found at {name}",
        )
    exact = f"{prefix}{runtime[0]}{runtime[1]}{suffix}"
    if exact in files:
        return LibrarySelection(
            backend,
            exact,
            exact,
            True,
            "loads",
            f"exact match for torch's {backend_label(backend)} {runtime[0]}.{runtime[1]}",
        )
    packaged = []
    pattern = re.compile(rf"^{prefix}(\d+){re.escape(suffix)}$")
    for name in files:
        match = pattern.match(name)
        if match:
            packaged.append((_split_tag(backend, match.group(1)), name))
    same_major = sorted(p for p in packaged if p[0][0] == runtime[0])
    lower = [p for p in same_major if p[0] <= runtime]
    higher = [p for p in same_major if p[0] > runtime]
    chosen = lower[-1] if lower else (higher[0] if higher else None)
    if chosen is None:
        return LibrarySelection(
            backend,
            exact,
            None,
            False,
            "error_on_first_call",
            f"no packaged {backend_label(backend)} {runtime[0]}.x library (no fallback across majors)",
            message=f"No compatible {backend_label(backend)} binary found at {exact}",
        )
    (major, minor), name = chosen
    return LibrarySelection(
        backend,
        exact,
        name,
        True,
        "loads",
        f"nearest packaged {backend_label(backend)} {major}.{minor} for torch's {runtime[0]}.{runtime[1]}",
        fallback_from=exact,
        message=f"No prebuilt binary for {backend_label(backend)} {runtime[0]}.{runtime[1]}, loading "
        f"{backend_label(backend)} {major}.{minor} instead. Set {variable} to override.",
    )


def override_variable(bnb_version: str | None, backend: str) -> str | None:
    """The variable this release reads to replace its choice on this backend, or None when it reads
    none: ``BNB_CUDA_VERSION`` for CUDA from CUDA_OVERRIDE_READ, ``BNB_ROCM_VERSION`` for ROCm from 0.50 (0.46-0.49
    ROCm builds take no override; 0.47-0.49 even reject ``BNB_CUDA_VERSION``), nothing for XPU/CPU."""
    version = release_tuple(bnb_version)
    if version is None:
        return None
    if backend == "cuda" and CUDA_OVERRIDE_READ.contains(bnb_version):
        return "BNB_CUDA_VERSION"
    if backend == "rocm" and version >= ROCM_OVERRIDE_FROM:
        return "BNB_ROCM_VERSION"
    return None


def underlying_selection(inputs: SelectionInput) -> LibrarySelection | None:
    """What the release would select with no override set: None when no override is in force
    (then the plain selection is the underlying one)."""
    with_override = inputs.select()
    if with_override is None or with_override.override is None:
        return None
    return inputs.without_override().select()


def override_reaching(inputs: SelectionInput, target_file: str) -> tuple[str, str] | None:
    """``(variable, value)`` that makes this release, on this machine, load ``target_file``; None when
    no value does (no override for this backend, or the release builds another name from it, as the
    ``_nocublaslt`` name bugs of 0.41-0.43 do)."""
    plain = inputs.without_override().select()
    if plain is None:
        return None
    variable = override_variable(inputs.bnb_version, plain.backend)
    match = re.match(r"libbitsandbytes_(?:cuda|rocm)(\d+)", target_file)
    if variable is None or match is None:
        return None
    value = match.group(1)
    reached = inputs.with_override(variable, value).select()
    if reached is not None and reached.loaded_file == target_file and reached.outcome == "loads":
        return variable, value
    return None


def torch_cuda_reaching(inputs: SelectionInput, target_file: str, cuda: str) -> bool:
    """Whether a torch build for CUDA ``cuda`` would make this release, with no override, load ``target_file``
    (the ``_nocublaslt`` builds of <= 0.44 are chosen by the highest GPU, not by torch)."""
    reached = replace(inputs.without_override(), torch_cuda=cuda, torch_hip=None, torch_xpu=None).select()
    return reached is not None and reached.loaded_file == target_file
