"""BNB528 log-illegal-memory-access-in-kernel: passes when the log shows no illegal memory access in a bitsandbytes kernel."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, kernel_site

FINDING = log.LogFinding(
    (S.BNB_KERNEL_ILLEGAL_ACCESS, S.CUDA_ILLEGAL_ACCESS),
    title="{title}",
    explanation="A kernel read or wrote outside its buffers; {how}. Usual causes: a bug of the installed bitsandbytes "
    "for this shape or blocksize, inputs that are not contiguous or not on the kernel's GPU, or memory corrupted by "
    "an earlier kernel. Rerun with CUDA_LAUNCH_BLOCKING=1 to see the kernel that faulted.",
    fix="Upgrade bitsandbytes and rerun with CUDA_LAUNCH_BLOCKING=1 set; keep inputs contiguous and on one GPU; "
    "report it to bitsandbytes with that traceback if the newest release still fails.",
    commands=("pip install -U bitsandbytes", PYTHON_M_BNB),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no illegal memory access in a bitsandbytes kernel",
    needs=("log",),
    covers=("illegal_memory_access_in_kernel",),
    references=(
        "https://github.com/TimDettmers/bitsandbytes/issues/553",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1782",
        "https://github.com/unslothai/unsloth/issues/1055",
    ),
    confirm=(PYTHON_M_BNB,),
)
def illegal_memory_access_in_kernel(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' own kernel check, `Error an illegal memory access was encountered at line N in
    file .../csrc/ops.cu`, and on torch's `CUDA error: an illegal memory access was encountered` (a generic
    message, so that finding is less certain: any kernel that ran before the call may have caused it).

    ## Why it matters

    A CUDA kernel read or wrote outside its buffers. bitsandbytes checks the error after its own launches, and CUDA
    reports errors asynchronously, so the line names the kernel that faulted or one that ran after it. Known
    causes: a bug of the installed release for that shape or blocksize (one such fault, 4-bit quantization with
    blocksize 4096, was fixed in a later release), inputs that are not contiguous or not on the GPU the kernel runs
    on, or memory already corrupted by an earlier kernel. The process's CUDA context is unusable afterwards.

    ## How to fix

    Upgrade bitsandbytes, and rerun with `CUDA_LAUNCH_BLOCKING=1` set so the error points at the kernel that
    faulted:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```

    Make the inputs contiguous and keep the model and its inputs on one GPU. If the newest release still fails,
    report it to bitsandbytes with the traceback taken under `CUDA_LAUNCH_BLOCKING=1` and the tensor shapes.
    """
    ours = log.first(facts, S.BNB_KERNEL_ILLEGAL_ACCESS)
    if ours is None:
        title = "A CUDA kernel made an illegal memory access"
        how = "torch reports it at the next CUDA call, so the faulting kernel may have run earlier"
    else:
        title = f"A bitsandbytes kernel made an illegal memory access{kernel_site(ours.text, ' (checked in {})')}"
        how = "bitsandbytes' check after its own kernel launch reports it"
    return FINDING.hit(facts, title=title, how=how)
