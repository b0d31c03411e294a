"""BNB553 log-kernel-invalid-configuration-argument: passes when the log shows no bitsandbytes kernel launched with an invalid configuration."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, kernel_site

FINDING = log.LogFinding(
    (S.BNB_KERNEL_INVALID_CONFIGURATION,),
    title="A bitsandbytes kernel was launched with an invalid grid{where}: a tensor it does not take",
    explanation="The kernel's launch configuration is computed from its input; CUDA rejected it, which an empty "
    "tensor or a view the kernel does not take causes (blockwise quantization of an indexed slice, optimizer states "
    "of parameters partitioned by DeepSpeed ZeRO-2). The GPU itself is not the problem.",
    fix="Pass a contiguous copy (.clone() / .contiguous()) of a sliced tensor; with DeepSpeed use ZeRO-3 rather than "
    "ZeRO-2 for 8-bit optimizers; upgrade bitsandbytes.",
    commands=("pip install -U bitsandbytes", PYTHON_M_BNB),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes kernel launched with an invalid configuration",
    needs=("log",),
    covers=("kernel_invalid_configuration_argument",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/57",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/875",
    ),
    confirm=(PYTHON_M_BNB,),
)
def kernel_invalid_configuration_argument(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `Error invalid configuration argument at line N in file .../csrc/ops.cu`: bitsandbytes' check
    after a kernel launch found the launch itself rejected.

    ## Why it matters

    The kernel's grid is computed from the tensor it gets; CUDA rejects a grid of zero blocks or of more blocks than
    the device allows. That happens with an empty tensor or a view whose layout the kernel does not take: in the
    threads, blockwise quantization of an indexed slice of a tensor (the maintainer's answer: pass a copy), and
    8-bit optimizer states of parameters partitioned by DeepSpeed ZeRO-2. It says nothing about the GPU being
    unsupported.

    ## How to fix

    Pass a contiguous copy (`.clone()` or `.contiguous()`) of a sliced tensor to the bitsandbytes function; with
    DeepSpeed, use ZeRO-3 rather than ZeRO-2 for 8-bit optimizers; upgrade bitsandbytes:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```
    """
    match = log.first(facts, S.BNB_KERNEL_INVALID_CONFIGURATION)
    return None if match is None else FINDING.hit(facts, where=kernel_site(match.text, " ({})"))
