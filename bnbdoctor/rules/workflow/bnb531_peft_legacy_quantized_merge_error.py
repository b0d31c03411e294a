"""BNB531 peft-legacy-quantized-merge-error: passes when the log shows no old PEFT refusing to merge LoRA layers into a quantized model."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.PEFT_LEGACY_MERGE_ERROR,),
    title="This PEFT release cannot merge LoRA layers into a quantized model",
    explanation="PEFT releases before PR #851 (mid-2023) refuse to merge into any bitsandbytes-quantized model "
    "and say '8-bit mode' even for 4-bit models. Newer PEFT merges, with a rounding warning, because merging at "
    "low precision loses accuracy.",
    fix="Merge into an unquantized base instead (load it in bf16/fp16, attach the adapter, merge_and_unload, save), "
    "or upgrade PEFT if a merge into the quantized model is what you want.",
    commands=("pip install -U peft",),
)


@rule(
    Severity.ERROR,
    "The log shows no old PEFT refusing to merge LoRA layers into a quantized model",
    needs=("log",),
    covers=("peft_merge_in_8bit_mode_valueerror_legacy",),
    references=("https://github.com/huggingface/peft/pull/851", "https://github.com/artidoro/qlora/issues/28"),
    confirm=('python -c "import peft; print(peft.__version__)"',),
)
def peft_legacy_merge(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on old PEFT's `ValueError: Cannot merge LORA layers when the model is loaded in 8-bit mode` (raised
    for 4-bit models too).

    ## Why it matters

    PEFT releases before PR #851 (mid-2023) refused to merge into any bitsandbytes-quantized model and used the 8-bit
    wording for 4-bit models as well. Newer PEFT merges, with the rounding warning of [BNB530](BNB530.md).

    ## How to fix

    - Merge into an unquantized base instead (load it in bf16/fp16, attach the adapter, `merge_and_unload()`, save); or
    - upgrade PEFT if a merge into the quantized model is what you want:

      ```bash
      pip install -U peft
      ```
    """
    return FINDING.hit(facts)
