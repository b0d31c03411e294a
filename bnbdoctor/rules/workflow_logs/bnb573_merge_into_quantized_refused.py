"""BNB573 merge-into-quantized-refused: passes when the log shows no refusal to merge adapters into a quantized model."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.MERGE_INTO_QUANTIZED_REFUSED,),
    title="The adapters cannot be merged into a quantized base model: merge them into the unquantized one",
    explanation="A LoRA adapter trained on a 4-bit/8-bit (QLoRA) or GPTQ base holds deltas for the original "
    "weights; adding them to quantized weights would round most of the training away, so LLaMA-Factory's export "
    "refuses. The adapter itself is fine: merged into the unquantized base model it keeps what was trained.",
    fix="Export with the original (16-bit) base model as model_name_or_path and no quantization_bit, the same "
    "adapter_name_or_path; quantize the merged model afterwards if you need a small one. Without room for the "
    "16-bit model on the GPU, merge on the CPU (export_device: cpu), or serve the adapter unmerged.",
    commands=("pip show llamafactory peft",),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no refusal to merge adapters into a quantized model",
    needs=("log",),
    covers=("merge_adapters_into_quantized_base_refused",),
    references=(
        "https://github.com/hiyouga/LlamaFactory/issues/5577",
        "https://github.com/hiyouga/LlamaFactory/issues/2795",
    ),
)
def merge_into_quantized_refused(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on LLaMA-Factory's `ValueError: Cannot merge adapters to a quantized model.`, raised by its
    export (`llamafactory-cli export`, older `src/export_model.py`) when the base model it loads is quantized: a
    4-bit/8-bit bitsandbytes load (`quantization_bit`) or a pre-quantized GPTQ/AWQ checkpoint.

    ## Why it matters

    QLoRA trains a LoRA adapter on top of frozen quantized weights, but the adapter's deltas belong to the original
    weights. Merging them into 4-bit weights means re-quantizing the sum, and most of what was trained is rounded
    away (peft warns `Merge lora module to 4-bit linear may get different generations due to rounding errors`; see
    [BNB530](BNB530.md)). LLaMA-Factory refuses instead: in LLaMA-Factory #5577 its maintainer answered that the
    adapter is to be merged into the unquantized base model; #2795 (a GPTQ Int4 base) was closed as won't fix.

    ## How to fix

    Export with the unquantized base model: `model_name_or_path` pointing at the original 16-bit model, no
    `quantization_bit`, the same `adapter_name_or_path`. Quantize the merged model afterwards if a small one is
    needed. Where the 16-bit model does not fit the GPU, merge on the CPU (`export_device: cpu`) or serve the adapter
    unmerged on the quantized base.
    """
    return FINDING.hit(facts)
