"""BNB516 log-bnb-library-missing-for-cuda: passes when the log shows no missing bitsandbytes library for the CUDA/ROCm version in use."""

from __future__ import annotations

import re

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, SUGGESTED_TORCH_CUDA
from bnbdoctor.knowledge.gpus import CUDA_10_NEWEST_CC, JETSON_CCS
from bnbdoctor.knowledge.loader import CUDA_VERSION_FROM_TORCH, ROCM_TAG_MISBUILT
from bnbdoctor.knowledge.selection import rocm_from_misbuilt_tag
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB


def _misbuilt_rocm(facts: Facts, missing: str | None) -> tuple[int, int] | None:
    """The ROCm version whose tag a 0.46-0.49 release spelled wrongly, from the missing file's name (and
    torch's ROCm version when the log shows it); None when the name is an honest tag."""
    match = re.match(r"libbitsandbytes_rocm(\d+)\.", missing or "")
    bnb = facts.python.bitsandbytes.version if facts.python else None
    if match is None or (bnb is not None and not ROCM_TAG_MISBUILT.contains(bnb)):
        return None
    hip = major_minor(facts.python.torch.hip) if facts.python else None
    if hip is not None:
        return hip if hip[1] >= 10 and match.group(1) == str(hip[0] * 10 + hip[1]) else None
    return rocm_from_misbuilt_tag(match.group(1))


#: The CUDA major below every bitsandbytes build (10: no release ships a CUDA 10 library).
_OLD = OLDEST_CUDA_MAJOR - 1


def _branch(
    title: str, explanation: str, fix: str, commands: tuple[str, ...], covers: tuple[str, ...]
) -> log.LogFinding:
    """One of the rule's findings: each quotes the missing library's lines and the CUDA version the loader detected."""
    return log.LogFinding(
        (S.CUDA_OLDER_THAN_11, S.BNB_LIBRARY_NOT_FOUND),
        title,
        explanation,
        fix,
        commands,
        covers,
        also_quoted=(S.DETECTED_CUDA_VERSION,),
        limit=4,
    )


MISBUILT_ROCM_TAG = _branch(
    title="{missing} is ROCm {major}.{minor} spelled wrongly by bitsandbytes "
    f"{ROCM_TAG_MISBUILT.first_text}–{ROCM_TAG_MISBUILT.last_text}",
    explanation=f"bitsandbytes {ROCM_TAG_MISBUILT.first_text}–{ROCM_TAG_MISBUILT.last_text} build the ROCm tag as "
    "major*10+minor, so ROCm {major}.{minor} becomes '{tag}' instead of '{major}{minor}': the release looks for "
    "{missing}, which no release ships, and every native call raises 'Configured ROCm binary not found'. "
    f"{ROCM_TAG_MISBUILT.below_text} fixed the tag (PR #1889).",
    fix=f"Upgrade bitsandbytes to {ROCM_TAG_MISBUILT.below_text} or newer, which reads ROCm "
    "{major}.{minor} as rocm{major}{minor} and falls back to the nearest ROCm {major}.x build; these releases read no "
    "override for ROCm, so without upgrading only a source build for the installed ROCm helps.",
    commands=(f'pip install -U "bitsandbytes{ROCM_TAG_MISBUILT.after().pip_spec()}"', PYTHON_M_BNB),
    covers=("rocm_version_tag_misparsed",),
)
OLD_RUNTIME_FOR_NEWER_GPU = _branch(
    title=f"bitsandbytes found a CUDA {_OLD}.x runtime, but the GPU (compute capability {{cc}}) needs CUDA "
    f"{OLDEST_CUDA_MAJOR}+: the runtime is from another install than torch's",
    explanation="The legacy loader picks its library from the CUDA runtime it finds on the search path. It found "
    f"CUDA {_OLD}.x, yet the GPU {{named}}(compute capability {{cc}}) runs only with CUDA {OLDEST_CUDA_MAJOR} or "
    "newer, so torch does not use that runtime: it is an old system toolkit (often /usr/local/cuda) found because the "
    f"environment (a conda env without cudatoolkit) has none. bitsandbytes then looked for a CUDA {_OLD} library, "
    "which no release ships, and fell back to its CPU library.",
    fix="Give the loader the runtime torch uses: in a conda env install the matching cudatoolkit (or point "
    "LD_LIBRARY_PATH at the env's lib folder ahead of /usr/local/cuda), or remove the old toolkit from the paths; "
    "then upgrade bitsandbytes, whose current releases follow torch's CUDA version.",
    commands=(TORCH_CHECK, "echo $LD_LIBRARY_PATH", "pip install -U bitsandbytes"),
    covers=("conda_env_vs_system_cuda_mixup", "cuda_lt_11_unsupported"),
)
CUDA_OLDER_THAN_ANY_BUILD = _branch(
    title=f"CUDA {_OLD}.x is older than any bitsandbytes build{{absent}}",
    explanation=f"bitsandbytes ships no libraries for CUDA {_OLD}.x and LLM.int8() needs CUDA {OLDEST_CUDA_MAJOR} or "
    "newer. The legacy loader picked the CUDA version from the runtime it found (often an old toolkit on "
    f"LD_LIBRARY_PATH or a CUDA {_OLD} build of torch), found no matching library and fell back to its CPU library.",
    fix=f"Install a CUDA {' or '.join(SUGGESTED_TORCH_CUDA)} build of PyTorch (its wheels bring their own CUDA "
    f"runtime), remove CUDA {_OLD} folders from LD_LIBRARY_PATH, then upgrade bitsandbytes; an old driver may need an "
    "update first.",
    commands=(TORCH_CHECK, "pip install -U bitsandbytes"),
    covers=("cuda_lt_11_unsupported", "cuda_binary_missing_for_torch_cuda_version"),
)
NO_JETSON_BUILD = _branch(
    title="bitsandbytes has no library for this Jetson's CUDA (L4T){missing}",
    explanation="The log shows {seen}. bitsandbytes' published builds are for x86-64 and server ARM (sbsa) with the "
    "standard CUDA toolkit, not for Jetson's L4T/JetPack CUDA, so the installed package has no library for it and "
    "falls back to its CPU library or fails.",
    fix="Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda -S . && make, then pip install .) or install "
    "a wheel built for JetPack (the Jetson AI Lab index, a third-party build).",
    commands=("cat /etc/nv_tegra_release", PYTHON_M_BNB),
    covers=("jetson_l4t_aarch64_wheel_mismatch", "cuda_binary_missing_for_torch_cuda_version"),
)
UNBUILT_SOURCE_CHECKOUT = _branch(
    title="The bitsandbytes source build has no library built for this {backend} version{missing}",
    explanation="bitsandbytes runs from {location} ({built}), and its folder holds no library for the {backend} "
    "version in use: the native half was never compiled there, or it was compiled for another {backend} version.",
    fix="Build the native library in the checkout for the {backend} version torch uses (cmake "
    "-DCOMPUTE_BACKEND={cmake_backend} -S . && make, then pip install -e .), or uninstall the build and install the "
    "release from PyPI.",
    commands=("pip install -U bitsandbytes", PYTHON_M_BNB),
    covers=("source_build_native_lib_missing", "cuda_binary_missing_for_torch_cuda_version"),
)
NO_LIBRARY_FOR_CUDA = _branch(
    title="bitsandbytes has no library for this {backend} version{missing}",
    explanation="bitsandbytes picks its library by torch's {backend} version{legacy}. The installed package has no such file: the release "
    "predates that {backend} version, or it is a build for another version (conda-forge packages, the ROCm fork and "
    "own builds ship one GPU library and often no CPU library; they are not supported upstream). It then falls back "
    "to its CPU library or fails on the first GPU call.",
    fix="Install the current bitsandbytes from PyPI, keeping torch and bitsandbytes from the same channel (pip with "
    "pip), or build bitsandbytes from source for your {backend} version.",
    commands=("pip install -U bitsandbytes", PYTHON_M_BNB),
    covers=("cuda_binary_missing_for_torch_cuda_version",),
)


@rule(
    Severity.ERROR,
    "The log shows no missing bitsandbytes library for the CUDA/ROCm version in use",
    needs=("log",),
    covers=(
        "cuda_binary_missing_for_torch_cuda_version",
        "cuda_lt_11_unsupported",
        "rocm_version_tag_misparsed",
        "conda_env_vs_system_cuda_mixup",
        "source_build_native_lib_missing",
        "jetson_l4t_aarch64_wheel_mismatch",
    ),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/138",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/2014",
    ),
    stands_in_for=("BNB301",),
    confirm=("pip show bitsandbytes", TORCH_CHECK, PYTHON_M_BNB),
)
def library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule fires when the log shows that bitsandbytes has no library for the CUDA version in use: `Required library
    version not found: libbitsandbytes_cudaXYZ.so` (legacy), `Could not find the bitsandbytes CUDA binary at …`
    ({{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }}), `Configured CUDA binary not found at …` ({{ loader.EXACT_MATCH_ERA.first_text }}–{{ loader.EXACT_MATCH_ERA.last_text }}), `No compatible CUDA binary found at …` ({{ loader.NEAREST_BUILD.first_text }}+),
    or `CUDA version lower than 11 are currently not supported`. For CUDA 10.x it says that no build exists, and where
    the log shows a GPU newer than CUDA 10 can drive (`knowledge.gpus.CUDA_10_NEWEST_CC`) that the runtime found is another
    install's (a system toolkit beside a conda env), not torch's; where bitsandbytes runs from a source checkout (not
    from site-packages) that the checkout was not built for that CUDA version; on a Jetson (L4T in the log, or a compute
    capability only Jetsons' integrated GPUs have, `knowledge.gpus.JETSON_CCS`) that no published build is for L4T's CUDA. A missing
    `libbitsandbytes_rocmNN.so` of {{ loader.ROCM_TAG_MISBUILT.first_text }}–{{ loader.ROCM_TAG_MISBUILT.last_text }} whose tag no ROCm has (`rocm80`…`rocm84`, or torch's ROCm 7.10+ spelled
    `major*10+minor` when the log shows it) is that release's tag-building bug: the fix is {{ loader.ROCM_TAG_MISBUILT.below_text }}+. It stays
    silent when `BNB_CUDA_VERSION` chose the file ([BNB302](BNB302.md)). A missing CPU library beside the missing GPU
    one does not silence it (nor does [BNB309](BNB309.md) fire then): a build for one backend (conda-forge's, the ROCm
    fork's, most own builds) ships no CPU library, and the later `Forgot to compile` and `str2optimizer` errors follow
    any library that did not load. It is the log twin of [BNB301](BNB301.md).

    ## Why it matters

    bitsandbytes picks `libbitsandbytes_cuda<version>` from torch's CUDA version (the detected runtime on releases
    before {{ loader.CUDA_VERSION_FROM_TORCH.first_text }}). When the package has no such file (the release predates that CUDA version, or it is a third-party
    build for another CUDA, such as a conda-forge package), it falls back to its CPU library ({{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }}), raises at
    import (legacy) or at the first GPU call ({{ loader.EXACT_MATCH_ERA.first_text }}+). No bitsandbytes build supports CUDA 10.x, and LLM.int8() needs
    CUDA 11 or newer.

    ## How to fix

    - CUDA 10.x: install a CUDA {{ cuda.SUGGESTED_TORCH_CUDA.0 }} or {{ cuda.SUGGESTED_TORCH_CUDA.1 }} build of PyTorch (its wheels bring their own runtime), remove CUDA 10
      folders from `LD_LIBRARY_PATH`, then upgrade bitsandbytes; an old driver may need an update first.
    - Otherwise: install the current bitsandbytes from PyPI, keeping torch and bitsandbytes from the same channel, or
      build bitsandbytes for your CUDA version.

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```
    """
    if not log.seen(facts, S.BNB_LIBRARY_NOT_FOUND, S.CUDA_OLDER_THAN_11):
        return None
    if log.seen(facts, S.BNB_CUDA_VERSION_OVERRIDE):
        return Skip("BNB_CUDA_VERSION chose the library (BNB302 judges the override)")
    missing = facts.native.selection.expected_file if facts.native and facts.native.selection else None
    is_missing = f": {missing} is missing" if missing else ""
    rocm = _misbuilt_rocm(facts, missing)
    if rocm is not None and missing is not None:
        major, minor = rocm
        return MISBUILT_ROCM_TAG.hit(
            facts, missing=missing, major=str(major), minor=str(minor), tag=str(major * 10 + minor)
        )
    if log.seen(facts, S.CUDA_OLDER_THAN_11):
        newer = [d for d in (facts.gpu.devices if facts.gpu else []) if d.cc and d.cc > CUDA_10_NEWEST_CC]
        # the runtime the legacy loader detected on the paths, not torch's own version (CUDASpecs, "PyTorch settings")
        found_on_paths = log.seen(facts, S.DETECTED_CUDA_VERSION) and not log.seen(facts, S.TORCH_CUDA_SETTINGS)
        if newer and found_on_paths:
            gpu = newer[0]
            named = f"{gpu.name} " if gpu.name and "not in the log" not in gpu.name else ""
            return OLD_RUNTIME_FOR_NEWER_GPU.hit(facts, cc=gpu.cc_text, named=named)
        return CUDA_OLDER_THAN_ANY_BUILD.hit(facts, absent=f" ({missing} does not exist)" if missing else "")
    jetson = next((d for d in (facts.gpu.devices if facts.gpu else []) if d.cc in JETSON_CCS), None)
    if jetson is not None or (facts.platform is not None and facts.platform.jetson_release):
        seen = f"a GPU of compute capability {jetson.cc_text}, which only Jetsons have" if jetson else "a Jetson"
        return NO_JETSON_BUILD.hit(facts, seen=seen, missing=is_missing)
    rocm_library = bool(missing and re.match(r"libbitsandbytes_(?:rocm|hip)", missing))
    words = {"backend": "ROCm" if rocm_library else "CUDA", "missing": is_missing}
    legacy = "" if rocm_library else f" (the detected runtime on releases before {CUDA_VERSION_FROM_TORCH.first_text})"
    bnb = facts.python.bitsandbytes if facts.python else None
    built = built_locally(bnb) if bnb is not None and bnb.location else None
    if bnb is not None and bnb.location and built is not None:
        return UNBUILT_SOURCE_CHECKOUT.hit(
            facts, location=bnb.location, built=built, cmake_backend="hip" if rocm_library else "cuda", **words
        )
    return NO_LIBRARY_FOR_CUDA.hit(facts, legacy=legacy, **words)
