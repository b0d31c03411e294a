"""BNB514 log-duplicate-cuda-runtimes: passes when the log shows no 'Found duplicate ... libcudart' warning."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import UPGRADE_PAST_LEGACY_SETUP

FINDING = log.LogFinding(
    (S.DUPLICATE_CUDA_RUNTIMES,),
    title="Several CUDA runtimes were found on the searched paths ('Found duplicate ... We'll flip a coin')",
    explanation="The legacy CUDA setup found more than one libcudart and picked one. That matters only when they "
    "are different CUDA versions and the one used differs from torch's: then follow-on errors such as 'invalid "
    "device function' or 'named symbol not found' appear. libcudart.so and libcudart.so.11.0 in the same folder "
    "are usually one file and a symlink, so the warning alone proves nothing.",
    fix="Check whether the files are distinct (readlink -f). Keep one CUDA runtime matching torch.version.cuda on "
    f"LD_LIBRARY_PATH/PATH/CUDA_HOME, and upgrade bitsandbytes ({LEGACY_CUDA_SETUP.below_text}+ no longer "
    "scans these paths).",
    commands=(
        "echo $LD_LIBRARY_PATH",
        UPGRADE_PAST_LEGACY_SETUP,
    ),
)


@rule(
    Severity.WARNING,
    "The log shows no 'Found duplicate ... libcudart' warning",
    needs=("log",),
    covers=("duplicate_cuda_runtimes_found",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/393",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/205",
    ),
    stands_in_for=("BNB305",),
    confirm=("pip show bitsandbytes", "echo $LD_LIBRARY_PATH"),
)
def duplicates(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy setup's `Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0']
    files: {…}.. We'll flip a coin` and on the diagnostics' `Found duplicate CUDA runtime files (see below).` It is a
    warning: the message alone proves nothing. It is the log twin of [BNB305](BNB305.md).

    ## Why it matters

    The legacy CUDA setup found more than one `libcudart` on the searched paths and picked one. That matters only when
    they are different CUDA versions and the one used differs from torch's; then `invalid device function`, `named
    symbol not found` or `CUBLAS_STATUS_INVALID_VALUE` follow. `libcudart.so` and `libcudart.so.11.0` in one folder are
    usually a file and its symlink.

    ## How to fix

    - Check whether the files are distinct: `readlink -f` each path.
    - Keep one CUDA runtime matching `torch.version.cuda` on `LD_LIBRARY_PATH`/`PATH`/`CUDA_HOME`.
    - Upgrade bitsandbytes ({{ loader.LEGACY_CUDA_SETUP.below_text }}+ no longer scans these paths):

      ```bash
      pip install -U "bitsandbytes>={{ loader.LEGACY_CUDA_SETUP.below_text }}"
      ```
    """
    return FINDING.hit(facts)
