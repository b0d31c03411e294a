"""BNB513 log-legacy-libcudart-search: passes when the log shows no legacy CUDA setup failing to find libcudart."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, UPGRADE_PAST_LEGACY_SETUP

# --------------------------------------------------------------------------------- the native-library chain

FINDING = log.LogFinding(
    (S.LEGACY_LIBCUDART_NOT_FOUND,),
    title="bitsandbytes' legacy CUDA setup found no libcudart on the environment's paths",
    explanation=f"Releases up to {LEGACY_CUDA_SETUP.last_text} search CONDA_PREFIX, LD_LIBRARY_PATH and other "
    "path-like variables for libcudart.so. The search is fragile (it discards hits, misreads colon-separated lists) "
    "and never looks inside site-packages, where pip's torch keeps its CUDA runtime, so it fails on ordinary pip "
    "installs; the advice it prints then points at the wrong CUDA.{windows}",
    fix=f"Upgrade bitsandbytes: since {LEGACY_CUDA_SETUP.below_text} the loader follows torch.version.cuda and needs no "
    "LD_LIBRARY_PATH changes. On the legacy releases, add the folder of a libcudart.so that matches torch's CUDA to "
    "LD_LIBRARY_PATH.",
    commands=(UPGRADE_PAST_LEGACY_SETUP,),
    also_quoted=(S.LEGACY_PATH_DID_NOT_CONTAIN,),
)


@rule(
    Severity.WARNING,
    "The log shows no legacy CUDA setup failing to find libcudart",
    needs=("log",),
    covers=("libcudart_not_found_legacy_cuda_setup",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/778",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1041",
    ),
    stands_in_for=("BNB205", "BNB303"),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def legacy_libcudart(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy CUDA setup's `CUDA_SETUP: WARNING! libcudart.so not found in any environmental path.
    Searching in backup paths...` (and the {{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }} diagnostics' `CUDA runtime files not found in any environmental
    path`), citing the `did not contain ['libcudart.so', …]` lines before it. It is the log twin of [BNB205](BNB205.md)
    and [BNB303](BNB303.md); when BNB205 fires on the same log (it does whenever the log shows the legacy setup and
    torch's CUDA), its finding carries these lines. On ROCm, where the log shows bitsandbytes taking the HIP version
    for a CUDA one ([BNB558](BNB558.md)), there is no libcudart to find and the rule passes.

    ## Why it matters

    Releases up to {{ loader.LEGACY_CUDA_SETUP.last_text }} search `CONDA_PREFIX`, `LD_LIBRARY_PATH` and every other path-like variable for
    `libcudart.so`. The search is fragile: it discards hits it found (#958), misreads colon-separated lists (#1112), and
    never looks inside site-packages, where pip's torch keeps its CUDA runtime. It therefore fails on ordinary pip
    installs and its advice points at the wrong CUDA. On Windows it looks for Linux file names and cannot succeed.

    ## How to fix

    Upgrade bitsandbytes: since {{ loader.LEGACY_CUDA_SETUP.below_text }} the loader follows `torch.version.cuda` and needs no `LD_LIBRARY_PATH` changes.

    ```bash
    pip install -U "bitsandbytes>={{ loader.LEGACY_CUDA_SETUP.below_text }}"
    ```

    On the legacy releases, add the folder of a `libcudart.so` matching torch's CUDA to `LD_LIBRARY_PATH`.
    """
    if log.seen(facts, S.ROCM_HIP_VERSION_READ_AS_CUDA):
        return None  # a ROCm torch: the CUDA runtime search is beside the point (BNB558)
    windows = " On Windows the search looks for Linux file names and cannot succeed." if log.is_windows(facts) else ""
    return FINDING.hit(facts, windows=windows)
