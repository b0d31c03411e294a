"""BNB606 lint-4bit-compute-dtype-missing: passes when every 4-bit BitsAndBytesConfig loaded with a 16-bit torch_dtype sets bnb_4bit_compute_dtype."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import TRANSFORMERS_BNB, _code, _evidence, _sites


@rule(
    Severity.WARNING,
    "Every 4-bit BitsAndBytesConfig loaded with a 16-bit torch_dtype sets bnb_4bit_compute_dtype",
    needs=("lint",),
    covers=("bnb_4bit_compute_dtype_fp32_slow_warning",),
    references=(TRANSFORMERS_BNB,),
)
def compute_dtype_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    A 4-bit `BitsAndBytesConfig` without `bnb_4bit_compute_dtype`, used by a `from_pretrained` whose
    `torch_dtype` is float16 or bfloat16.

    ## Why it matters

    The compute dtype defaults to float32: every 4-bit layer dequantizes to fp32 and bitsandbytes
    warns "Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32
    (default). This will lead to slow inference or training speed."

    ## How to fix

    ```python
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
    ```
    """
    return [
        Hit(
            title=f"4-bit layers compute in float32 although torch_dtype is {site.detail.get('dtype', 'bfloat16')}",
            explanation=(
                "bnb_4bit_compute_dtype is not set, so it defaults to float32: each 4-bit matmul upcasts to fp32, "
                "which is slow and uses more memory."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Set the compute dtype in the config:\n"
                + _code(f"BitsAndBytesConfig(..., bnb_4bit_compute_dtype=torch.{site.detail.get('dtype', 'bfloat16')})")
            ),
        )
        for site in _sites(facts, "compute_dtype")
    ]
