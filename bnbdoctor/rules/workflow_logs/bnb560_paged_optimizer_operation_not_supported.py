"""BNB560 paged-optimizer-operation-not-supported: passes when the log shows no paged optimizer refused CUDA managed memory."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

CHECK = 'nvidia-smi -q | grep -i -E "virtualization|product name"'

FINDING = log.LogFinding(
    (S.PAGED_OPTIMIZER_OPERATION_NOT_SUPPORTED,),
    title="A bitsandbytes paged optimizer needs CUDA managed memory, which this GPU environment does not offer",
    explanation="Paged optimizers (PagedAdamW, paged_adamw_8bit/32bit, PagedLion) keep their state in CUDA managed "
    "memory; cudaMallocManaged in bitsandbytes' pythonInterface.c returned 'operation not supported', as on "
    "virtualised or pooled GPUs. The model and the GPU are fine; only paging cannot run here.",
    fix="Use an optimizer that does not page (adamw_bnb_8bit / bnb.optim.AdamW8bit, or torch.optim.AdamW), or run "
    "on a GPU environment with CUDA managed memory.",
    commands=(CHECK,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no paged optimizer refused CUDA managed memory",
    needs=("log",),
    covers=("paged_optimizer_operation_not_supported",),
    references=(
        "https://github.com/InternLM/xtuner/issues/247",
        "https://github.com/yangjianxin1/Firefly/issues/185",
    ),
    confirm=(CHECK,),
)
def paged_optimizer_operation_not_supported(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' CUDA check in `csrc/pythonInterface.c` reporting `Error operation not supported
    at line N in file .../pythonInterface.c` (line 380 or 351, by release), and on a GPU pooling layer's
    `cuMemAllocManaged() is not supported`, which comes just before it.

    ## Why it matters

    bitsandbytes' paged optimizers keep their state in CUDA managed (unified) memory so that it can be paged out to
    the CPU: `cget_managed_ptr` calls `cudaMallocManaged` (line 380 of pythonInterface.c in xtuner's release) and aborts with the CUDA
    error text when it fails. `operation not supported` (cudaErrorNotSupported) means the GPU environment does not
    offer managed memory: in Firefly #185 a GPU pooling layer says `cuMemAllocManaged() is not supported in the
    current version`; in xtuner #247 PagedAdamW32bit failed the same way on a CUDA 11.8 machine. Nothing is wrong with
    the model or the bitsandbytes install.

    ## How to fix

    Use an optimizer that does not page: `optim="adamw_bnb_8bit"` (transformers) or `bnb.optim.AdamW8bit`, or
    `torch.optim.AdamW`, the workaround in xtuner #247, whose maintainers then made `torch.optim.AdamW` their default.
    Paged optimizers need a GPU environment with CUDA managed memory (a bare-metal or passthrough GPU); check what
    the machine is:

    ```bash
    nvidia-smi -q | grep -i -E "virtualization|product name"
    ```
    """
    return FINDING.hit(facts)
