"""BNB565 paged-optimizer-invalid-argument: passes when the log shows no paged optimizer's prefetch refused as an invalid argument."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSIONS = 'python -c "import bitsandbytes, transformers; print(bitsandbytes.__version__, transformers.__version__)"'

FINDING = log.LogFinding(
    (S.PAGED_OPTIMIZER_INVALID_ARGUMENT,),
    title="A bitsandbytes paged optimizer's prefetch failed: CUDA called its state buffer an invalid argument",
    explanation="Paged optimizers (PagedAdamW, paged_adamw_8bit/32bit, PagedLion) keep their state in CUDA managed "
    "memory and prefetch it to the GPU before each step; cudaMemPrefetchAsync in bitsandbytes' pythonInterface.c "
    "returned 'invalid argument', which it does for a buffer that is not managed memory, as when the optimizer's "
    "state was restored from a checkpoint. The GPU and the install are fine; the paged optimizer is what fails.",
    fix="Train with an optimizer that does not page (adamw_bnb_8bit / bnb.optim.AdamW8bit, or adamw_torch), "
    "resuming from the checkpoint with it; upgrade bitsandbytes if you need the paged one.",
    commands=(VERSIONS,),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no paged optimizer's prefetch refused as an invalid argument",
    needs=("log",),
    covers=("paged_optimizer_invalid_argument",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/782",
        "https://github.com/axolotl-ai-cloud/axolotl/issues/864",
    ),
    confirm=(VERSIONS,),
)
def paged_optimizer_invalid_argument(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' CUDA check in `csrc/pythonInterface.c` reporting `Error invalid argument at line N
    in file .../pythonInterface.c` (line 393 in the threads' release, where `cprefetch` calls `cudaMemPrefetchAsync`). The same
    check reporting `operation not supported` is BNB560's (no managed memory at all); `invalid configuration
    argument` is a kernel launch's (BNB519's family of kernel errors).

    ## Why it matters

    bitsandbytes' paged optimizers keep their state in CUDA managed memory (`cget_managed_ptr`, `cudaMallocManaged`)
    and prefetch it to the GPU before each update (`cprefetch`, `cudaMemPrefetchAsync`; line 393
    of the threads' release). CUDA answers `invalid argument` (cudaErrorInvalidValue) for a pointer or size it cannot prefetch, and
    the check aborts the process with that text. In bitsandbytes #782 it happened on resuming a DPO run from a
    checkpoint on 8xA100, the state restored into ordinary tensors; in axolotl #864 with
    `paged_adamw_32bit` in QLoRA training, where the maintainers moved their examples off the paged optimizer.

    ## How to fix

    Use an optimizer that does not page: `optim="adamw_bnb_8bit"` (transformers) or `bnb.optim.AdamW8bit`, or
    `adamw_torch`, and resume from the checkpoint with it. If you need the paged optimizer, upgrade bitsandbytes and
    check which releases are installed:

    ```bash
    python -c "import bitsandbytes, transformers; print(bitsandbytes.__version__, transformers.__version__)"
    ```
    """
    return FINDING.hit(facts)
