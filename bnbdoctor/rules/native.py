"""Rules about the native-library chain: the file bitsandbytes picks, what it needs, where the
loader finds it, the symbol versions it requires, and what the real loader said."""

from __future__ import annotations

import re

from bnbdoctor.derive import conda_env, predict_without_override, selection_input
from bnbdoctor.facts import AbiNeed, BnbFacts, Facts, NativeFacts, ResolvedDependency, SelectedLibrary
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, SUFFIXED_WHEEL_MAJORS, SUGGESTED_TORCH_CUDA
from bnbdoctor.knowledge.gpus import INT8_MATMUL_MIN
from bnbdoctor.knowledge.loader import (
    CPU_FALLBACK_ERA,
    CPU_LIBRARY_NEEDS_OPENMP,
    EMPTY_OVERRIDE_IGNORED,
    GLIBC_234_BUILDS,
    LEGACY_CUDA_SETUP,
    NEAREST_BUILD,
    OVERRIDE_NOCUBLASLT_BUG,
    ROCM_IN_PYPI_WHEEL,
    ROCM_PREVIEW_WHEELS,
    ROCM_REJECTS_CUDA_OVERRIDE,
    ROCM_TAG_MISBUILT,
    XPU_LIBRARY,
    XPU_PER_ONEAPI_YEAR,
)
from bnbdoctor.knowledge.platforms import LINUX_ONLY_WHEEL, PYTHON_DLL_PATH_SEARCH_DROPPED, WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import full, minor
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM
from bnbdoctor.knowledge.selection import LibrarySelection, override_reaching, override_variable, tag_misbuilt
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    bnb_of,
    ev,
    torch_of,
    unknown_version,
    versioned,
    visible_gpus,
)

_PRELOADED = "loaded by torch before bitsandbytes"
_NOT_SEARCHED = "PATH (not searched"
#: pip wheels that bring each CUDA library (the same ones torch's CUDA wheels depend on).
_CUDA_WHEELS = {
    "cudart": "nvidia-cuda-runtime",
    "cublas": "nvidia-cublas",
    "cublasLt": "nvidia-cublas",
    "cusparse": "nvidia-cusparse",
    "nvJitLink": "nvidia-nvjitlink",
}


def _native(facts: Facts) -> NativeFacts:
    native = facts.native
    assert native is not None
    return native


def _library_name(native: NativeFacts) -> str:
    return native.selection.loaded_file if native.selection and native.selection.loaded_file else "the library"


def _missing_evidence(missing: list[ResolvedDependency]) -> list[Evidence]:
    """One row per library the loader cannot find, with where else bnbdoctor saw it."""
    return [
        ev(
            d.name,
            f"not found; elsewhere: {', '.join(d.elsewhere) or 'nowhere bnbdoctor looked'}",
            "native.dependencies",
        )
        for d in missing
    ]


def _loader_evidence(facts: Facts) -> list[Evidence]:
    load = facts.load
    if load is not None and load.ran and load.ok is False and load.error:
        return [ev("the real loader said", load.error, "load.error")]
    return []


def _folder(path: str) -> str:
    return re.split(r"[\\/][^\\/]*$", path)[0]


#: The upgrade to the first release that picks the nearest build of the same major by itself. Commands are
#: written plainly: bnbdoctor.remedy narrows the specifier to what installs here, or drops the command.
_UPGRADE_TO_NEAREST = (f'pip install -U "bitsandbytes>={full(NEAREST_BUILD.first_text)}"',)


def _shipped_tag(backend: str, name: str) -> str | None:
    """The version tag of a shipped library of ``backend`` (``libbitsandbytes_cuda121.so`` -> "121"), or None."""
    match = re.match(rf"libbitsandbytes_{backend}(\d+)(?:_nocublaslt)?\.(so|dll|dylib)$", name)
    return match.group(1) if match else None


def _shipped_versions(facts: Facts, backend: str) -> list[str]:
    bnb = bnb_of(facts)
    found: list[str] = []
    for name in bnb.native_libraries if bnb else []:
        tag = _shipped_tag(backend, name)
        if tag is not None and tag not in found:
            found.append(tag)
    return sorted(found, key=int)


def _unresolved(native: NativeFacts, kinds: tuple[str, ...]) -> list[ResolvedDependency]:
    return [d for d in native.dependencies if d.kind in kinds and d.resolved is None]


#: Symbol-version namespaces the ABI rules report (BNB306: GCC runtimes, BNB307: glibc).
RUNTIME_NAMESPACES = ("CXXABI", "GLIBCXX", "GCC", "GOMP", "OMP", "GOACC")
GLIBC_NAMESPACES = ("GLIBC",)


def format_problem(native: NativeFacts, os_name: str, arch: str) -> str | None:
    """Why the selected file cannot be loaded on this platform at all, or None."""
    if native.error:
        return native.error
    expected = {"linux": "ELF", "windows": "PE", "macos": "Mach-O"}.get(os_name)
    if expected and native.format and native.format != expected:
        article = "an" if native.format[0] in "AEIOU" else "a"
        return f"{article} {native.format} file, not {expected}"
    if native.format == "ELF" and native.machine:
        wanted = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64", "ppc64le": "EM_PPC64"}.get(arch)
        if wanted and wanted != native.machine:
            return f"built for {native.machine}, this machine is {arch}"
    return None


def static_problem(facts: Facts) -> bool:
    """True when a static finding already explains a failed load (so BNB314 stays quiet)."""
    native = _native(facts)
    platform = facts.platform
    if platform and format_problem(native, platform.os, platform.arch):
        return True
    missing_dep = any(d.resolved is None and d.kind != "system" for d in native.dependencies)
    reported = RUNTIME_NAMESPACES + GLIBC_NAMESPACES
    return missing_dep or any(m.split("_")[0] in reported for a in native.abi for m in a.missing)


#: Where BNB306 puts a conda-forge C++ runtime for an interpreter that is not a conda env.
RUNTIME_ENV = "$HOME/.local/share/bnbdoctor/cxx-runtime"


@rule(
    "BNB301",
    "bnb-binary-missing-for-torch-cuda",
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

    It passes when the predicted file exists, including the case where a 0.50+ release falls back to the nearest
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
      same selection logic decides, so the `_nocublaslt` name bugs of 0.41–0.43 rule some values out): that value, or
      upgrade. Only variables the release reads are named: `BNB_CUDA_VERSION` for CUDA, `BNB_ROCM_VERSION` for ROCm from
      0.50; 0.46–0.49 ROCm builds read none, so there the fix is the upgrade;
    - 0.46–0.49 with ROCm 7.10 or newer: the release's tag-building bug (`major*10+minor`, so ROCm 7.14 asks for
      `libbitsandbytes_rocm84.so`); upgrade to 0.50+, which spells `rocm714` and falls back to the nearest ROCm 7.x
      build (catalog `rocm_version_tag_misparsed`);
    - no build of that major at all: change torch or bitsandbytes.

    ## Why it matters

    bitsandbytes names its library after `torch.version.cuda` (or `torch.version.hip`), never after the driver or a
    local toolkit. When that exact file is missing, each release family fails differently:

    | release | what happens |
    |---|---|
    | up to 0.43.0 | `import bitsandbytes` raises `CUDA Setup failed despite GPU being available`; the log above it has `CUDA SETUP: Required library version not found: libbitsandbytes_cudaXYZ.so`. With a CUDA 10 runtime the log also says `CUDA version lower than 11 are currently not supported for LLM.int8()`. |
    | 0.43.1 – 0.45.x | a warning `Could not find the bitsandbytes CUDA binary at …`, then the CPU library is loaded and the import succeeds. GPU features fail later (`compiled without GPU support`, or missing C functions). |
    | 0.46 – 0.49 | the import succeeds; the log has `bitsandbytes library load error: Configured CUDA binary not found at …` and the first native call raises the `CUDA VERSION MISMATCH` message. |
    | 0.50+ | the nearest packaged build of the same major is loaded, with a warning. Only a major with no build at all fails (`No compatible CUDA binary found at …`). |

    `CUDA Setup failed despite GPU being available` and `'NoneType' object has no attribute 'c…'` are wrappers. The
    missing file is the actual cause. This is common after a torch upgrade brings a newer CUDA than an older
    bitsandbytes knows, and with third-party builds made for a different CUDA.

    ## How to fix

    Compare torch's CUDA version with the builds in the package, without importing bitsandbytes:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda)"
    pip show -f bitsandbytes | grep libbitsandbytes_
    ```

    - Upgrade bitsandbytes. 0.50+ loads the nearest build of the same CUDA major: with the 0.50.2 wheel, torch cu129
      gets the 12.8 build and cu117 gets 11.8. Restart the Python process afterwards.
    - Or install a torch build for a CUDA version the installed release ships.
    - As a stop-gap, `export BNB_CUDA_VERSION=<build>` with a shipped build of the same major, preferably one that is
      not newer than torch's CUDA. Do not use it with releases up to 0.43.3 on GPUs below compute capability 7.5: those
      releases build a wrong `_nocublaslt` file name from the override.
    - torch for CUDA 10 or older: install a torch build for CUDA 11.8 or 12.x. No bitsandbytes release has CUDA 10
      builds.
    - bitsandbytes from conda-forge or another third-party channel: maintainers support only their own wheels; install
      it from PyPI.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/2014 and
      https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1890 (ROCm 7.14 / 7.12 become `rocm84` / `rocm82`;
      fixed by PR #1889 in 0.50)

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1518 (maintainers: upgrade to the latest release)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1318 (the `_nocublaslt` override name, fixed in
      0.44.0)
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
    elif sel.backend == "rocm" and wanted and ROCM_TAG_MISBUILT.contains(bnb.version) and _misbuilt(bnb, wanted):
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


_BACKEND_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}  # bitsandbytes' own spelling


def underlying_gap(facts: Facts) -> LibrarySelection | None:
    """With an override in force: what the release would pick without it, when that fails too."""
    under = predict_without_override(facts)
    if under is None or under.backend == "cpu" or under.outcome in ("loads", "cpu_library", "override_error"):
        return None
    return under


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


def _reachable_same_major(
    facts: Facts, backend: str, major: int, wanted: tuple[int, int] | None
) -> tuple[str, str] | None:
    """The override (variable, value) that makes this release load a shipped build of torch's major,
    preferring the newest one not above torch's version; None when no value reaches one."""
    inputs, bnb = selection_input(facts), bnb_of(facts)
    if inputs is None or bnb is None:
        return None
    found: list[tuple[tuple[int, int], tuple[str, str]]] = []
    for name in bnb.native_libraries:
        tag = _shipped_tag(backend, name)
        if tag is None or _tag_major(backend, tag) != major:
            continue
        reached = override_reaching(inputs, name)
        if reached is not None:
            found.append((_tag_version(backend, tag), reached))
    found.sort()
    lower = [f for f in found if f[0] <= (wanted or (0, 0))]
    pick = (lower or found)[-1] if found else None
    return pick[1] if pick else None


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


def _tag_version(backend: str, tag: str) -> tuple[int, int]:
    """ "121" -> (12, 1) for CUDA, "714" -> (7, 14) for ROCm (how 0.50 reads file names)."""
    cut = 1 if backend == "rocm" else (2 if len(tag) >= 3 else 1)
    return int(tag[:cut]), int(tag[cut:] or 0)


def _tag_major(backend: str, tag: str) -> int:
    return _tag_version(backend, tag)[0]


@rule(
    "BNB302",
    "bnb-cuda-version-override",
    Severity.ERROR,
    "BNB_CUDA_VERSION / BNB_ROCM_VERSION are unset or point at a usable build",
    needs=("native", "python"),
    covers=("bnb_cuda_version_override_mismatch",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1559", BNB_DOCS_INSTALL),
    refutes=("override-fits-torch",),
)
def override(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `python` facts and the `BNB_CUDA_VERSION` environment variable — or
    `BNB_ROCM_VERSION` when torch is a ROCm build and bitsandbytes is 0.50+ (which ignores `BNB_CUDA_VERSION` on ROCm).
    It is skipped when the variable it reads is not set. An empty value counts as set.

    It reports one finding, for the first case that applies:

    - **info**: the CPU library is chosen (torch sees no CUDA GPU), so the variable does nothing today;
    - **warning**: the value is empty and the release is 0.49 or older — ignored today (0.43–0.49 told users to clear
      the override this way), but 0.50+ rejects it, so the next upgrade breaks the import;
    - **error**: the release rejects the value: 0.50+ requires digits only; 0.47–0.49 refuse any non-empty
      `BNB_CUDA_VERSION` when torch is a ROCm build;
    - **error**: the value names a library the package does not ship, e.g. `libbitsandbytes_cuda117.so` in a release
      without CUDA 11.7. The text says what that release then does: ≤ 0.43.0 fails at import, 0.43.1–0.45 fall back to
      the CPU library, 0.46+ raise at the first quantized operation;
    - **error** (or **warning** when that runtime is on the loader path): the value picks a build for another CUDA major
      than torch's;
    - **info**: the override is in force and matches torch's major version, which can work.

    It is skipped for 0.46 ROCm builds, which ignore `BNB_CUDA_VERSION`. Whatever it reports, it also asks what the
    release would pick without the override: when the release ships nothing for torch's version either (reported by
    [BNB301](BNB301.md)), the fix says so and gives the upgrade, or the override value that does reach a shipped build
    of torch's major, instead of "unset it" alone. Errors of this rule are a root cause: [BNB303](BNB303.md)'s missing
    CUDA libraries of an override's build are listed under it.

    ## Why it matters

    `BNB_CUDA_VERSION=XYZ` replaces bitsandbytes' own choice with `libbitsandbytes_cudaXYZ`. It is meant for running
    bitsandbytes on a CUDA version other than torch's, and it is easy to forget: Docker images and notebook platforms
    have baked it in, and it survives upgrades of torch and bitsandbytes. What a bad value does depends on the release:

    | release | override behaviour |
    |---|---|
    | 0.41 – 0.43.0 | used only when non-empty; a missing file makes `import bitsandbytes` fail |
    | 0.43.1 – 0.45.x | an empty value is ignored; a missing file is handled like any missing file: a warning, then the CPU library |
    | 0.46 – 0.49 | an empty value is ignored; a missing file raises at the first native call; ROCm builds (0.47+) refuse any non-empty `BNB_CUDA_VERSION` |
    | 0.50+ | exactly `libbitsandbytes_{cuda,rocm}<value>` with no fallback; the value must be all digits, so `export BNB_CUDA_VERSION=` raises `value must be digits only` |

    Up to 0.43.3 the override also builds a wrong name for the `_nocublaslt` variants used on GPUs below compute
    capability 7.5 (`libbitsandbytes_cuda124_nocublaslt124.so` in issue #1312); 0.44.0 fixed it.

    The override chooses only bitsandbytes' file. The `libcudart.so.X` that file needs still comes from the normal
    loader search. An override to another CUDA major therefore needs that major's runtime on the loader path next to
    torch's. The release's own warning says so: `make sure the right libcudart.so is in your LD_LIBRARY_PATH`.

    ## How to fix

    Find out where the variable comes from:

    ```bash
    env | grep -E '^BNB_(CUDA|ROCM)_VERSION='
    grep -rn BNB_CUDA_VERSION ~/.bashrc ~/.profile /etc/environment 2>/dev/null
    ```

    - Nearly always: remove it, unless the release ships nothing for torch's version without it (the finding says so;
      upgrade bitsandbytes first). Use `unset BNB_CUDA_VERSION`, not `export BNB_CUDA_VERSION=`, because 0.50+ rejects the
      empty value. Also delete it from shell profiles, Dockerfiles (`ENV BNB_CUDA_VERSION=…`), notebook settings and job
      scripts.
    - If you really run bitsandbytes on another CUDA than torch's, set it to a build the package ships (`pip show -f
      bitsandbytes | grep libbitsandbytes_`), and put that CUDA's `lib64` folder on `LD_LIBRARY_PATH`.
    - ROCm with 0.50+: the variable is `BNB_ROCM_VERSION`. 0.47–0.49 ROCm builds accept no override at all.

    ## Severity note

    lowered to **info** when the override has no effect or is harmless

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1318 (the `_nocublaslt` override name, fixed in
      0.44.0)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/793 (override plus `LD_LIBRARY_PATH` on a legacy
      release)
    """
    native, torch, bnb = _native(facts), torch_of(facts), bnb_of(facts)
    release = release_tuple(bnb.version if bnb else None) or (0,)
    rocm = bool(torch and torch.hip)
    strict = NEAREST_BUILD.contains(release)
    variable = "BNB_ROCM_VERSION" if rocm and strict else "BNB_CUDA_VERSION"
    value = facts.env.get(variable)
    if value is None:
        if rocm and strict and "BNB_CUDA_VERSION" in facts.env:
            return Skip(
                f"BNB_CUDA_VERSION is ignored on ROCm from {NEAREST_BUILD.first_text} (BNB_ROCM_VERSION is not set)"
            )
        return Skip(f"{variable} is not set")
    if rocm and not strict and not ROCM_REJECTS_CUDA_OVERRIDE.contains(release):
        return Skip(f"bitsandbytes {bnb.version if bnb else '?'} ROCm builds ignore BNB_CUDA_VERSION")
    sel = native.selection
    evidence = [ev(variable, repr(value), f"env.{variable}")]
    gap = underlying_gap(facts)
    unset = _unset_remediation(facts, variable, gap, "")
    if sel is None or sel.backend == "cpu":
        return Hit(
            title=f"{variable}={value!r} is set but has no effect here",
            explanation="The override only applies when torch sees a GPU; this machine loads the CPU library.",
            evidence=evidence,
            remediation=unset,
            severity=Severity.INFO,
            covers=[],  # an override without effect diagnoses no failure
        )
    if value == "" and not strict:
        return Hit(
            title=f"{variable} is set but empty: ignored by {bnb.version}, "  # type: ignore[union-attr]
            f"rejected by {NEAREST_BUILD.first_text}+",
            explanation=f"Releases {EMPTY_OVERRIDE_IGNORED.first_text}–{EMPTY_OVERRIDE_IGNORED.last_text} told users "
            "to clear the override with `export BNB_CUDA_VERSION=`; they ignore an empty value. From "
            f"{NEAREST_BUILD.first_text} the variable being set at all counts, and an empty value raises "
            "\"BNB_CUDA_VERSION='': value must be digits only\" — the next upgrade will break the import.",
            evidence=evidence,
            remediation=unset,
            severity=Severity.WARNING,
        )
    evidence.append(ev("selected", sel.expected_file, "native.selection.expected_file"))
    if sel.outcome == "override_error":
        return Hit(
            title=f"{variable}={value!r} is rejected by {versioned(facts, 'bitsandbytes', bnb.version)}",  # type: ignore[union-attr]
            explanation=f"bitsandbytes raises '{sel.message}'"
            + (
                f": on ROCm builds {ROCM_REJECTS_CUDA_OVERRIDE.first_text}–{ROCM_REJECTS_CUDA_OVERRIDE.last_text} "
                "refuse any non-empty BNB_CUDA_VERSION."
                if rocm
                else "."
            )
            + (
                f" {NEAREST_BUILD.first_text} checks that the variable is set, not that it is non-empty; the old advice "
                "'export BNB_CUDA_VERSION=' now breaks the import."
                if value == ""
                else ""
            ),
            evidence=evidence,
            remediation=unset,
        )
    torch_major = (major_minor(torch.hip if rocm else torch.cuda) or (0, 0))[0] if torch else 0
    shipped = _shipped_versions(facts, sel.backend)
    wanted = major_minor(torch.hip if rocm else torch.cuda) if torch else None
    reachable = _reachable_same_major(facts, sel.backend, torch_major, wanted)
    alternative = f", or set it to a shipped build of torch's major version ({reachable[1]})" if reachable else ""
    if not sel.exists:
        bug = (
            " — built by this release's name-building bug for _nocublaslt builds"
            if "nocubla" in sel.expected_file
            else ""
        )
        effect = {
            "import_error": "`import bitsandbytes` fails ('CUDA Setup failed despite GPU being available')",
            "cpu_fallback": "bitsandbytes falls back to its CPU library, so GPU operations fail",
        }.get(sel.outcome, "the first quantized operation raises a 'binary not found' error")
        return Hit(
            title=f"{variable}={value} asks for {sel.expected_file}, which bitsandbytes does not ship",
            explanation=f"With the override set, bitsandbytes asks for exactly that file{bug}. It is missing: {effect}.",
            evidence=[
                *evidence,
                ev("shipped builds", ", ".join(shipped) or "none", "python.bitsandbytes.native_libraries"),
            ],
            remediation=_unset_remediation(facts, variable, gap, alternative),
        )
    wanted_major = _tag_major(sel.backend, value) if value.isdigit() and len(value) >= 2 else None
    if wanted_major is not None and torch_major and wanted_major != torch_major:
        runtime = next(
            (d for d in native.dependencies if d.name.startswith(("libcudart", "cudart", "libamdhip"))), None
        )
        found = runtime is not None and runtime.resolved is not None
        where = (
            f"it resolves to {runtime.resolved} ({runtime.via})"
            if runtime is not None and runtime.resolved is not None
            else "no such runtime is on the loader path, so loading fails"
        )
        return Hit(
            title=f"{variable}={value} loads a {sel.backend.upper()} {wanted_major} build next to torch's "
            f"{sel.backend.upper()} {torch_major}",
            explanation=f"{sel.loaded_file} needs the {sel.backend.upper()} {wanted_major} runtime, which torch does not "
            f"load; {where}. "
            + (
                "bitsandbytes supports this only if that runtime is the one on LD_LIBRARY_PATH; two major versions "
                "in one process are fragile."
                if found
                else ""
            ),
            evidence=evidence + _loader_evidence(facts),
            remediation=_unset_remediation(facts, variable, gap, alternative),
            severity=Severity.WARNING if found else Severity.ERROR,
        )
    return Hit(
        title=f"{variable}={value} is in force: bitsandbytes loads {sel.loaded_file}",
        explanation="The override replaces bitsandbytes' own choice. It fits torch's major version, so it can work; "
        "remember it is set when you upgrade torch or bitsandbytes."
        + (
            f" Without it, bitsandbytes would ask for {gap.expected_file}, which it does not ship (BNB301): do not "
            "just unset it, upgrade bitsandbytes first."
            if gap is not None
            else ""
        ),
        evidence=evidence,
        remediation=Remediation("Nothing to do if this is intended.", []),
        severity=Severity.INFO,
        covers=[],  # a fitting override diagnoses no failure
    )


def _unset_remediation(facts: Facts, variable: str, gap: LibrarySelection | None, alternative: str) -> Remediation:
    """Unset the override, unless the release ships nothing for torch's version without it: then say
    both, and give the upgrade (or the override value that does reach a shipped build)."""
    if gap is None:
        return Remediation(f"Unset {variable}{alternative}.", [f"unset {variable}"])
    torch = torch_of(facts)
    upgrade = list(_UPGRADE_TO_NEAREST)
    wanted = major_minor(torch.hip if gap.backend == "rocm" else torch.cuda) if torch else None
    reachable = _reachable_same_major(facts, gap.backend, wanted[0], wanted) if wanted else None
    text = (
        f"Unsetting {variable} alone does not help: without it bitsandbytes asks for {gap.expected_file}, which "
        f"it does not ship either. Upgrade bitsandbytes ({NEAREST_BUILD.first_text}+ picks the nearest build of the "
        f"same major) and unset {variable}"
    )
    if reachable:
        text += f"; or set {reachable[0]}={reachable[1]}, a shipped build of torch's major version"
        return Remediation(text + ".", [f"export {reachable[0]}={reachable[1]}", *upgrade])
    return Remediation(text + ".", [*upgrade, f"unset {variable}"])


def _sycl_mismatch(facts: Facts, deps: list[ResolvedDependency]) -> Hit:
    """BNB316's branch for an XPU library linked against another SYCL/oneAPI runtime major than the installed one."""
    native, bnb = _native(facts), bnb_of(facts)
    needed = ", ".join(d.name for d in deps)
    present = sorted({p.rsplit("/", 1)[-1] for d in deps for p in d.other_sonames})
    versioned_xpu = XPU_PER_ONEAPI_YEAR.contains(bnb.version if bnb else None)
    return Hit(
        title=f"{_library_name(native)} needs {needed}, but this oneAPI runtime provides {', '.join(present)}",
        explanation=f"The XPU library is linked against one SYCL/oneAPI runtime major ({needed}); the runtime "
        f"installed here (torch's XPU wheels or the oneAPI toolkit) is another one ({', '.join(present)}). The "
        "loader matches the SONAME exactly, so loading fails; bitsandbytes then falls back to a mock library and "
        "the error appears later, as a RuntimeError at the first native call.",
        evidence=[
            ev(d.name, f"not found; present instead: {', '.join(d.other_sonames)}", "native.dependencies") for d in deps
        ]
        + _loader_evidence(facts),
        remediation=Remediation(
            (
                "Install the oneAPI runtime this XPU library was built for, or a torch XPU build that brings it."
                if versioned_xpu
                else f"Upgrade bitsandbytes: {XPU_PER_ONEAPI_YEAR.first_text}+ ships one XPU library per oneAPI year "
                "and loads the one for the runtime torch uses; or install the oneAPI runtime this library was built "
                "for."
            ),
            [
                f"ldd {native.library or _xpu_library_glob(facts)} | grep -i sycl",
                *([] if versioned_xpu else [f'pip install -U "bitsandbytes{XPU_PER_ONEAPI_YEAR.pip_spec()}"']),
            ],
        ),
        covers=["xpu_sycl_runtime_mismatch"],
    )


def _xpu_library_glob(facts: Facts) -> str:
    bnb = bnb_of(facts)
    return f"{bnb.location if bnb and bnb.location else '<site-packages>/bitsandbytes'}/libbitsandbytes_xpu*.so"


def _wheel_for(name: str) -> str | None:
    """The pip wheel that ships a CUDA library: nvidia-*-cu11/-cu12; CUDA 13's are unsuffixed."""
    match = re.match(r"lib(cudart|cublasLt|cublas|cusparse|nvJitLink)\.so\.(\d+)", name)
    if not match:
        return None
    base = _CUDA_WHEELS[match.group(1)]
    return f"{base}-cu{match.group(2)}" if match.group(2) in SUFFIXED_WHEEL_MAJORS else base


@rule(
    "BNB303",
    "cuda-library-not-found",
    Severity.ERROR,
    "Every CUDA library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=("libcudart_not_found_legacy_cuda_setup", "cuda_shared_lib_missing_libcusparse"),
    references=("https://man7.org/linux/man-pages/man8/ld.so.8.html", BNB_DOCS_INSTALL),
    requires=("library-readable", "override-fits-torch"),
)
def cuda_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `platform` facts. It is skipped on Windows, where [BNB311](BNB311.md) checks DLL
    imports. bnbdoctor reads the `DT_NEEDED` entries of the library bitsandbytes will load and resolves each one the way
    the dynamic loader would. The rule reports the CUDA libraries among them (`libcudart`, `libcublas`, `libcublasLt`,
    `libcusparse`, `libnvJitLink`) that no step of the search finds.

    The search, in order: libraries torch has already loaded, `LD_LIBRARY_PATH`, the library's `RUNPATH`,
    `/etc/ld.so.cache` and the default directories (details in [the native chain](../native-chain.md)). For each missing
    library bnbdoctor also looks outside that search: CUDA toolkit folders, torch's `nvidia-*` wheel folders,
    `/opt/rocm/lib`, `/usr/lib/wsl/lib` and `$CONDA_PREFIX/lib`. Whatever it finds there becomes the fix:

    - the file exists in a folder the loader does not search: add that folder to `LD_LIBRARY_PATH`;
    - it exists nowhere: install the matching pip wheels (`nvidia-cuda-runtime-cu11`, `nvidia-cublas-cu12`, …).

    When the real load check ran, the loader's own message is quoted as evidence.

    ## Why it matters

    A bitsandbytes CUDA library is linked against one CUDA major: `libcudart.so.11.0` or `libcudart.so.12`, the matching
    cuBLAS, and up to 0.49 also cuSPARSE. It usually works because torch has already loaded libraries with exactly those
    SONAMEs before bitsandbytes is imported. It fails when:

    - bitsandbytes' build belongs to another CUDA major than the libraries on the machine, for example a cu11x library
      on a system with only CUDA 12 (`libcusparse.so.11: cannot open shared object file`);
    - torch is not a CUDA build, or loads no library with that SONAME, and the system has no toolkit on the loader path;
    - a toolkit is installed in a version folder (`/usr/local/cuda-11.8`) that is neither registered with `ldconfig` nor
      on `LD_LIBRARY_PATH`.

    The loader reports the first missing name: `OSError: libcudart.so.11.0: cannot open shared object file: No such file
    or directory`. The legacy setup of 0.41–0.42 wrapped this in its own search messages (`libcudart.so not found in any
    environmental path`). That search only fed messages: the file was still resolved by the dynamic loader, which is
    what this rule models.

    ## Example notes

    Here torch 2.0.1+cu118 from download.pytorch.org carries its CUDA libraries under hashed file names, so nothing with
    the SONAME `libcudart.so.11.0` is preloaded, and the CUDA 11.8 toolkit in `/usr/local/cuda-11.8` is on no search
    path.

    ## How to fix

    Ask the loader directly, then compare the major versions it wants with torch's. `ldd` does not know what torch
    preloads, so its `not found` matters only for libraries torch does not load either:

    ```bash
    ldd /path/to/site-packages/bitsandbytes/libbitsandbytes_cudaXYZ.so | grep 'not found'
    python -c "import torch; print(torch.version.cuda)"
    ldconfig -p | grep -E 'libcudart|libcublas'
    ```

    - The library exists in a folder outside the search: add that folder to `LD_LIBRARY_PATH` (in the shell profile or
      job script), or register it with `ldconfig` (a file in `/etc/ld.so.conf.d/`, then `sudo ldconfig`).
    - The major version is wrong for this machine: install torch and bitsandbytes for the CUDA you actually have. A
      current bitsandbytes with a cu12x torch wheel needs no system CUDA at all.
    - Nothing on the machine has it: install the libraries as pip wheels for that major (e.g. `pip install
      nvidia-cusparse-cu11`) and put their `lib` folder on `LD_LIBRARY_PATH`. A CUDA build of torch brings them and
      preloads them itself.
    - Legacy releases (up to 0.43.0): upgrade; their CUDA setup messages do not reflect how the library is really loaded
      ([BNB205](BNB205.md)).

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (search order for `DT_NEEDED` entries)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/60 (`libcublas.so.11: cannot open shared object
      file`)
    """
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("cuda",))
    if not missing:
        return None
    names = ", ".join(d.name for d in missing)
    commands, hints = [], []
    folders = []
    for dep in missing:
        if dep.elsewhere:
            folder = _folder(dep.elsewhere[0])
            if folder not in folders:
                folders.append(folder)
            hints.append(f"{dep.name} exists in {folder}, which is not on the loader path")
    if folders:
        commands.append(f"export LD_LIBRARY_PATH={':'.join(folders)}:$LD_LIBRARY_PATH")
    wheels = sorted({w for d in missing if not d.elsewhere and (w := _wheel_for(d.name))})
    if wheels:
        commands.append("pip install " + " ".join(wheels))
    fix = (
        ("; ".join(hints) + ". " if hints else "")
        + ("Add that folder to LD_LIBRARY_PATH (persist it in your shell profile). " if folders else "")
        + (
            "The simplest fix is a CUDA build of torch, which brings these libraries and loads them before "
            "bitsandbytes. Installing the wheels alone also needs their lib folders (site-packages/nvidia/*/lib) on "
            "LD_LIBRARY_PATH."
            if wheels
            else ""
        )
    )
    return Hit(
        title=f"{_library_name(native)} needs {names}, which the loader cannot find",
        explanation="The library's DT_NEEDED entries are resolved by SONAME: torch's already-loaded copies, then "
        f"{', '.join(s for s in native.search_order[1:])}. None of them has {names}, so loading fails with "
        f"'{missing[0].name}: cannot open shared object file: No such file or directory'.",
        evidence=[
            ev("searched", " → ".join(native.search_order), "native.search_order"),
            *_missing_evidence(missing),
            *_loader_evidence(facts),
        ],
        remediation=Remediation(fix.strip(), commands),
        covers=_missing_library_families(facts, missing),
    )


def _missing_library_families(facts: Facts, missing: list[ResolvedDependency]) -> list[str]:
    """A missing runtime is the legacy setup's 'libcudart.so not found' on releases that run it; any other
    CUDA library the chosen binary links (cuBLAS, cuSPARSE, nvJitLink; a runtime on current releases) is
    the "CUDA library for the chosen binary missing" family."""
    bnb = bnb_of(facts)
    legacy = bool(bnb and bnb.installed and (bnb.legacy_cuda_setup or LEGACY_CUDA_SETUP.contains(bnb.version)))
    ids = []
    if any(not d.name.startswith(("libcudart", "cudart")) for d in missing) or not legacy:
        ids.append("cuda_shared_lib_missing_libcusparse")
    if legacy and any(d.name.startswith(("libcudart", "cudart")) for d in missing):
        ids.append("libcudart_not_found_legacy_cuda_setup")
    return ids


@rule(
    "BNB304",
    "cuda-runtime-from-another-toolkit",
    Severity.ERROR,
    "The CUDA libraries bitsandbytes resolves match torch's CUDA version",
    needs=("native", "python"),
    covers=("conda_env_vs_system_cuda_mixup",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1115",),
    requires=("library-readable",),
)
def runtime_mismatch(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule reads the `native` and `python` facts. It is skipped when torch is not a CUDA build, and when
    `BNB_CUDA_VERSION` is set ([BNB302](BNB302.md) judges an override). It looks at the CUDA *runtime* the selected
    bitsandbytes library needs (`libcudart.so.N`) and at the copy the loader would take: when the version in that copy's
    real file name (after following symlinks, e.g. `libcudart.so.11.0` → `libcudart.so.11.8.89` → `11.8`) has another
    major than `torch.version.cuda`, it reports an error with the path and the search step that found it. Only the
    runtime is compared: CUDA 13 still ships `libcusparse.so.12`, so other libraries' SONAME versions say nothing about
    the toolkit.

    torch's pip wheels load their `nvidia-*` libraries through `DT_RPATH`, which the loader searches before
    `LD_LIBRARY_PATH`; bnbdoctor models that, so a toolkit folder on `LD_LIBRARY_PATH` does not by itself produce a
    finding (the recorded machine `cuda11-first-ld-path-torch-cu12` passes).

    ## Why it matters

    pip's torch wheels bring their CUDA libraries as `nvidia-*` packages. Since late 2022, torch's own libraries point
    at those folders with `DT_RPATH` rather than `DT_RUNPATH`. The loader searches `DT_RPATH` *before*
    `LD_LIBRARY_PATH`, so the CUDA libraries torch links directly (`libcudart`, `libcublas`, `libcublasLt`) come from
    the wheels even when a toolkit folder is exported. bitsandbytes then reuses them by SONAME. This was done on
    purpose, so that a `/usr/local/cuda/lib64` on `LD_LIBRARY_PATH` cannot replace the PyPI libraries.

    That protection does not reach the dependencies of NVIDIA's own libraries. cuSPARSE needs nvJitLink, and it looks
    for it after `LD_LIBRARY_PATH`. A toolkit folder exported there (`/usr/local/cuda-12.1/lib64`, Kaggle's
    `/opt/conda/lib`, an HPC module's `lib64`) can supply an older `libnvJitLink.so.12`. The SONAMEs match, so nothing
    complains until a newer symbol is missing:

    ```text
    ImportError: …/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12
    ```

    This kills `import torch` as well as bitsandbytes. The real load check catches it as [BNB314](BNB314.md) when the
    static model finds nothing.

    The older form of the mix-up comes from conda environments. The legacy loader (up to 0.42) took the CUDA runtime
    from `/usr/local/cuda` or a conda `cudatoolkit` rather than from torch. When that runtime had another major version,
    it picked a library that does not exist or loaded the wrong runtime.

    ## Example notes

    (A SONAME `libcudart.so.12` pointing at an 11.8 file is a broken install — the kind of mix-up conda environments and
    hand-made symlinks produce.)

    ## How to fix

    See which copy the loader really picks:

    ```bash
    echo "$LD_LIBRARY_PATH"
    LD_DEBUG=libs python -c "import torch" 2>&1 | grep -E 'calling init: .*(libcudart|libcublas|libnvJitLink|libcusparse)'
    ```

    - pip's torch: remove CUDA toolkit folders from `LD_LIBRARY_PATH`, in the shell profile, `module load` scripts and
      container `ENV` lines. If something else needs the toolkit, set the variable only for that program.
    - If a folder must stay, put torch's wheel folders (`site-packages/nvidia/*/lib`) in front of it, and keep
      `nvidia-nvjitlink-cu12` at least as new as `nvidia-cusparse-cu12`.
    - conda: keep torch and bitsandbytes from the same ecosystem (pip torch with PyPI bitsandbytes), and do not mix a
      conda `cudatoolkit` of another major into the environment.
    - Legacy bitsandbytes (up to 0.43.0): upgrade; the current loader follows torch's CUDA version
      ([BNB205](BNB205.md)).

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (`DT_RPATH`, then `LD_LIBRARY_PATH`, then `DT_RUNPATH`)
    - https://github.com/pytorch/pytorch/issues/111469
    - https://github.com/pytorch/builder/pull/1150 (torch's wheels use `RPATH` instead of `RUNPATH` so that
      `LD_LIBRARY_PATH` cannot replace the PyPI libraries)
    - https://github.com/pytorch/pytorch/pull/131295 (torch preloading nvJitLink for cuSPARSE)
    """
    native, torch = _native(facts), torch_of(facts)
    if "BNB_CUDA_VERSION" in facts.env:
        return Skip("BNB_CUDA_VERSION is set (BNB302 judges the override)")
    runtime = major_minor(torch.cuda if torch else None)
    if runtime is None:
        return Skip("torch is not a CUDA build")
    hits = []
    for dep in native.dependencies:
        # only the runtime's version tracks the toolkit: CUDA 13 still ships libcusparse.so.12
        if not dep.name.startswith("libcudart.so") or not dep.resolved:
            continue
        found = next((c for c in dep.candidates if c.path == dep.resolved), None)
        version = major_minor(found.version if found else None)
        if version and version[0] != runtime[0]:
            hits.append(
                Hit(
                    title=f"{dep.name} resolves to CUDA {found.version} ({dep.via}), torch is CUDA {torch.cuda}",  # type: ignore[union-attr]
                    explanation="bitsandbytes would run on a CUDA runtime of another major version than torch's: the load "
                    "or the first kernel fails.",
                    evidence=[
                        ev(dep.name, f"{dep.resolved} via {dep.via}", "native.dependencies"),
                        *_loader_evidence(facts),
                    ],
                    remediation=Remediation(
                        f"Make the CUDA {runtime[0]} runtime win: remove the other toolkit's folder "
                        f"from the search ({dep.via}).",
                        [],
                    ),
                )
            )
    return hits


@rule(
    "BNB305",
    "duplicate-cuda-runtimes",
    Severity.INFO,
    "Only one copy of each CUDA library is on the loader's search path",
    needs=("native", "python"),
    covers=("duplicate_cuda_runtimes_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/393",),
    requires=("library-readable",),
)
def duplicates(facts: Facts) -> list[Hit]:
    r"""## What it detects

    The rule reads the `native` and `python` facts. For each CUDA library the selected bitsandbytes library needs,
    bnbdoctor records every place the loader's search finds a file of that name, not only the winner. It resolves
    symlinks first, so `libcudart.so.12` and `libcudart.so.12.4.127` in one folder count as one file.

    It looks at `libcudart` and `libcublas`. For current releases it reports a library only when copies of *different
    CUDA releases* (major.minor from the real file names) sit on the search steps the loader really walks
    (`LD_LIBRARY_PATH`, RUNPATH/RPATH, the loader cache, the default folders): that is when the outcome depends on the
    order of `LD_LIBRARY_PATH`. torch's own wheel copy next to a system toolkit is normal and is not reported (the
    loaded one wins by SONAME). For releases before 0.43.1 any second copy is reported, because their setup scans for
    copies itself. The finding names the copy the loader will use and lists every copy with the search step that finds
    it.

    The finding is **info** for current releases, where only the loader's choice matters. It is a **warning** for
    releases before 0.43.1, whose legacy CUDA setup scans paths itself and prints the alarming duplicate warning.

    ## Why it matters

    Up to 0.43.0, the legacy setup searched `$CONDA_PREFIX`, `LD_LIBRARY_PATH` and other path-like variables for
    `libcudart.so` itself. When it found more than one, it warned. Releases before 0.41 said:

    ```text
    Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] files: {…}.. We'll flip a coin and try one of these, in order to fail forward.
    ```

    From 0.41 the same warning ends with `We select the PyTorch default libcudart.so, which is {torch.version.cuda}`,
    placeholder included.

    Neither message describes what happens. The dynamic loader is deterministic: the first step of its search order that
    has the SONAME wins, and a library torch has already loaded always wins. Many reports list `libcudart.so` and
    `libcudart.so.11.0` from the same folder; usually that is one library reached through a symlink.

    Real duplicates still matter in two ways. A copy from another CUDA release can win if the search order changes (a
    new `LD_LIBRARY_PATH`, a job script, a container `ENV`). On legacy releases, a second runtime of another version was
    linked to `invalid device function` and `named symbol not found` errors. This rule says which copy wins today.
    [BNB304](BNB304.md) says whether the winner is the wrong one.

    ## How to fix

    Usually nothing: if the winner is torch's own copy, the other copies are not used. To check which files are really
    distinct:

    ```bash
    for f in $(ldconfig -p | awk '/libcudart.so/ {print $NF}'); do readlink -f "$f"; done | sort -u
    echo "$LD_LIBRARY_PATH" | tr ':' '\n'
    ```

    - Drop CUDA folders you no longer need from `LD_LIBRARY_PATH`, `/etc/ld.so.conf.d/` and job scripts, so a later
      change of search order cannot bring an old runtime forward.
    - Keep at most one CUDA toolkit registered with `ldconfig` when torch comes from pip.
    - Legacy bitsandbytes (up to 0.43.0): upgrade. That removes the misleading duplicate warning as well as the path
      scan behind it ([BNB205](BNB205.md)).

    ## Severity note

    raised to **warning** for releases before 0.43.1

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/582 (two names for the runtime in one conda folder)
    """
    native, bnb = _native(facts), bnb_of(facts)
    legacy = bnb is not None and LEGACY_CUDA_SETUP.contains(bnb.version)
    searched = ("LD_LIBRARY_PATH", "RUNPATH", "RPATH", "ld.so.cache", "default directories")
    hits = []
    for dep in native.dependencies:
        if not dep.name.startswith(("libcudart.so", "libcublas")) or len(dep.duplicates) < 2:
            continue
        on_path = [c for c in dep.candidates if c.via in searched]
        precise = {major_minor(c.version) for c in on_path if c.version and c.version.count(".") >= 1}
        if not legacy and len(precise) < 2:
            continue  # torch's copy plus a toolkit's is normal: the loaded one wins by SONAME
        hits.append(
            Hit(
                title=f"{len(dep.duplicates)} copies of {dep.name} are visible; the loader uses {dep.resolved}",
                explanation="The dynamic loader is deterministic: the first search step that has the SONAME wins "
                f"({dep.via})"
                + (
                    "; this legacy bitsandbytes also scans path-like environment variables for CUDA runtimes and warns "
                    "'Found duplicate … files' — noise when the winner is the runtime torch uses."
                    if legacy
                    else "; several CUDA releases on the search path make that outcome depend on the order of LD_LIBRARY_PATH."
                ),
                evidence=[
                    ev(c.via, f"{c.path} ({c.version or 'version unknown'})", "native.dependencies")
                    for c in dep.candidates
                ],
                remediation=Remediation(
                    "Nothing to fix if the winner is the runtime torch uses. To tidy up, remove stale "
                    "CUDA folders from LD_LIBRARY_PATH.",
                    [],
                ),
                severity=Severity.WARNING if legacy else Severity.INFO,
            )
        )
    return hits


def _abi_hits(facts: Facts, namespaces: tuple[str, ...]) -> list[tuple[str, list[str], AbiNeed]]:
    native = _native(facts)
    out = []
    for need in native.abi:
        missing = [m for m in need.missing if m.split("_")[0] in namespaces]
        if missing:
            out.append((need.library, missing, need))
    return out


@rule(
    "BNB306",
    "libstdcxx-too-old",
    Severity.ERROR,
    "The libstdc++ / libgcc_s the loader picks define every version bitsandbytes needs",
    needs=("native",),
    covers=("cxxabi_not_found", "glibcxx_not_found"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/957",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1663",
        "https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html",
    ),
    requires=("library-readable",),
)
def libstdcxx(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule reads the `native` facts. The selected bitsandbytes library lists, in its `.gnu.version_r` section, the
    symbol versions it needs from `libstdc++.so.6` and `libgcc_s.so.1` (`GLIBCXX_3.4.22`, `CXXABI_1.3.9`, `GCC_3.0`, …).
    bnbdoctor reads the `.gnu.version_d` section of the copy the loader will pick and compares the names exactly, as the
    loader does. The rule reports one finding per runtime library that lacks a needed `GLIBCXX_`, `CXXABI_` or `GCC_`
    version.

    It also checks every other copy of that library it knows of (other search results, conda environments, toolkit
    folders) and names those that would satisfy the need. The fix depends on what it found:

    - another copy defines everything: put its folder first on the loader path;
    - the winner is the conda environment's own C++ runtime, which bnbdoctor treats as already loaded by the
      interpreter: update it in the environment, or preload the newer copy;
    - no copy is new enough: install a newer `libstdc++` (conda-forge), move to a newer OS, or build bitsandbytes
      locally.

    ## Why it matters

    A C++ library compiled with a newer GCC needs symbol versions that an older `libstdc++` does not define. `dlopen`
    then fails before any bitsandbytes code runs:

    ```text
    OSError: /lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by …/bitsandbytes/libbitsandbytes_cuda117.so)
    ```

    What the PyPI libraries need (highest version per namespace):

    | release (wheels inspected) | CUDA libraries | other builds |
    |---|---|---|
    | 0.41.1, 0.42.0 | `GLIBCXX_3.4.21`, `CXXABI_1.3.9` (GCC 5 or newer) | CPU: `GLIBCXX_3.4.21` |
    | 0.43.3 – 0.49.2 | `GLIBCXX_3.4.22`, `CXXABI_1.3.9` | CPU the same; 0.48.2 XPU and 0.49.2 ROCm: `GLIBCXX_3.4.29` |
    | 0.50.2 | `GLIBCXX_3.4.11`, `CXXABI_1.3.9` | XPU: `CXXABI_1.3.13` |

    The two common victims:

    - **CentOS/RHEL 7**: the system `libstdc++` comes from GCC 4.8 and stops at `GLIBCXX_3.4.19` and `CXXABI_1.3.7`.
      Enabling a newer `devtoolset` compiler does not help, because it does not replace the runtime library. These
      systems also cannot install the `manylinux_2_24` wheels of 0.43+, so they are stuck on the older releases.
    - **conda environments**: the environment's own `libstdc++.so.6` can be older than both the system's and what
      bitsandbytes needs. It is the copy the process uses, so the error names `$CONDA_PREFIX/lib/libstdc++.so.6` (for
      example ``version `GLIBCXX_3.4.32' not found`` with source builds).

    ## Example notes

    On `conda-old-libstdcxx` (a conda environment whose `libstdc++` stops at `GLIBCXX_3.4.29`, with a bitsandbytes built
    by GCC 12) the winner is the environment's own copy. The finding then names `/lib/x86_64-linux-gnu/libstdc++.so.6`
    under `would satisfy`, and suggests `conda install -c conda-forge "libstdcxx-ng>=12"` or `LD_PRELOAD` of the system
    copy.

    ## How to fix

    See what each copy defines:

    ```bash
    ldconfig -p | grep 'libstdc++.so.6'
    strings /lib64/libstdc++.so.6 | grep -E '^(GLIBCXX|CXXABI)_' | sort -V | tail -n 4
    [ -n "$CONDA_PREFIX" ] && strings "$CONDA_PREFIX/lib/libstdc++.so.6" | grep -E '^GLIBCXX_' | sort -V | tail -n 1
    ```

    - A newer copy exists (the finding names it): put its folder first on `LD_LIBRARY_PATH`, or preload it with
      `LD_PRELOAD=/path/to/libstdc++.so.6` for this program only.
    - The conda environment's copy is the old one: update it inside the environment, e.g. `conda install -c conda-forge
      "libstdcxx-ng>=12"`.
    - The system copy is the only one (CentOS 7): install a newer `libstdc++` with conda and put `$CONDA_PREFIX/lib`
      first on `LD_LIBRARY_PATH`, or move to a supported OS. Building bitsandbytes from source with the local toolchain
      also works.
    - A self-built bitsandbytes: build it with the same compiler generation as the runtime it will meet, or ship that
      runtime with it.

    ## Further reading

    - https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html (which GCC release introduced each `GLIBCXX_`/`CXXABI_`
      version)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/70 (CentOS 7, `CXXABI_1.3.9`)
    - https://github.com/ROCm/legacy-rocm-build/issues/3132 (conda's `libstdc++` shadowing the system copy)
    """
    native = _native(facts)
    hits = []
    for library, missing, need in _abi_hits(facts, RUNTIME_NAMESPACES):
        provider = need.provider or library
        dep = next((d for d in native.dependencies if d.name == library), None)
        conda = dep is not None and dep.via == "C++ runtime already loaded in the conda env"
        have = ", ".join(f"{v}" for k, v in sorted(need.provider_max.items()) if k in RUNTIME_NAMESPACES)
        alternatives = list(need.satisfied_by)
        commands = []
        if alternatives:
            folder = _folder(alternatives[0])
            fix = f"{alternatives[0]} defines every needed version. "
            if conda:
                fix += (
                    "The conda env's own libstdc++ is loaded first, so update it in the env (or preload the newer one)."
                )
                commands = ['conda install -c conda-forge "libstdcxx-ng>=12"', f"export LD_PRELOAD={alternatives[0]}"]
            else:
                fix += "Put its folder first on the loader path."
                commands = [f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH"]
        elif conda_env(facts):
            fix = (
                "No libstdc++ on this machine is new enough. Install a newer one in this conda env "
                "(conda-forge libstdcxx-ng) and put $CONDA_PREFIX/lib first on LD_LIBRARY_PATH, or move to a "
                "newer OS; building bitsandbytes from source with the local compiler also works."
            )
            commands = [
                'conda install -c conda-forge "libstdcxx-ng>=12"',
                "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH",
            ]
        else:
            fix = (
                "No libstdc++ on this machine is new enough. Get a newer one from conda-forge into a folder of its "
                "own (a conda env used only for its libraries; your Python env stays as it is) and put its lib "
                "folder first on LD_LIBRARY_PATH, or move to a newer OS; building bitsandbytes from source with "
                "the local compiler also works."
            )
            commands = [
                f'conda create -y -p {RUNTIME_ENV} -c conda-forge "libstdcxx-ng>=12"',
                f"export LD_LIBRARY_PATH={RUNTIME_ENV}/lib:$LD_LIBRARY_PATH",
            ]
        hits.append(
            Hit(
                title=f"{provider} lacks {', '.join(missing)} (needed by {_library_name(native)})",
                explanation=f"{_library_name(native)} was built with a newer GCC and needs {', '.join(missing)} from "
                f"{library}; the copy the loader picks ({dep.via if dep else 'unknown'}) stops at {have or 'older versions'}"
                + (" — the conda env's older libstdc++ shadows the system one" if conda else "")
                + f'. dlopen fails with "{provider}: version `{missing[0]}\' not found (required by …)".',
                evidence=[
                    ev(library, f"{provider} ({dep.via if dep else 'unknown'})", "native.abi"),
                    ev("defines up to", have or "unknown", "native.abi.provider_max"),
                    ev("needs", ", ".join(need.required), "native.version_needs"),
                ]
                + [ev("would satisfy", a, "native.abi.satisfied_by") for a in alternatives]
                + _loader_evidence(facts),
                remediation=Remediation(fix, commands),
                # CXXABI_ versions are the CXXABI family; GLIBCXX_ (and libgcc_s's GCC_) the GLIBCXX one.
                covers=[
                    *(["cxxabi_not_found"] if any(m.startswith("CXXABI_") for m in missing) else []),
                    *(["glibcxx_not_found"] if any(not m.startswith("CXXABI_") for m in missing) else []),
                ],
            )
        )
    return hits


@rule(
    "BNB307",
    "glibc-too-old",
    Severity.ERROR,
    "The system glibc defines every GLIBC_ version bitsandbytes needs",
    needs=("native", "platform"),
    covers=("glibc_2_34_not_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1610",),
    requires=("library-readable",),
)
def glibc(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule reads the `native` and `platform` facts and applies to Linux only. It collects the `GLIBC_` symbol versions
    the selected bitsandbytes library needs from `libc.so.6`, `libm.so.6`, `libpthread.so.0`, `libdl.so.2` and
    `librt.so.1`. It compares them with the versions the system glibc defines, taken from the library file itself, or
    from the glibc version when the file cannot be read. It reports one finding listing every missing version.

    When the installed release is 0.45.x and the selected library is the CUDA 12.6 or 12.8 build, the finding names the
    known packaging problem and suggests 0.46.0 or newer. Otherwise it says the build needs a newer glibc than this
    system has.

    ## Why it matters

    glibc is never bundled: a library built against glibc 2.34 cannot load on a system with 2.31, whatever else is
    installed. The loader stops with:

    ```text
    OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by …/bitsandbytes/libbitsandbytes_cuda126.so)
    ```

    bitsandbytes' Linux wheels are tagged `manylinux_2_24` and the docs name glibc 2.24 as the minimum. The wheels
    inspected need at most `GLIBC_2.4`, with two exceptions:

    - **0.45.x, CUDA 12.6 and 12.8 builds**: they bind `dlopen`, `dlsym` and `dlclose` at `GLIBC_2.34`. The maintainers
      confirmed that these builds ended up requiring more than the intended manylinux 2.24. Ubuntu 20.04 (glibc 2.31)
      and RHEL/Rocky 8 (glibc 2.28) fail as soon as torch is a cu126 or cu128 build. 0.46.0 restored support for older
      glibc.
    - **XPU builds** (0.48+): the docs state glibc 2.34 as their minimum; the inspected libraries need `GLIBC_2.32`.

    In 0.45.x a load error leaves the library unset. The import still succeeds, and the first quantized call fails with
    `AttributeError: 'NoneType' object has no attribute 'cint8_vector_quant'`, far from the cause.

    ## How to fix

    Check the system's glibc and the library's needs:

    ```bash
    ldd --version | head -n 1
    objdump -T /path/to/site-packages/bitsandbytes/libbitsandbytes_cudaXYZ.so | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1
    ```

    - 0.45.x with a cu126/cu128 torch: upgrade bitsandbytes to 0.46.0 or newer, which supports older glibc again.
    - If you must keep 0.45.x: use a torch build for CUDA 12.4 or older, so that the `cuda124` library is selected.
    - Any other build that needs a newer glibc than the system has: build bitsandbytes from source on this machine, run
      in a container with a newer base image, or upgrade the OS. Replacing the system glibc by hand breaks the machine;
      do not.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation (minimum glibc versions)
    """
    native, bnb, platform = _native(facts), bnb_of(facts), facts.platform
    assert platform is not None
    if platform.os != "linux":
        return Skip("glibc applies to Linux only")
    missing_all: list[str] = []
    for _library, missing, _need in _abi_hits(facts, GLIBC_NAMESPACES):
        missing_all.extend(m for m in missing if m not in missing_all)
    if not missing_all:
        return []
    lib = _library_name(native)
    release = release_tuple(bnb.version) if bnb else None
    mislinked = GLIBC_234_BUILDS
    if mislinked.releases.contains(release) and mislinked.affects(lib):
        fixed_in = full(mislinked.releases.below_text)
        fix = (
            f"The {minor(mislinked.releases.first_text)}.x CUDA {'/'.join(mislinked.cuda)} builds were linked "
            f"against glibc {mislinked.glibc} by mistake; {fixed_in} fixed it. Upgrade bitsandbytes, or use a torch "
            f"build for CUDA {mislinked.older_torch_cuda} or older with this release."
        )
        commands = [f'pip install -U "bitsandbytes>={fixed_in}"']
    else:
        fix = (
            f"This glibc ({platform.libc_version or unknown_version(facts)}) is older than the build needs. Use a bitsandbytes build made "
            "for older systems, build from source on this machine, or move to a newer OS."
        )
        commands = []
    return [
        Hit(
            title=f"{versioned(facts, 'glibc', platform.libc_version)} lacks {', '.join(missing_all)} (needed by {lib})",
            explanation=f"{lib} needs {', '.join(missing_all)} from libc.so.6, but this system's glibc is "
            f'{platform.libc_version or "older than that"}: dlopen fails with "version `{missing_all[0]}\' not found".',
            evidence=[
                ev("glibc", platform.libc_version, "platform.libc_version"),
                ev("needs", ", ".join(missing_all), "native.version_needs"),
                *_loader_evidence(facts),
            ],
            remediation=Remediation(fix, commands),
        )
    ]


@rule(
    "BNB308",
    "cpu-only-bitsandbytes-on-gpu-machine",
    Severity.ERROR,
    "bitsandbytes ships GPU libraries when torch uses a GPU",
    needs=("python", "gpu"),
    covers=(
        "compiled_without_gpu_support",
        "cpu_lib_undefined_symbol_cget_col_row_stats",
        "cuda_setup_failed_despite_gpu_available",
        "cuda_binary_missing_for_torch_cuda_version",
    ),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate("a log does not list the files bitsandbytes ships"),
)
def cpu_only_build(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `python` and `gpu` facts; it does not need the native analysis. It fires when all of these hold:

    - bitsandbytes is installed;
    - torch is a CUDA build and at least one NVIDIA GPU is visible;
    - the package folder holds `libbitsandbytes_*` files, but none for CUDA, ROCm or XPU (typically only
      `libbitsandbytes_cpu.so`).

    A package with no compiled library at all is [BNB309](BNB309.md)'s case. On such a machine [BNB301](BNB301.md)
    usually fires as well, because the CUDA library torch's version asks for is missing. This rule names the reason: the
    package was built or packaged without GPU support.

    ## Why it matters

    A CPU-only bitsandbytes is a valid install on a machine without a GPU. On a GPU machine it is nearly always an
    accident:

    - a source build configured without the CUDA backend, e.g. `cmake -S .` without `-DCOMPUTE_BACKEND=cuda`, then `pip
      install .`;
    - a CPU-only package from a third-party channel;
    - a wheel copied from another machine or stripped of its CUDA libraries.

    bitsandbytes does not say "CPU-only package" in so many words. Depending on the release, users see:

    - up to 0.43.0: `import bitsandbytes` fails with `CUDA Setup failed despite GPU being available` after `Required
      library version not found`;
    - 0.43.1–0.45.x: `Could not find the bitsandbytes CUDA binary`, then the CPU library loads with `The installed
      version of bitsandbytes was compiled without GPU support`. GPU features fail afterwards;
    - 0.46+: the import works, and the first GPU operation raises a "binary not found" error.

    Older stacks also showed `libbitsandbytes_cpu.so: undefined symbol: cget_col_row_stats` when transformers loaded an
    8-bit model on a CPU library. The symbol exists only in the CUDA build. A widely shared workaround copies a CUDA
    library over `libbitsandbytes_cpu.so`. It hides the symptom and breaks later.

    ## How to fix

    See what is installed and where it came from:

    ```bash
    pip show -f bitsandbytes | grep -E '^(Version|Location)|libbitsandbytes_'
    conda list bitsandbytes 2>/dev/null
    ```

    - Replace it with the PyPI wheel, which ships CUDA libraries for x86-64 Linux, aarch64 Linux (0.46+) and Windows:
      `pip install --force-reinstall --no-deps bitsandbytes`. Remove a conda package of the same name first (`conda
      remove bitsandbytes`).
    - Building from source on purpose: configure the CUDA backend, with the same CUDA major as torch, then reinstall:

      ```bash
      cmake -DCOMPUTE_BACKEND=cuda -S . && make
      pip install .
      ```

    - Do not copy a CUDA library over `libbitsandbytes_cpu.so`.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/459 (`cget_col_row_stats`, closed with "upgrade")
    """
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed and torch and torch.cuda and visible_gpus(facts)):
        return None
    gpu_libs = [f for f in bnb.native_libraries if re.match(r"libbitsandbytes_(cuda|rocm|xpu)", f)]
    if gpu_libs or not bnb.native_libraries:
        return None
    symptom = (
        "`import bitsandbytes` fails with 'CUDA Setup failed despite GPU being available'"
        if LEGACY_CUDA_SETUP.contains(bnb.version)
        else "bitsandbytes warns that it could not find its CUDA binary and runs CPU-only ('compiled without "
        "GPU support'; older releases then failed with e.g. 'undefined symbol: cget_col_row_stats')"
        if CPU_FALLBACK_ERA.contains(bnb.version)
        else "the first quantized operation raises a 'binary not found' error"
    )
    # What each loader era makes of a package without a GPU library (the symptom above).
    covers = (
        [
            "cuda_setup_failed_despite_gpu_available",
            "compiled_without_gpu_support",
            "cpu_lib_undefined_symbol_cget_col_row_stats",
        ]
        if LEGACY_CUDA_SETUP.contains(bnb.version)
        else ["compiled_without_gpu_support"]
        if CPU_FALLBACK_ERA.contains(bnb.version)
        else ["cuda_binary_missing_for_torch_cuda_version"]
    )
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} is a CPU-only build on a machine with a CUDA GPU",
        explanation="The package holds only " + ", ".join(bnb.native_libraries) + ": it was built or packaged "
        f"without GPU support (a source build without the CUDA backend, or a CPU-only conda package). {symptom}.",
        evidence=[
            ev("native libraries", ", ".join(bnb.native_libraries), "python.bitsandbytes.native_libraries"),
            ev("torch", f"{torch.version} (CUDA {torch.cuda})", "python.torch.cuda"),
        ],
        remediation=Remediation(
            "Install the PyPI wheel (it ships CUDA builds), or rebuild with the CUDA backend "
            "(cmake -DCOMPUTE_BACKEND=cuda).",
            ["pip install --force-reinstall --no-deps bitsandbytes"],
        ),
        covers=covers,
    )


@rule(
    "BNB309",
    "no-compiled-library",
    Severity.ERROR,
    "The bitsandbytes package folder holds a compiled native library",
    needs=("python",),
    covers=("source_build_native_lib_missing", "native_lib_none_attribute_errors"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180", BNB_DOCS_INSTALL),
    log_gate=LogGate(
        "the log does not show bitsandbytes' libraries missing",
        signatures=("bnb_cpu_library_not_found", "bnb_not_compiled"),
    ),
)
def no_library(facts: Facts) -> Hit | None:
    r"""## What it detects

    The rule reads the `python` facts. It fires when bitsandbytes is importable but its package folder holds no
    `libbitsandbytes_*` file at all: no CPU library, no CUDA, ROCm or XPU library.

    The wording depends on whether the package has installation metadata. Without metadata it is a source checkout
    reached through `sys.path`: the current directory, `PYTHONPATH`, or an editable setup whose build never ran. With
    metadata it is an installation that ended up without its compiled part. Only in the second case does the finding
    offer a reinstall command.

    ## Why it matters

    The Python half of bitsandbytes is plain source; the native half has to be compiled by CMake, and `pip install
    git+https://…` or `import` from a clone does not always do that. Without any library, every release fails, but the
    messages point elsewhere:

    - `Could not find the bitsandbytes CUDA binary at …libbitsandbytes_cuda121.so`, followed by `Could not load
      bitsandbytes native library: …libbitsandbytes_cpu.so: cannot open shared object file` (0.43–0.45);
    - on Windows: `Could not find module '…\bitsandbytes\libbitsandbytes_cpu.dll' (or one of its dependencies)`;
    - later: `NameError: name 'str2optimizer32bit' is not defined`, or `AttributeError: 'NoneType' object has no
      attribute 'c…'`, because the library handle is `None`;
    - 0.46–0.49: the first native call raises the `Forgot to compile the bitsandbytes library?` message. 0.50+ raises a
      generic `Attempted to use bitsandbytes native library functionality but it's not available` text instead.

    The `NameError` and `NoneType` errors are only downstream symptoms. Maintainers' triage treats them as "the native
    library did not load" and points back to the first load error.

    ## How to fix

    Find out which folder Python really imports, without importing bitsandbytes:

    ```bash
    python -c "import importlib.util as u; print(u.find_spec('bitsandbytes').origin)"
    ls "$(dirname "$(python -c "import importlib.util as u; print(u.find_spec('bitsandbytes').origin)")")" | grep libbitsandbytes_
    ```

    - A clone shadows the installed package (you ran Python inside the repository, or `PYTHONPATH` points at it): change
      directory or clean `PYTHONPATH`.
    - You want a release: `pip install --force-reinstall bitsandbytes` from PyPI.
    - You want a source build: compile the backend that matches torch before installing:

      ```bash
      cmake -DCOMPUTE_BACKEND=cuda -S . && make
      pip install .
      ```

    - ppc64le and other platforms without wheels always need the source build.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1524 (`libbitsandbytes_cpu.dll` missing on Windows)
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed) or bnb.native_libraries:
        return None
    source = not bnb.has_metadata
    return Hit(
        title="bitsandbytes has no compiled library" + (" (a source checkout on sys.path)" if source else ""),
        explanation=f"{bnb.location} holds no libbitsandbytes_* file. "
        + (
            "It is a git checkout or an install from source that was never compiled (pip install "
            "git+https://… without a build backend, or `import` from the repository folder). "
            if source
            else "The install is incomplete. "
        )
        + "bitsandbytes then fails with 'Could not find the bitsandbytes CUDA binary', \"NameError: name "
        "'str2optimizer32bit' is not defined\" or 'NoneType' attribute errors.",
        evidence=[
            ev("package folder", bnb.location, "python.bitsandbytes.location"),
            ev(
                "metadata",
                "present" if bnb.has_metadata else "none (not pip-installed)",
                "python.bitsandbytes.has_metadata",
            ),
        ],
        remediation=Remediation(
            "Install a released wheel, or compile the library in the checkout "
            "(cmake -DCOMPUTE_BACKEND=cuda -S . && make) before installing it.",
            ["pip install --force-reinstall bitsandbytes"] if bnb.has_metadata else [],
        ),
    )


@rule(
    "BNB310",
    "rocm-library-not-found",
    Severity.ERROR,
    "Every ROCm/HIP library the selected bitsandbytes build needs is found by the loader",
    needs=("native",),
    covers=("rocm_hip_libraries_missing",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1520", BNB_DOCS_INSTALL),
    requires=("library-readable",),
)
def rocm_missing(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `native` facts. Among the libraries the selected bitsandbytes library needs, it picks the
    ROCm/HIP ones (`libhipblas`, `libhipblaslt`, `libhipsparse`, `librocrand`, `libamdhip64`, `rocblas`, …) and reports
    those the loader's search does not find. The search is the same as for CUDA libraries ([BNB303](BNB303.md)).
    bitsandbytes' ROCm libraries carry a `RUNPATH` of `/opt/rocm/lib:/opt/rocm-X.Y.Z/lib`, so a standard ROCm install is
    found without any environment variable.

    Each missing library is listed with any copy bnbdoctor found outside the search, for example under `/opt/rocm/lib`.
    When there is such a copy, the fix includes an `LD_LIBRARY_PATH` line. The rule is not limited to Linux: with a ROCm
    build on Windows, the same DLLs are also reported by [BNB311](BNB311.md).

    ## Why it matters

    The ROCm builds of bitsandbytes (in the PyPI wheel from 0.49; before that in forks and preview wheels) are linked
    against the math libraries of one ROCm release:

    | release | ROCm libraries needed |
    |---|---|
    | 0.49.2, `rocm62`–`rocm64` | `libhipblas.so.2`, `libhipsparse.so.1`, `libhipblaslt.so.0` |
    | 0.49.2, `rocm70`–`rocm72` | `libhipblas.so.3`, `libhipsparse.so.4`, `libhipblaslt.so.1` |
    | 0.50.2, Linux | `libhipblas` and `libhipblaslt` (`.so.2`/`.so.0` for ROCm 6.4, `.so.3`/`.so.1` for 7.x); `librocrand.so.1` for 7.14 and 7.15 |
    | 0.50.2, Windows | `hipblas.dll`, `rocblas.dll`, `libhipblaslt.dll`, `amdhip64_7.dll` |

    They have to come from a ROCm installation, or be already loaded into the process under the same names. A container
    or machine without the ROCm math libraries, or with only part of them (hipBLAS without hipBLASLt), fails to load the
    library:

    ```text
    libhipblaslt.so.0: cannot open shared object file: No such file or directory
    ```

    With 0.49+ the import still succeeds, and the first native call fails with the loader's message. Older forks printed
    `CUDA SETUP: Setup Failed!` after `libhipblas.so.0: cannot open shared object file` for
    `libbitsandbytes_hip_nohipblaslt.so`. A library that loads but was built for another GPU architecture is a different
    failure (`hipErrorNoBinaryForGpu`), which this rule does not check.

    ## Example notes

    The GPU line is about NVIDIA GPUs only; an AMD GPU does not appear there.

    ## How to fix

    Compare torch's ROCm version with what is installed:

    ```bash
    python -c "import torch; print(torch.version.hip)"
    ls -d /opt/rocm* ; ls /opt/rocm/lib | grep -E 'libhip(blas|blaslt|sparse)\.so'
    ```

    - Install the missing ROCm packages (`hipblas`, `hipblaslt`, `hipsparse`) of the same ROCm release as torch, using
      AMD's package repositories or a ROCm container image.
    - ROCm installed in a versioned folder without the `/opt/rocm` link: add its `lib` folder to `LD_LIBRARY_PATH`, or
      create the link the way AMD's installer does.
    - Several ROCm releases side by side: make sure the one matching `torch.version.hip` comes first.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1519 (installing for an AMD GPU)
    """
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("rocm",))
    if not missing:
        return None
    folders = sorted({_folder(d.elsewhere[0]) for d in missing if d.elsewhere})
    return Hit(
        title=f"{_library_name(native)} needs {', '.join(d.name for d in missing)}, which the loader cannot find",
        explanation="The ROCm build of bitsandbytes links hipBLAS/hipBLASLt (and hipSPARSE or rocRAND on some "
        "releases) from a ROCm install; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'.",
        evidence=_missing_evidence(missing) + _loader_evidence(facts),
        remediation=Remediation(
            "Install the ROCm libraries of the version torch was built for (hipblas, hipblaslt), "
            "or add the ROCm lib folder to LD_LIBRARY_PATH.",
            [f"export LD_LIBRARY_PATH={':'.join(folders)}:$LD_LIBRARY_PATH"] if folders else [],
        ),
    )


@rule(
    "BNB311",
    "windows-dll-dependency-missing",
    Severity.ERROR,
    "Every DLL the selected bitsandbytes build imports is found by Windows",
    needs=("native", "platform"),
    covers=("windows_dll_could_not_find_module",),
    references=(
        "https://docs.python.org/3/library/os.html#os.add_dll_directory",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/639",
    ),
    requires=("library-readable",),
)
def windows_dlls(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `native` and `platform` facts and applies to Windows only. bnbdoctor reads the import table of
    the DLL bitsandbytes will load and resolves every imported DLL the way Windows does for Python's `ctypes` loading a
    full path. The search, in order:

    - DLLs already loaded: those in torch's `lib` folder and its `nvidia-*` wheels;
    - the DLL's own folder and the application folder (the interpreter's folder);
    - `System32`;
    - folders added with `os.add_dll_directory`: torch's `lib` folder, and `Library\bin` in conda environments.

    `api-ms-win-*` API sets and core system DLLs count as present. `PATH` is not searched, but a copy found there is
    recorded, because it explains a common surprise.

    The rule reports every import that nothing resolves. The fix depends on the kind:

    - CUDA DLLs found only on `PATH`: add that folder with `os.add_dll_directory()`;
    - `MSVCP140.dll` or `VCRUNTIME140*.dll`: install the Microsoft Visual C++ Redistributable;
    - other CUDA DLLs: install a CUDA build of torch, which ships them.

    ## Why it matters

    Since Python 3.8, the dependencies of extension modules and of DLLs loaded with `ctypes` are resolved only from the
    application folder, the DLL's own folder, `System32` and folders registered with `os.add_dll_directory()`. The
    `PATH` variable and the current directory no longer count. bitsandbytes never registers a folder itself, so its CUDA
    library finds `cudart64_12.dll`, `cublas64_12.dll` and friends only because torch has already loaded them or
    registered their folder. A CUDA toolkit that is merely on `PATH` does not help.

    When an import is missing, Windows does not say which one:

    ```text
    FileNotFoundError: Could not find module '…\bitsandbytes\libbitsandbytes_cuda121.dll' (or one of its dependencies). Try using the full path with constructor syntax.
    ```

    The file named in the message exists; one of its dependencies does not. This was the classic failure of the
    unofficial Windows builds before 0.43. It still happens when `BNB_CUDA_VERSION` picks a build of another CUDA major
    than torch's, when the CUDA DLLs live only in a toolkit folder on `PATH`, and on machines without the Visual C++
    runtime. For reference, the 0.50.2 CUDA 13 DLLs import `cublas64_13.dll` and `cublasLt64_13.dll` but no `cudart`
    DLL.

    ## Example notes

    python.org's Python ships `vcruntime140.dll` and `vcruntime140_1.dll` in its installation folder, which bnbdoctor
    does not search when the interpreter is a virtual environment's. On such a machine `MSVCP140.dll` is the one that is
    really missing; the Redistributable supplies all three. When a missing DLL exists in a folder on `PATH`, for example
    a CUDA toolkit's `bin` folder, the evidence shows `on PATH at …`, and the fix asks for that folder to be added with
    `os.add_dll_directory()`.

    ## How to fix

    Check what torch brings and what bitsandbytes wants:

    ```bat
    python -c "import torch; print(torch.__version__, torch.version.cuda)"
    python -c "import os, torch; d = os.path.join(os.path.dirname(torch.__file__), 'lib'); print([f for f in os.listdir(d) if f.startswith(('cudart', 'cublas'))])"
    pip show -f bitsandbytes | findstr libbitsandbytes_
    ```

    - CUDA DLLs missing: install a CUDA build of torch whose CUDA major matches a bitsandbytes build (`pip install torch
      --index-url https://download.pytorch.org/whl/cu128`, for example), then reinstall bitsandbytes.
    - The DLLs exist in a CUDA toolkit folder: register it before the import, in your own code:

      ```python
      import os

      os.add_dll_directory(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v13.0\bin")
      import bitsandbytes
      ```

    - `MSVCP140.dll` / `VCRUNTIME140_1.dll` missing: install the latest Microsoft Visual C++ Redistributable (x64).
    - Unofficial wheels from before 0.43 (`libbitsandbytes_cuda116.dll` and similar): uninstall them and install the
      official release from PyPI.

    ## Further reading

    - https://learn.microsoft.com/windows/win32/dlls/dynamic-link-library-search-order
    - https://github.com/python/cpython/issues/80266 (why Python 3.8 stopped using `PATH` for DLL dependencies)
    """
    native, platform = _native(facts), facts.platform
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    missing = [d for d in native.dependencies if d.resolved is None]
    if not missing:
        return None
    on_path = [d for d in missing if any(c.via.startswith(_NOT_SEARCHED) for c in d.candidates)]
    vc = [d.name for d in missing if d.kind == "cxx_runtime"]
    cuda = [d.name for d in missing if d.kind == "cuda"]
    parts, commands = [], []
    if on_path:
        parts.append(
            f"{', '.join(d.name for d in on_path)} exist on PATH ({_folder(on_path[0].candidates[0].path)}), "
            f"but Python {PYTHON_DLL_PATH_SEARCH_DROPPED}+ does not search PATH for a DLL's dependencies: "
            "add the folder with "
            "os.add_dll_directory() before importing bitsandbytes, or use a torch CUDA build that ships them."
        )
    if vc:
        parts.append("Install the Microsoft Visual C++ Redistributable (x64) for " + ", ".join(vc) + ".")
        commands.append("winget install --id Microsoft.VCRedist.2015+.x64")
    if cuda and not on_path:
        parts.append(
            "Install a CUDA build of torch (it ships " + ", ".join(cuda) + " in torch\\lib) or the matching "
            "CUDA toolkit."
        )
    return Hit(
        title=f"{_library_name(native)} imports {', '.join(d.name for d in missing)}, which Windows cannot find",
        explanation="Windows loads a DLL's imports from already-loaded DLLs, the DLL's own folder, the application "
        "folder, System32 and folders added with os.add_dll_directory. Without them Python raises "
        f"\"Could not find module '…{_library_name(native)}' (or one of its dependencies)\".",
        evidence=[
            ev(
                d.name,
                "not found" + (f"; on PATH at {d.candidates[0].path}" if d.candidates else ""),
                "native.dependencies",
            )
            for d in missing
        ]
        + _loader_evidence(facts),
        remediation=Remediation(" ".join(parts) or "Install the missing DLLs.", commands),
    )


@rule(
    "BNB312",
    "linux-library-on-windows",
    Severity.ERROR,
    "A Windows install of bitsandbytes holds Windows DLLs, not Linux .so files",
    needs=("python", "platform"),
    covers=("windows_linux_so_loaded", "windows_path_not_iterable"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723",),
    requires=("release-supports-platform",),
    refutes=("library-readable",),
)
def linux_so_on_windows(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `python` and `platform` facts and applies to Windows only. It fires when the bitsandbytes package
    folder holds `libbitsandbytes_*.so` files and no `.dll` at all, which means a Linux build was installed on Windows.
    The finding counts the `.so` files, lists the first few, and offers an upgrade command. The version range in that
    command also fits the installed torch.

    It does not look at the files' contents. [BNB313](BNB313.md) handles a selected library that is unreadable or built
    for another platform, and stays silent on Windows when the files are Linux ones, so that one cause gives one finding
    from this group. [BNB204](BNB204.md) reports the same install from the version side: the release predates Windows
    support.

    ## Why it matters

    Up to 0.42.0, bitsandbytes was published as a single `py3-none-any` wheel that contains only Linux x86-64 ELF
    libraries. Because the tag says "any platform", pip installs it on Windows without complaint. Windows support
    (`win_amd64` wheels with DLLs) arrived in 0.43.0. On Windows such an install fails in one of two ways, depending on
    how far the legacy setup gets:

    ```text
    OSError: [WinError 193] %1 is not a valid Win32 application
    ```

    is `LoadLibrary` rejecting an ELF file. The legacy setup may fail even earlier, while searching for a Linux
    `libcudart.so` on a Windows machine:

    ```text
    CUDA SETUP: Loading binary C:\…\site-packages\bitsandbytes\libbitsandbytes_cuda118.so...
    argument of type 'WindowsPath' is not iterable
    ```

    The setup's printed advice (`export LD_LIBRARY_PATH`, `find / -name …`) is Linux advice and does not apply.
    Community-built Windows wheels filled the gap for a while. The official releases from 0.43.0 on replace them.

    ## Example notes

    The upper bound `<0.46` comes from torch 2.0.1: 0.46 and later need torch 2.2 or newer.

    ## How to fix

    Confirm what is installed:

    ```bat
    pip show -f bitsandbytes | findstr /R "Version libbitsandbytes_"
    ```

    - Upgrade to a release with Windows DLLs, within the range the finding prints for your torch, then restart the
      Python process:

      ```bat
      pip install -U "bitsandbytes>=0.43.0"
      ```

    - If a tool pins an old bitsandbytes (some web UIs did), raise the pin to 0.43.0 or newer, or uninstall the
      community wheel it brought.
    - Or run the workload under WSL2 with the Linux wheels and the Windows NVIDIA driver.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    bnb, platform = bnb_of(facts), facts.platform
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    if not (bnb and bnb.installed and bnb.native_libraries):
        return None
    so = [f for f in bnb.native_libraries if f.endswith(".so")]
    if not so or any(f.endswith(".dll") for f in bnb.native_libraries):
        return None
    spec = f">={WINDOWS_WHEELS.first_text}"
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} on Windows holds only Linux libraries ({len(so)} .so files)",
        explanation=f"Releases up to {LINUX_ONLY_WHEEL.last_text} were a py3-none-any wheel containing Linux ELF "
        "files. On Windows, loading "
        "one fails with '[WinError 193] %1 is not a valid Win32 application', and the legacy setup trips over "
        "Windows paths (\"argument of type 'WindowsPath' is not iterable\").",
        evidence=[
            ev(
                "native libraries",
                ", ".join(so[:4]) + (" …" if len(so) > 4 else ""),
                "python.bitsandbytes.native_libraries",
            )
        ],
        remediation=Remediation(
            f"Install a release with Windows DLLs ({WINDOWS_WHEELS.first_text}+), or run under WSL2.",
            [f'pip install -U "bitsandbytes{spec}"'],
        ),
    )


@rule(
    "BNB313",
    "native-library-unreadable",
    Severity.ERROR,
    "The selected bitsandbytes library is a readable binary for this platform",
    needs=("native", "platform"),
    covers=("macos_apple_silicon_no_native_lib",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate(
        "a log does not show the library's file format", shows=lambda facts: bool(facts.native and facts.native.format)
    ),
    requires=("release-supports-platform",),
    refutes=("library-readable",),
)
def unreadable(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `native` and `platform` facts. It looks at the one file bitsandbytes will load, after checking
    that the file exists. It reports the file when:

    - it cannot be read, or its header cannot be parsed (truncated download, damaged install, a placeholder);
    - its format is not the platform's: not ELF on Linux, not Mach-O on macOS;
    - it is an ELF file for another architecture, e.g. `EM_X86_64` on an `aarch64` machine.

    On Windows, a folder of Linux `.so` files is left to [BNB312](BNB312.md). When the real load check ran, its message
    is added as evidence.

    ## Why it matters

    The dynamic loader checks the file header before anything else, and a mismatch stops it with a terse message:
    `invalid ELF header`, `file too short`, `wrong ELF class: ELFCLASS32`, or on macOS `not a mach-o file`. bitsandbytes
    turns that into one of its generic load errors, or falls back, depending on the release, and the cause is easy to
    misread as a CUDA problem.

    The usual ways to get there:

    - **Apple silicon with 0.42 or older**: those releases shipped only Linux x86-64 `.so` files, installable everywhere
      through a `py3-none-any` wheel. On a Mac, `dlopen` rejects them, bitsandbytes falls back, and every quantized
      operation fails. transformers then reports a misleading error about Accelerate or bitsandbytes not being
      installed. macOS arm64 wheels exist from 0.49.0.
    - **aarch64 Linux with 0.42 or older** (Graviton, Grace, Ampere servers): the same x86-64 files. aarch64 wheels
      exist from 0.46.0.
    - **A damaged file**: an interrupted download, a copy from another machine, a virtual environment moved between
      architectures, a filesystem quota hit during install.

    ## Example notes

    On this machine [BNB204](BNB204.md) also reports that 0.42.0 predates macOS support. Reinstalling the same version
    brings back the same Linux files, so the fix that works here is the upgrade below. An `aarch64` Linux machine with
    0.42.0 gets the same finding as `built for EM_X86_64, this machine is aarch64`.

    ## How to fix

    Look at the file:

    ```bash
    file /path/to/site-packages/bitsandbytes/libbitsandbytes_*
    uname -m
    ```

    - Built for another platform: install a release that has wheels for it. That is 0.46.0+ for aarch64 Linux and
      0.49.0+ for Apple silicon (for example `pip install -U "bitsandbytes>=0.49"`). On a Mac with an older stack, do
      not request 8-bit or 4-bit loading; use a Mac-native alternative instead.
    - Damaged or truncated: reinstall the same version without the cache:

      ```bash
      pip install --force-reinstall --no-deps --no-cache-dir "bitsandbytes==<version>"
      ```

    - A virtual environment copied from another machine: recreate it on this one.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1378 (no macOS release for 0.44)
    """
    native, platform, bnb = _native(facts), facts.platform, bnb_of(facts)
    assert platform is not None
    if not native.library or not native.selection or not native.selection.exists:
        return None
    problem = format_problem(native, platform.os, platform.arch)
    if problem is None:
        return None
    if platform.os == "windows" and native.format == "ELF":
        return None  # Linux files on Windows: BNB312
    version = bnb.version if bnb else ""
    first = FIRST_RELEASE_FOR_PLATFORM.get((platform.os, platform.arch))
    wrong_platform = native.error is None
    if wrong_platform and first and not (release_tuple(version) or (0,)) >= (release_tuple(first) or (0,)):
        spec = f">={first}"
        fix = Remediation(
            f"This release has no build for {platform.os} {platform.arch}; install {first} or newer.",
            [f'pip install -U "bitsandbytes{spec}"'],
        )
    elif wrong_platform:
        fix = Remediation(
            "Reinstall bitsandbytes from the wheel for this platform (a copied site-packages or a "
            "wheel for another machine holds foreign binaries).",
            [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [],
        )
    else:
        fix = Remediation(
            "Reinstall bitsandbytes: the file is damaged or truncated.",
            [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [],
        )
    return Hit(
        title=f"{native.library} cannot be loaded: {problem}",
        explanation="The file bitsandbytes will load is damaged, truncated, or built for another platform; the "
        "loader rejects it ('invalid ELF header', 'file too short', 'wrong ELF class', 'not a mach-o file').",
        evidence=[
            ev("file", native.library, "native.library"),
            ev("problem", problem, "native.error"),
            *_loader_evidence(facts),
        ],
        remediation=fix,
        # The catalog's family is a Linux library on a Mac; a damaged file, or one for another CPU on
        # Linux, is a failure the catalog has no entry for.
        covers=["macos_apple_silicon_no_native_lib"] if platform.os == "macos" and wrong_platform else [],
    )


@rule(
    "BNB314",
    "native-load-failed",
    Severity.ERROR,
    "The real dynamic loader loads the selected library",
    needs=("native", "load"),
    references=("https://docs.python.org/3/library/ctypes.html#loading-shared-libraries",),
    requires=("library-readable",),
)
def load_failed(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `load` facts. After the static analysis, bnbdoctor loads the selected library for
    real in a short-lived subprocess of the examined interpreter (see [the native chain](../native-chain.md)).
    Beforehand, the subprocess loads the libraries torch would already have loaded, and the conda environment's C++
    runtime.

    The rule is skipped when that check did not run: `--no-load`, a recorded machine without a recorded load answer, or
    no existing library selected. It passes when the load succeeded. When the load failed, it reports a finding only if
    the static analysis had found nothing wrong: every dependency resolved, every symbol version present, the file
    readable. If the static analysis already predicted the failure, the finding that names the cause
    ([BNB303](BNB303.md), [BNB306](BNB306.md), [BNB307](BNB307.md), …) quotes the loader's message instead, and this
    rule is listed as not checked ("the load failed; the findings above explain why") — never as passed.

    The evidence is the loader's exact message, plus any preload that failed.

    ## Why it matters

    The static model checks file names, search paths and symbol *version names*. It does not check individual symbols,
    constructors, or libraries that a dependency itself needs. So a library can pass every static check and still be
    refused:

    - a dependency of the right name from a different release lacks a symbol: `undefined symbol: …, version
      libnvJitLink.so.12`;
    - a library built against a different ROCm or CUDA minor than the one installed lacks a device stub;
    - a dependency of a dependency is missing or too old;
    - the library's initialisation crashes or hangs. A hang shows as `did not finish within 15s`, a crash as `the load
      subprocess died`.

    This is the finding to read when everything else is green and bitsandbytes still fails with `Could not load
    bitsandbytes native library` or `bitsandbytes library load error`.

    ## Example notes

    The recorded machines `windows-bnb041` and `macos-bnb042` currently produce this finding too, next to
    [BNB312](BNB312.md) and [BNB313](BNB313.md). There the file has the wrong format, which those rules explain; the
    static check behind this rule does not yet count a format mismatch as a predicted failure.

    ## How to fix

    Start from the library the message names, and see where the loader takes it and its dependencies from:

    ```bash
    LD_DEBUG=libs python -c "import ctypes; ctypes.CDLL('/path/to/libbitsandbytes_cudaXYZ.so')" 2>&1 | grep -E 'trying file|calling init|error'
    ldd -r /path/named/in/the/message.so | grep -E 'not found|undefined'
    ```

    - An `undefined symbol` in a CUDA library: two CUDA releases are mixed. Remove toolkit folders from
      `LD_LIBRARY_PATH` ([BNB304](BNB304.md)), or bring the `nvidia-*` wheels to matching versions (`pip install -U
      torch` reinstalls them as a set).
    - A self-built bitsandbytes: rebuild it against the CUDA or ROCm release that is actually installed.
    - A hang or crash while loading: rerun with `--debug` and attach `bnbdoctor --json` to a bug report. Loading runs
      the library's constructors, which can touch the GPU driver.
    - On Windows the message names only the top DLL; [BNB311](BNB311.md) lists the imports that are missing.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (`LD_DEBUG`)
    - https://github.com/pytorch/pytorch/issues/134929 (`undefined symbol: __nvJitLinkComplete_12_4, version
      libnvJitLink.so.12`)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1550 (a ROCm build that loads its dependencies but
      lacks a device stub symbol)
    """
    native, load = _native(facts), facts.load
    assert load is not None
    if not load.ran:
        return Skip(f"the load check did not run: {load.skipped_reason}")
    if load.ok:
        return None
    if static_problem(facts):
        # it did not load, but the static findings above name the cause and quote this message
        return Skip("the load failed; the findings above explain why")
    if missing_device_stub(facts):
        return Skip("the library lacks a kernel's device stub (BNB317 explains it)")
    return Hit(
        title=f"Loading {_library_name(native)} fails although every dependency was found",
        explanation="The static analysis found all dependencies and symbol versions, but the real loader refused "
        "the library. The loader's message below names the cause (often a symbol missing from a library of the "
        "right name but the wrong release).",
        evidence=[ev("library", load.library, "load.library"), ev("the real loader said", load.error, "load.error")]
        + [ev(f"preload failed: {k}", v, "load.preload_errors") for k, v in load.preload_errors.items()],
        remediation=Remediation(
            "Check the named library's version against torch's CUDA version; reinstalling "
            "bitsandbytes and torch from the same index usually resolves it.",
            [],
        ),
    )


@rule(
    "BNB315",
    "prediction-contradicted-by-loader",
    Severity.WARNING,
    "The static prediction and the real loader agree",
    needs=("native", "load"),
)
def contradicted(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `load` facts and is skipped when the real load check did not run (`--no-load`, a
    recorded machine, no existing library selected). It fires in one situation: the static analysis predicted a failure,
    but the real dynamic loader loaded the library without complaint. A failure prediction means a missing dependency
    other than a Windows system DLL, a missing symbol version, or an unreadable file.

    The finding names the library that loaded. It does not withdraw the other findings. It tells you that on this
    machine they describe bnbdoctor's model, not reality.

    ## Why it matters

    bnbdoctor predicts the load from files on disk. It does not import torch or bitsandbytes, so the prediction is
    available even when the import crashes or takes minutes. The model covers the common cases ([the native
    chain](../native-chain.md) lists its simplifications), but the real loader knows more. Examples of what it can see
    and bnbdoctor cannot:

    - `glibc-hwcaps` subfolders of the search directories;
    - `DT_RPATH` inherited from the objects that load the library, for example the Python executable's own `RPATH`;
    - `LD_PRELOAD` and `/etc/ld.so.preload`;
    - a library torch loads under a SONAME that differs from its file name;
    - a loader cache bnbdoctor could not read.

    When the two disagree, the real loader is right about this process. The warning keeps a wrong error from sending
    someone to reinstall CUDA for nothing. It also marks a case where bnbdoctor's model should be improved.

    The opposite disagreement (the model finds nothing wrong, the loader fails) is [BNB314](BNB314.md).

    ## How to fix

    There is nothing to repair on the machine because of this finding. Treat the static findings about missing libraries
    and symbol versions as unconfirmed, and check them against the real loader:

    ```bash
    LD_DEBUG=libs python -c "import torch, bitsandbytes" 2>&1 | grep -E 'libbitsandbytes|libcudart|libstdc'
    bnbdoctor --json > bnbdoctor-report.json
    ```

    - If bitsandbytes works, ignore the contradicted findings on this machine.
    - Please open an issue with the JSON report attached, so that bnbdoctor's model of the loader can learn the case.
    - Under `--strict` this warning counts as an error; CI jobs that run bnbdoctor on such a machine can pass `--rule`
      to select the checks they rely on.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (search order, `LD_PRELOAD`, `/etc/ld.so.preload`)
    - https://docs.python.org/3/library/ctypes.html#loading-shared-libraries
    """
    native, load = _native(facts), facts.load
    assert load is not None
    if not load.ran:
        return Skip(f"the load check did not run: {load.skipped_reason}")
    if not (load.ok and static_problem(facts)):
        return None
    return Hit(
        title=f"The real loader loaded {_library_name(native)} although bnbdoctor predicted a failure",
        explanation="bnbdoctor's static model of the loader disagrees with the real one on this machine; trust the "
        "real loader. Findings about missing libraries or symbol versions above may be wrong here.",
        evidence=[ev("library", load.library, "load.library")],
        remediation=Remediation("Please report this with `bnbdoctor --json` attached so the model can be fixed.", []),
    )


@rule(
    "BNB316",
    "system-library-not-found",
    Severity.ERROR,
    "Every C/C++ runtime library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=("xpu_sycl_runtime_mismatch",),
    references=(
        "https://man7.org/linux/man-pages/man8/ld.so.8.html",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/releases",
    ),
    requires=("library-readable",),
)
def system_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `platform` facts and applies to Linux only; [BNB311](BNB311.md) handles Windows
    imports. Among the libraries the selected bitsandbytes library needs, it takes everything that is not a CUDA or ROCm
    library and reports those the loader's search cannot find. That covers the C and C++ runtimes (`libstdc++.so.6`,
    `libgcc_s.so.1`, `libgomp.so.1`), glibc's parts (`libm.so.6`, `librt.so.1`, …), and any other dependency.

    For the GNU OpenMP, C++ and GCC runtimes, the fix names the distribution packages that provide them. The search and
    the places bnbdoctor looks outside it are the same as for [BNB303](BNB303.md).

    ## Why it matters

    These libraries are part of every normal Linux installation, so their absence is surprising and the message is
    short:

    ```text
    OSError: libgomp.so.1: cannot open shared object file: No such file or directory
    ```

    The usual cause is **OpenMP in minimal images**. From 0.49 the CPU library `libbitsandbytes_cpu.so` links
    `libgomp.so.1`. Slim container images and minimal cloud images do not always install the GNU OpenMP runtime. A copy
    of OpenMP that ships inside torch's wheel under a private file name does not satisfy bitsandbytes' dependency, which
    asks for `libgomp.so.1` by name. The CPU library is the one loaded on every machine without a usable GPU, so
    CPU-only CI jobs and containers are where this shows up. The CUDA libraries of 0.46+ also link `librt`, `libpthread`
    and `libdl`, which glibc provides everywhere.

    Less often: a container built from `scratch` or a distroless image that lacks `libstdc++`, or a musl-based image
    (Alpine), where glibc's libraries do not exist at all. bitsandbytes' wheels are built for glibc only.

    The Intel XPU libraries also depend on oneAPI runtime libraries (`libsycl.so`, `libsvml.so`, `libimf.so`, …). They
    are reported here too, but they come from Intel's oneAPI runtime, not from the system package manager. When the
    needed SONAME is missing but the same library is present under another one (`libsycl.so.8` needed, `libsycl.so.9`
    installed: the XPU library was built against another oneAPI release), the finding says so (catalog
    `xpu_sycl_runtime_mismatch`): bitsandbytes then falls back to a mock library and fails at the first native call.
    0.50+ ship one XPU library per oneAPI year (`libbitsandbytes_xpu2025`, `…xpu2026`).

    ## How to fix

    Confirm what is missing:

    ```bash
    ldd /path/to/site-packages/bitsandbytes/libbitsandbytes_cpu.so | grep 'not found'
    ```

    - Install the runtime with the system package manager, in the image's build step for containers:

      ```bash
      apt-get update && apt-get install -y libgomp1        # Debian, Ubuntu
      dnf install -y libgomp                               # RHEL, Rocky, Fedora
      ```

    - `libstdc++.so.6` or `libgcc_s.so.1` missing: install `libstdc++6` / `libgcc-s1` (Debian, Ubuntu) or `libstdc++` /
      `libgcc` (RHEL family). If they exist but are too old, see [BNB306](BNB306.md).
    - Alpine or other musl systems: use a glibc-based image; the PyPI wheels do not support musl.
    - XPU builds: install Intel's oneAPI runtime for the release torch was built with.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    native = _native(facts)
    if facts.platform and facts.platform.os != "linux":
        return Skip("Linux only (Windows imports are checked by BNB311)")
    oneapi = _unresolved(native, ("oneapi",))
    other_major = [d for d in oneapi if d.other_sonames]
    if other_major:
        return _sycl_mismatch(facts, other_major)
    if oneapi:
        return Hit(
            title=f"{_library_name(native)} needs Intel oneAPI runtime libraries the loader cannot find: "
            f"{', '.join(d.name for d in oneapi)}",
            explanation="The XPU builds link the SYCL/oneAPI runtime (libsycl, libsvml, libimf, …), which comes with "
            "the oneAPI toolkit or the runtime wheels torch's XPU build depends on; it is not a system package.",
            evidence=[ev(d.name, "not found", "native.dependencies") for d in oneapi] + _loader_evidence(facts),
            remediation=Remediation(
                "Source the oneAPI environment before Python, or install the runtime wheels.",
                ["source /opt/intel/oneapi/setvars.sh", "pip install intel-sycl-rt intel-cmplr-lib-rt"],
            ),
            covers=[],
        )
    missing = _unresolved(native, ("cxx_runtime", "libc", "other"))
    if not missing:
        return None
    names = ", ".join(d.name for d in missing)
    hints = {
        "libgomp.so.1": "the GNU OpenMP runtime (Debian/Ubuntu: libgomp1; RHEL: libgomp)",
        "libstdc++.so.6": "the GNU C++ runtime (libstdc++6 / libstdc++)",
        "libgcc_s.so.1": "the GCC runtime (libgcc-s1 / libgcc)",
    }
    wanted = [hints[d.name] for d in missing if d.name in hints]
    return Hit(
        title=f"{_library_name(native)} needs {names}, which the loader cannot find",
        explanation="These are ordinary system runtime libraries; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'. The CPU build of {CPU_LIBRARY_NEEDS_OPENMP.first_text}+ "
        "also needs OpenMP "
        "(libgomp.so.1), which slim container images often lack.",
        evidence=_missing_evidence(missing) + _loader_evidence(facts),
        remediation=Remediation(
            "Install "
            + ("; ".join(wanted) if wanted else "the missing runtime libraries")
            + " with the system package manager.",
            [],
        ),
        covers=[],
    )


_DEVICE_STUB = re.compile(r"undefined symbol:\s*(?P<symbol>_Z(?P<length>\d+)__device_stub__\w+)")
_STUB_PREFIX = "__device_stub__"


def missing_device_stub(facts: Facts) -> tuple[str, str] | None:
    """``(symbol, kernel)`` when the real loader refused a bitsandbytes GPU library for lacking one of its own
    kernel launch stubs (``_Z..__device_stub__k...``), else None."""
    load = facts.load
    if load is None or not load.ran or load.ok is not False or not load.error:
        return None
    match = _DEVICE_STUB.search(load.error)
    if match is None:
        return None
    symbol = match.group("symbol")
    name = symbol[2 + len(match.group("length")) :][: int(match.group("length"))]  # the mangled name's length prefix
    return symbol, name[len(_STUB_PREFIX) :] or name


@rule(
    "BNB317",
    "bnb-rocm-library-lacks-device-stub",
    Severity.ERROR,
    "The selected bitsandbytes GPU library defines the kernels it references",
    needs=("load",),
    covers=("rocm_lib_undefined_device_stub",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1550",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1519",
        "https://github.com/ROCm/bitsandbytes/issues/67",
    ),
    log_gate=LogGate("the log shows no undefined device stub", signatures=("rocm_device_stub_undefined",)),
)
def device_stub_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `load` facts: the real loader's message for the library bitsandbytes selected (or, in
    `bnbdoctor explain`, the `Could not load bitsandbytes native library: …` line of a log). It fires when the loader
    refused the library for an undefined symbol of the form `_Z<n>__device_stub__k<Kernel>…`, for example
    `undefined symbol: _Z36__device_stub__kOptimizer32bit1StateI12hip_bfloat16Li2EEvPT_S2_PfS3_ffffffiffbi`. It is
    skipped when the load check did not run, and passes when the library loaded or failed for another reason.

    ## Why it matters

    A `__device_stub__` symbol is the host-side launcher the HIP (or CUDA) compiler emits next to each kernel
    instantiation. bitsandbytes' own library references it, so only the library itself can define it: when it is
    undefined, the library was built without that kernel instantiation (in issue #1550, the `hip_bfloat16` 32-bit
    optimizer of the 0.45.x multi-backend preview wheels). Every dependency resolved and nothing on the machine is
    wrong; the file is a packaging defect, and maintainers said the preview wheel was not ready. bitsandbytes then
    runs without its native library and fails at the first quantized call.

    ## How to fix

    - Install a released bitsandbytes that ships ROCm libraries for the installed ROCm (0.49+ wheels carry them on
      PyPI; 0.50+ picks the nearest ROCm build of the same major), instead of a preview or multi-backend wheel.
    - Or build bitsandbytes from source for the local ROCm: `cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=gfx1100 -S .
      && make && pip install .`.

    ```bash
    pip show bitsandbytes
    pip install -U "bitsandbytes>=0.49"
    ```
    """
    found = missing_device_stub(facts)
    if found is None:
        load = facts.load
        return Skip(f"the load check did not run: {load.skipped_reason}") if load and not load.ran else None
    symbol, kernel = found
    load, bnb = facts.load, bnb_of(facts)
    assert load is not None
    named = re.search(r"libbitsandbytes_\w+\.(?:so|dll|dylib)", f"{load.library or ''} {load.error or ''}")
    library = named.group(0) if named else "the bitsandbytes library"
    rocm = "rocm" in library or "hip" in library or "hip_" in symbol
    backend = "ROCm" if rocm else "GPU"
    spec = full(ROCM_IN_PYPI_WHEEL.first_text)
    return Hit(
        title=f"{library} lacks the {kernel} kernel: a {backend} build without that kernel",
        explanation=f"The loader refused {library}: it references {symbol}, the launch stub of one of its own "
        f"kernels ({kernel}), which only the library itself can define. It was built without that kernel "
        f"instantiation, a defect of the build (seen in the {ROCM_PREVIEW_WHEELS.last_text} multi-backend preview wheels), "
        "not of this "
        "machine: every dependency resolved. bitsandbytes then has no native library and fails at the first "
        "quantized call.",
        evidence=[ev("the real loader said", load.error, "load.error")]
        + ([ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")] if bnb and bnb.version else []),
        remediation=Remediation(
            f"Install a released bitsandbytes with {backend} libraries for the installed runtime "
            f"({ROCM_IN_PYPI_WHEEL.first_text}+ ship ROCm builds on PyPI) instead of a preview wheel, or build it "
            "from source for the local ROCm (-DCOMPUTE_BACKEND=hip).",
            ["pip show bitsandbytes", f'pip install -U "bitsandbytes>={spec}"'],
        ),
    )
