"""BNB301 bnb-binary-missing-for-torch-cuda: passes when the installed bitsandbytes ships a library for torch's CUDA/ROCm version."""

from __future__ import annotations

import re

from bnbdoctor.facts import BnbFacts, Facts, SelectedLibrary
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, SUGGESTED_TORCH_CUDA
from bnbdoctor.knowledge.gpus import INT8_MATMUL_MIN
from bnbdoctor.knowledge.loader import (
    NEAREST_BUILD,
    OVERRIDE_NOCUBLASLT_BUG,
    ROCM_TAG_MISBUILT,
    XPU_LIBRARY,
    XPU_PER_ONEAPI_YEAR,
    import_crash,
)
from bnbdoctor.knowledge.selection import LibrarySelection, override_variable, tag_misbuilt
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, torch_of, versioned
from bnbdoctor.rules.native._shared import (
    _UPGRADE_TO_NEAREST,
    _native,
    _reachable_same_major,
    _shipped_versions,
    _tag_major,
    underlying_gap,
)

_BACKEND_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}  # bitsandbytes' own spelling


def _misbuilt(bnb: BnbFacts, runtime: tuple[int, int]) -> bool:
    release = release_tuple(bnb.version)
    return release is not None and tag_misbuilt(release, runtime)


def _override_name(facts: Facts, backend: str) -> str:
    """The override variable the installed release reads for this backend (BNB_CUDA_VERSION if none)."""
    bnb = bnb_of(facts)
    return override_variable(bnb.version if bnb else None, backend) or "BNB_CUDA_VERSION"


def _why_no_override(facts: Facts, sel: SelectedLibrary | LibrarySelection) -> str:
    bnb = bnb_of(facts)
    variable = override_variable(bnb.version if bnb else None, sel.backend)
    if variable is None:
        return f"{bnb.version if bnb else 'this release'} reads no override for {_BACKEND_NAMES.get(sel.backend)}"
    if "_nocublaslt" in sel.expected_file or OVERRIDE_NOCUBLASLT_BUG.contains(bnb.version if bnb else None):
        return (
            f"no {variable} value makes it load one here: it builds the override's file name wrongly for the "
            f"_nocublaslt builds of GPUs below compute capability {INT8_MATMUL_MIN.text}"
        )
    return f"no {variable} value makes it load one here"


def _override_works(facts: Facts) -> bool:
    """Whether the override in force loads a file of torch's major and the real loader (when it ran) agreed."""
    native, torch, load = _native(facts), torch_of(facts), facts.load
    sel = native.selection
    if sel is None or not sel.exists or torch is None:
        return False
    if load is not None and load.ran and load.ok is False:
        return False
    runtime = major_minor(torch.hip if sel.backend == "rocm" else torch.cuda)
    match = re.match(rf"libbitsandbytes_{sel.backend}(\d+)", sel.loaded_file or "")
    return bool(runtime and match and _tag_major(sel.backend, match.group(1)) == runtime[0])


#: What each release era does when the library for torch's version is missing (knowledge/selection.py):
#: the legacy loader raises, 0.43.1-0.45 fall back to the CPU library, 0.46+ fail at the first call.
_OUTCOME_FAMILIES: dict[str, tuple[str, ...]] = {
    "import_error": ("cuda_setup_failed_despite_gpu_available",),
    "cpu_fallback": ("compiled_without_gpu_support", "native_lib_none_attribute_errors"),
}


def _missing_binary_families(backend: str, outcome: str, runtime: str | None) -> list[str]:
    ids = ["cuda_binary_missing_for_torch_cuda_version", *_OUTCOME_FAMILIES.get(outcome, ())]
    wanted = major_minor(runtime)
    if backend == "cuda" and wanted is not None and wanted[0] < OLDEST_CUDA_MAJOR:
        ids.append("cuda_lt_11_unsupported")
    return ids


@rule(
    Severity.ERROR,
    "The installed bitsandbytes ships a library for torch's CUDA/ROCm version",
    needs=("native", "python"),
    covers=(
        "cuda_binary_missing_for_torch_cuda_version",
        "cuda_lt_11_unsupported",
        "cuda_setup_failed_despite_gpu_available",
        "compiled_without_gpu_support",
        "native_lib_none_attribute_errors",
        "rocm_version_tag_misparsed",
    ),
    references=(
        BNB_DOCS_INSTALL,
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1889",
    ),
)
def binary_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `python` facts. It is skipped when bitsandbytes is not installed or its version is
    unknown. It starts from bnbdoctor's prediction of which `libbitsandbytes_*` file the installed release will ask for:
    the release's own selection logic, replayed from torch's CUDA (or ROCm) version, the highest compute capability and
    the files in the package folder (see [the native chain](../native-chain.md)).

    It passes when the predicted file exists, including the case where a {{ loader.NEAREST_BUILD.first_text }}+ release falls back to the nearest
    packaged build of the same major. It stays silent when the CPU library is chosen on purpose (torch is not a
    CUDA/ROCm build, or it sees no GPU), when the package holds no compiled library at all ([BNB309](BNB309.md)), and
    when it holds no GPU library at all ([BNB308](BNB308.md)).

    When `BNB_CUDA_VERSION` or `BNB_ROCM_VERSION` is in force, [BNB302](BNB302.md) judges the override, and this rule
    judges what the release would pick **without** it: an override never hides that the release ships nothing for
    torch's version. Then the finding says both, and that unsetting the override alone does not help; it is a warning
    when the override itself loads a build of torch's major, an error otherwise.

    Otherwise it reports the file the release expects, the builds it actually ships, and what happens next for this
    release family. The fix depends on what is shipped:

    - torch is built for CUDA 10 or older: no bitsandbytes build exists, so torch has to change;
    - the release ships other builds of the same major and an override value makes this release load one of them (the
      same selection logic decides, so the `_nocublaslt` name bugs of {{ loader.CUDA_OVERRIDE_READ.first_minor }}–{{ loader.OVERRIDE_NOCUBLASLT_BUG.last_text }} rule some values out): that value, or
      upgrade. Only variables the release reads are named: `BNB_CUDA_VERSION` for CUDA, `BNB_ROCM_VERSION` for ROCm from
      {{ loader.NEAREST_BUILD.first_text }}; {{ loader.ROCM_WITHOUT_OVERRIDE.first_text }}–{{ loader.ROCM_WITHOUT_OVERRIDE.last_text }} ROCm builds read none, so there the fix is the upgrade;
    - {{ loader.ROCM_TAG_MISBUILT.first_text }}–{{ loader.ROCM_TAG_MISBUILT.last_text }} with ROCm 7.10 or newer: the release's tag-building bug (`major*10+minor`, so ROCm 7.14 asks for
      `libbitsandbytes_rocm84.so`); upgrade to {{ loader.ROCM_TAG_MISBUILT.below_text }}+, which spells `rocm714` and falls back to the nearest ROCm 7.x
      build (catalog `rocm_version_tag_misparsed`);
    - no build of that major at all: change torch or bitsandbytes.

    ## Why it matters

    bitsandbytes names its library after `torch.version.cuda` (or `torch.version.hip`), never after the driver or a
    local toolkit. When that exact file is missing, each release family fails differently:

    | release | what happens |
    |---|---|
    | up to {{ loader.LEGACY_CUDA_SETUP.last_text }} | `import bitsandbytes` raises `CUDA Setup failed despite GPU being available`; the log above it has `CUDA SETUP: Required library version not found: libbitsandbytes_cudaXYZ.so`. With a CUDA 10 runtime the log also says `CUDA version lower than 11 are currently not supported for LLM.int8()`. |
    | {{ loader.CPU_FALLBACK_ERA.first_text }} – {{ loader.CPU_FALLBACK_ERA.last_text }} | a warning `Could not find the bitsandbytes CUDA binary at …`, then the CPU library is loaded and the import succeeds. GPU features fail later (`compiled without GPU support`, or missing C functions). |
    | {{ loader.EXACT_MATCH_ERA.first_text }} – {{ loader.EXACT_MATCH_ERA.last_text }} | the import succeeds; the log has `bitsandbytes library load error: Configured CUDA binary not found at …` and the first native call raises the `CUDA VERSION MISMATCH` message. |
    | {{ loader.NEAREST_BUILD.first_text }}+ | the nearest packaged build of the same major is loaded, with a warning. Only a major with no build at all fails (`No compatible CUDA binary found at …`). |

    `CUDA Setup failed despite GPU being available` and `'NoneType' object has no attribute 'c…'` are wrappers. The
    missing file is the actual cause. This is common after a torch upgrade brings a newer CUDA than an older
    bitsandbytes knows, and with third-party builds made for a different CUDA.

    ## How to fix

    Compare torch's CUDA version with the builds in the package, without importing bitsandbytes:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda)"
    pip show -f bitsandbytes | grep libbitsandbytes_
    ```

    - Upgrade bitsandbytes. {{ loader.NEAREST_BUILD.first_text }}+ loads the nearest build of the same CUDA major: with the 0.50.2 wheel, torch cu129
      gets the CUDA 12.8 build and cu117 gets CUDA 11.8. Restart the Python process afterwards.
    - Or install a torch build for a CUDA version the installed release ships.
    - As a stop-gap, `export BNB_CUDA_VERSION=<build>` with a shipped build of the same major, preferably one that is
      not newer than torch's CUDA. Do not use it with releases up to {{ loader.OVERRIDE_NOCUBLASLT_BUG.last_text }} on GPUs below compute capability {{ gpus.INT8_MATMUL_MIN.text }}: those
      releases build a wrong `_nocublaslt` file name from the override.
    - torch for CUDA 10 or older: install a torch build for CUDA {{ cuda.SUGGESTED_TORCH_CUDA.0 }} or {{ cuda.SUGGESTED_TORCH_CUDA.1 }}. No bitsandbytes release has CUDA 10
      builds.
    - bitsandbytes from conda-forge or another third-party channel: maintainers support only their own wheels; install
      it from PyPI.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/2014 and
      https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1890 (ROCm 7.14 / 7.12 become `rocm84` / `rocm82`;
      fixed by PR #1889 in {{ loader.ROCM_TAG_MISBUILT.below_text }})

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1518 (maintainers: upgrade to the latest release)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1318 (the `_nocublaslt` override name, fixed in
      {{ loader.OVERRIDE_NOCUBLASLT_BUG.below_full }})
    """
    native, torch, bnb = _native(facts), torch_of(facts), bnb_of(facts)
    in_force = native.selection
    if in_force is None:
        return Skip("bitsandbytes is not installed or its version is unknown")
    # With an override in force, judge what the release would pick without it: the override must not
    # hide that the release ships nothing for torch's version (BNB302 judges the override itself).
    sel = underlying_gap(facts) if in_force.override is not None else in_force
    if sel is None or sel.backend == "cpu" or sel.outcome in ("loads", "cpu_library", "override_error"):
        return None
    if import_crash(sel.message) is not None:
        return None  # the release fails before it looks for a file: BNB318's
    if not bnb or not any(re.match(r"libbitsandbytes_(cuda|rocm|xpu)", f) for f in bnb.native_libraries):
        return None  # nothing GPU-capable is shipped at all: BNB308/BNB309 name that root cause
    backend = _BACKEND_NAMES.get(sel.backend, sel.backend.upper())
    runtime = {"rocm": torch.hip, "xpu": torch.xpu}.get(sel.backend, torch.cuda) if torch else None
    shipped = _shipped_versions(facts, sel.backend)
    effect = {
        "import_error": "`import bitsandbytes` raises 'CUDA Setup failed despite GPU being available' (the log "
        "says 'Required library version not found').",
        "cpu_fallback": f"bitsandbytes logs 'Could not find the bitsandbytes CUDA binary at …{sel.expected_file}' and "
        "loads its CPU library instead: every GPU operation then fails ('compiled without GPU "
        "support', or a missing method of the CPU library).",
        "error_on_first_call": "`import bitsandbytes` works, then the first quantized operation raises an error "
        f"about the missing binary ({sel.message}).",
    }.get(sel.outcome, sel.message or "")
    upgrade = list(_UPGRADE_TO_NEAREST)
    commands: list[str] = []
    covers = _missing_binary_families(sel.backend, sel.outcome, runtime)
    wanted = major_minor(runtime)
    if sel.backend == "xpu":
        fix = (
            "This bitsandbytes ships no XPU library for torch's oneAPI version; install a release with XPU "
            f"builds ({XPU_LIBRARY.first_text}+, versioned per oneAPI year from {XPU_PER_ONEAPI_YEAR.first_text})."
        )
        commands = [f'pip install -U "bitsandbytes{XPU_LIBRARY.pip_spec()}"']
    elif (
        sel.backend == "rocm"
        and wanted
        and "rocm" in sel.expected_file
        and ROCM_TAG_MISBUILT.contains(bnb.version)
        and _misbuilt(bnb, wanted)
    ):
        right = f"libbitsandbytes_rocm{wanted[0]}{wanted[1]}"
        effect = (
            f"This release builds the ROCm tag as major*10+minor, so ROCm {wanted[0]}.{wanted[1]} becomes "
            f"'{sel.expected_file.split('rocm')[1].split('.')[0]}' instead of '{wanted[0]}{wanted[1]}': it looks for "
            f"{sel.expected_file}, which no release ships, and reports 'Configured ROCm binary not found' at the first "
            f"native call. {right} is the name {ROCM_TAG_MISBUILT.below_text}+ asks for."
        )
        fix = (
            f"Upgrade bitsandbytes to {ROCM_TAG_MISBUILT.below_text} or newer, which spells the ROCm tag correctly "
            f"(ROCm {wanted[0]}.{wanted[1]} → rocm{wanted[0]}{wanted[1]}) and picks the nearest ROCm {wanted[0]}.x "
            f"build; {bnb.version} reads no override for ROCm, so only a source build for the installed ROCm helps "
            "without upgrading."
        )
        commands = upgrade
        covers = ["rocm_version_tag_misparsed"]
    else:
        major = wanted[0] if wanted else 0
        reachable = _reachable_same_major(facts, sel.backend, major, wanted)
        if sel.backend == "cuda" and major and major < OLDEST_CUDA_MAJOR:
            fix = (
                f"CUDA {runtime} is older than any bitsandbytes build ({OLDEST_CUDA_MAJOR}.x is the oldest "
                f"shipped). Install a torch build for CUDA {' or '.join(SUGGESTED_TORCH_CUDA)}, then bitsandbytes."
            )
        elif reachable:
            variable, value = reachable
            fix = (
                f"Point bitsandbytes at a shipped build of the same {backend} major, {variable}={value}, whose "
                f"runtime torch already loads; or upgrade bitsandbytes ({NEAREST_BUILD.first_text}+ picks the nearest "
                "build of the same major by itself)."
            )
            commands = [f"export {variable}={value}", *upgrade]
        elif any(_tag_major(sel.backend, v) == major for v in shipped):
            fix = f"This release ships other {backend} {major}.x builds, but {_why_no_override(facts, sel)}: upgrade bitsandbytes."
            commands = upgrade
        else:
            fix = (
                f"This bitsandbytes has no {backend} {major}.x build at all (shipped: {', '.join(shipped) or 'none'}). "
                f"Install a torch build for a {backend} version it ships, or a bitsandbytes release built for yours."
            )
    evidence = [
        ev("torch", f"{torch.version if torch else '?'} ({backend} {runtime})", "python.torch"),
        ev("expected", sel.expected_file, "native.selection.expected_file"),
        ev("shipped builds", ", ".join(shipped) or "none", "python.bitsandbytes.native_libraries"),
    ]
    title = (
        f"{versioned(facts, 'bitsandbytes', bnb.version)} has no library for torch's {backend} {runtime}: "
        f"{sel.expected_file} is missing"
    )
    severity = None
    if in_force.override is not None:
        variable = _override_name(facts, sel.backend)
        works = _override_works(facts)
        title += f" (hidden by {variable}={in_force.override})"
        effect = (
            f"{variable}={in_force.override} replaces that choice today ({'it loads' if works else 'it asks for'} "
            f"{in_force.expected_file}; BNB302 judges it). Without it: {effect} Unsetting the override alone "
            "therefore does not fix this machine."
        )
        evidence.insert(0, ev(variable, repr(in_force.override), f"env.{variable}"))
        severity = Severity.WARNING if works else None
    return Hit(
        title=title,
        explanation=f"bitsandbytes chooses its native library from torch's {backend} version, not from the driver "
        f"or a local toolkit. {effect}",
        evidence=evidence,
        remediation=Remediation(fix, commands),
        severity=severity,
        covers=covers,
    )
