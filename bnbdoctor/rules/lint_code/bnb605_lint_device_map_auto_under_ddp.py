"""BNB605 lint-device-map-auto-under-ddp: passes when no quantized model is loaded with device_map="auto" in a script launched as several processes."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import TRANSFORMERS_BNB, _code, _evidence, _sites


@rule(
    Severity.WARNING,
    'No quantized model is loaded with device_map="auto" in a script launched as several processes',
    needs=("lint",),
    covers=("accelerate_kbit_model_on_other_device",),
    references=(TRANSFORMERS_BNB,),
)
def device_map_auto_ddp(facts: Facts) -> list[Hit]:
    """## What it detects

    `from_pretrained(..., quantization_config=..., device_map="auto")` in a script that shows it runs
    as several processes (torchrun, `accelerate launch`, `LOCAL_RANK`, `init_process_group`).

    ## Why it matters

    `"auto"` spreads every process's copy over all GPUs; under DDP each process must own its model on
    its own GPU. Training then fails with "You can't train a model that has been loaded in 8-bit or
    4-bit precision on a different device than the one you're training on".

    ## How to fix

    ```python
    device_map={"": int(os.environ.get("LOCAL_RANK", 0))}
    ```
    """
    return [
        Hit(
            title=f'device_map="auto" for a {site.detail.get("bits", "4")}-bit model in a multi-process script',
            explanation=(
                'Under torchrun/accelerate each process loads its own copy; "auto" spreads it over every GPU instead '
                "of the process's own, and training a quantized model across devices is refused."
            ),
            evidence=_evidence(site),
            remediation=Remediation(
                "Give each process its own GPU:\n" + _code('device_map={"": int(os.environ.get("LOCAL_RANK", 0))}')
            ),
        )
        for site in _sites(facts, "device_map_auto")
    ]
