"""BNB601 lint-merge-into-kbit-weights: passes when no LoRA adapter is merged into 4-bit or 8-bit weights."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import _code, _evidence, _sites

PEFT_MERGE = "https://huggingface.co/docs/peft/developer_guides/quantization"


@rule(
    Severity.WARNING,
    "No LoRA adapter is merged into 4-bit or 8-bit weights",
    needs=("lint",),
    covers=("peft_merge_lora_into_4bit_rounding_warning", "peft_merge_in_8bit_mode_valueerror_legacy"),
    references=(PEFT_MERGE,),
)
def merge_into_kbit(facts: Facts) -> list[Hit]:
    """## What it detects

    A model loaded with a 4-bit or 8-bit `BitsAndBytesConfig` (directly, through a variable or a
    `**kwargs` dict), wrapped by `PeftModel.from_pretrained` or `get_peft_model`, then merged with
    `merge_and_unload()` or `merge_adapter()`.

    ## Why it matters

    Merging adds the adapter's delta to weights that are then quantized again: most of a small delta
    is rounded away. PEFT warns "Merge lora module to 4-bit linear may get different generations due to
    rounding errors"; old PEFT refused the 8-bit merge outright. The saved model is permanently worse
    than base + adapter.

    ## How to fix

    Merge into a 16-bit copy of the base model, then quantize the merged model when you load it:

    ```python
    base = AutoModelForCausalLM.from_pretrained(BASE, torch_dtype=torch.bfloat16)
    model = PeftModel.from_pretrained(base, ADAPTER).merge_and_unload()
    model.save_pretrained("merged")
    ```
    """
    hits = []
    for site in _sites(facts, "merge"):
        detail = site.detail
        base = detail.get("base") or "BASE_MODEL"
        adapter = detail.get("adapter")
        where = [] if adapter else ['# the adapter folder: the one model.save_pretrained("ADAPTER_DIR") wrote']
        adapter = adapter or '"ADAPTER_DIR"'
        loader = detail.get("loader") or "AutoModelForCausalLM"
        fix = _code(
            *where,
            f"base16 = {loader}.from_pretrained({base}, torch_dtype=torch.bfloat16)",
            f"merged = PeftModel.from_pretrained(base16, {adapter}).merge_and_unload()",
            'merged.save_pretrained("merged")  # quantize it when you load it',
        )
        hits.append(
            Hit(
                title=f"{detail.get('model', 'model')}.{detail.get('method', 'merge_and_unload')}() merges a LoRA "
                f"adapter into {detail.get('bits', '4')}-bit weights",
                explanation=(
                    "The adapter's delta is added to quantized weights and rounded back to "
                    f"{detail.get('bits', '4')} bits: much of it is lost, and the merged model is permanently worse "
                    "than the base model with the adapter."
                ),
                evidence=_evidence(site),
                remediation=Remediation("Merge into a 16-bit copy of the base model instead:\n" + fix),
                covers=(
                    ["peft_merge_in_8bit_mode_valueerror_legacy"]
                    if detail.get("bits") == "8"
                    else ["peft_merge_lora_into_4bit_rounding_warning"]
                ),
            )
        )
    return hits
