"""BNB544 vllm-bnb-parallelism-unsupported: passes when the log shows no vLLM refusing a bitsandbytes model with tensor or pipeline parallelism."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.ERROR,
    "The log shows no vLLM refusing a bitsandbytes model with tensor or pipeline parallelism",
    needs=("log",),
    covers=("vllm_bnb_parallelism_unsupported",),
    references=(
        "https://github.com/vllm-project/vllm/issues/8434",
        "https://github.com/vllm-project/vllm/issues/13297",
    ),
    confirm=('python -c "import vllm; print(vllm.__version__)"',),
)
def vllm_bnb_parallelism_unsupported(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on vLLM's bitsandbytes loader refusing parallelism: `ValueError: BitAndBytes quantization with TP
    or PP is not supported yet.` (early releases) and `ValueError: Prequant BitsAndBytes ...` (a pre-quantized
    bitsandbytes checkpoint with tensor parallelism).

    ## Why it matters

    vLLM shards a bitsandbytes model by loading full-precision weights and quantizing each shard as it loads. A
    checkpoint that is already quantized stores packed 4-bit tensors and their states, which that loader cannot
    split across GPUs, and the first bitsandbytes loader supported no parallelism at all. Nothing is wrong with
    bitsandbytes or the GPUs: the serving configuration asks for something the loader does not do.

    ## How to fix

    - Serve the model on one GPU (`tensor_parallel_size=1`), or
    - upgrade vLLM and use the parallelism its release supports for bitsandbytes (the maintainer suggested pipeline
      parallelism for pre-quantized models), or
    - serve the full-precision checkpoint with load-time quantization (`--quantization bitsandbytes`), or a
      quantization format that supports tensor parallelism.
    """
    if not log.seen(facts, S.VLLM_BNB_PARALLELISM):
        return None
    return Hit(
        title="vLLM cannot shard this bitsandbytes model across GPUs (tensor/pipeline parallelism)",
        explanation=(
            "vLLM's bitsandbytes loader quantizes full-precision weights shard by shard as it loads them; a "
            "pre-quantized bitsandbytes checkpoint cannot be split that way, and early releases supported no "
            "parallelism with bitsandbytes at all. The serving configuration asks for more than one GPU."
        ),
        evidence=log.line_evidence(facts, S.VLLM_BNB_PARALLELISM, limit=2),
        remediation=Remediation(
            "Serve the model with tensor_parallel_size=1, or upgrade vLLM and use the parallelism it supports for "
            "bitsandbytes (pipeline parallelism for pre-quantized models), or quantize at load time "
            "(--quantization bitsandbytes on the full-precision checkpoint)."
        ),
    )
