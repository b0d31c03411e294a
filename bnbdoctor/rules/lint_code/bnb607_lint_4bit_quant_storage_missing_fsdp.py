"""BNB607 lint-4bit-quant-storage-missing-fsdp: passes when every 4-bit BitsAndBytesConfig in an FSDP script sets bnb_4bit_quant_storage."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import _code, _evidence, _sites

BNB_FSDP = "https://huggingface.co/docs/bitsandbytes/main/en/fsdp_qlora"


@rule(
    Severity.ERROR,
    "Every 4-bit BitsAndBytesConfig in an FSDP script sets bnb_4bit_quant_storage",
    needs=("lint",),
    covers=("fsdp_kbit_integer_storage",),
    references=(BNB_FSDP,),
)
def quant_storage_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    A 4-bit `BitsAndBytesConfig` without `bnb_4bit_quant_storage` in a script that uses FSDP.

    ## Why it matters

    4-bit weights are stored as uint8 by default; FSDP cannot flatten integer tensors together with
    the float ones ("Cannot flatten integer dtype tensors" / "Must flatten tensors with uniform dtype").

    ## How to fix

    ```python
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16)
    ```
    """
    return [
        Hit(
            title="4-bit weights stored as uint8 in an FSDP script: set bnb_4bit_quant_storage",
            explanation=(
                "FSDP flattens each module's parameters into one tensor of one float dtype; 4-bit weights default to "
                "uint8 storage, which it cannot shard with the rest."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Store the 4-bit weights in the model's dtype:\n"
                + _code(f"BitsAndBytesConfig(..., bnb_4bit_quant_storage=torch.{site.detail.get('dtype', 'bfloat16')})")
            ),
        )
        for site in _sites(facts, "quant_storage")
    ]
