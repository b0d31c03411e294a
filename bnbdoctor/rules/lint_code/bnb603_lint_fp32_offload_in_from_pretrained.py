"""BNB603 lint-fp32-offload-in-from-pretrained: passes when llm_int8_enable_fp32_cpu_offload is given to BitsAndBytesConfig, not to from_pretrained."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import TRANSFORMERS_BNB, _code, _evidence, _sites


@rule(
    Severity.ERROR,
    "llm_int8_enable_fp32_cpu_offload is given to BitsAndBytesConfig, not to from_pretrained",
    needs=("lint",),
    covers=("fp32_cpu_offload_kwarg_typeerror",),
    references=(TRANSFORMERS_BNB,),
)
def fp32_offload_misplaced(facts: Facts) -> list[Hit]:
    """## What it detects

    `llm_int8_enable_fp32_cpu_offload=` passed to `from_pretrained` (popular answers to the "Some
    modules are dispatched on the CPU or the disk" ValueError do exactly this).

    ## Why it matters

    It is a `BitsAndBytesConfig` field. Given to `from_pretrained` it reaches the model's `__init__`,
    which raises `TypeError: __init__() got an unexpected keyword argument`.

    ## How to fix

    ```python
    quantization_config=BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)
    ```
    """
    return [
        Hit(
            title="llm_int8_enable_fp32_cpu_offload is passed to from_pretrained, not to BitsAndBytesConfig",
            explanation=(
                "from_pretrained does not know this keyword: it is passed on to the model's __init__, which raises "
                "TypeError. The option belongs to BitsAndBytesConfig."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Move it into the quantization config:\n"
                + _code(
                    "quantization_config=BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)"
                )
            ),
        )
        for site in _sites(facts, "offload_kwarg")
    ]
