"""BNB530 peft-merge-into-quantized-base: passes when the log shows no LoRA merge into a 4-bit or 8-bit base layer."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.WARNING,
    "The log shows no LoRA merge into a 4-bit or 8-bit base layer",
    needs=("log",),
    covers=("peft_merge_lora_into_4bit_rounding_warning",),
    references=(
        "https://github.com/huggingface/peft/issues/2321",
        "https://github.com/huggingface/peft/issues/2105",
        "https://github.com/artidoro/qlora/issues/29",
    ),
    confirm=('python -c "import peft; print(peft.__version__)"',),
)
def peft_merge(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on PEFT's `UserWarning: Merge lora module to 4-bit linear may get different generations due to
    rounding errors.` (and the `Unmerge` and 8-bit variants). It is a warning: nothing fails, but the merged model
    differs from the adapter's outputs.

    ## Why it matters

    `merge_and_unload()` on a bitsandbytes 4-bit layer dequantizes the weight, adds the LoRA update and quantizes the
    sum to 4-bit again, so rounding error is unavoidable. PEFT's maintainers say there is no way to avoid it at this
    precision; the warning only makes users aware. QLoRA trained the adapter against the dequantized base, so the
    faithful merge happens in 16-bit.

    ## How to fix

    If output fidelity matters, do not merge into the quantized model:

    - keep the adapter unmerged; or
    - load the base model in bf16/fp16 (no `quantization_config`), attach the adapter, `merge_and_unload()` and save;
      then quantize the merged 16-bit model once if you need a 4-bit model:

    ```python
    base = AutoModelForCausalLM.from_pretrained(base_id, torch_dtype=torch.bfloat16)
    merged = PeftModel.from_pretrained(base, adapter_id).merge_and_unload()
    merged.save_pretrained("merged-bf16")  # quantize this once, when loading it later
    ```
    """
    if not log.seen(facts, S.PEFT_MERGE_QUANTIZED_WARNING):
        return None
    bits = "8" if any("8-bit" in m.text for m in log.matches(facts, S.PEFT_MERGE_QUANTIZED_WARNING)) else "4"
    return Hit(
        title=f"LoRA weights were merged into a {bits}-bit quantized base: generations will drift",
        explanation=f"merge_and_unload() on a bitsandbytes {bits}-bit layer dequantizes the weight, adds the LoRA "
        f"update and quantizes the result to {bits}-bit again, so rounding error is unavoidable and the merged model "
        "no longer matches the adapter's outputs. PEFT only warns; nothing is broken.",
        evidence=log.line_evidence(facts, S.PEFT_MERGE_QUANTIZED_WARNING),
        remediation=Remediation(
            "If output fidelity matters, do not merge into the quantized model: keep the adapter unmerged, or load the "
            "base model in bf16/fp16 (no quantization_config), attach the adapter, call merge_and_unload() and save; "
            "quantize the merged 16-bit model once afterwards if you need a 4-bit model."
        ),
    )
