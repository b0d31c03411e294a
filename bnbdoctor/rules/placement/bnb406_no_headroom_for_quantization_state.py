"""BNB406 no-headroom-for-quantization-state: passes when every GPU keeps at least 3% of its memory free after the quantization state transformers does not count."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.fit_protocol import QUANT_4BIT, VERDICT_FITS
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import _fit, _gpu_rows
from bnbdoctor.units import human

#: Below this share of a GPU's memory left after the quantization state, BNB406 warns.
HEADROOM_SHARE = 0.03


@rule(
    Severity.WARNING,
    "Every GPU keeps at least 3% of its memory free after the quantization state transformers does not count",
    needs=("fit",),
)
def check_headroom(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and is skipped unless the predicted placement fits on the GPUs. It reports one
    finding when a GPU keeps less than 3% of its memory free once the quantization state of the weights placed there is
    added: the NF4/FP4 absmax (0.0625 byte per weight, 0.016 with `bnb_4bit_use_double_quant=True`, measured with
    bitsandbytes 0.50.2) or the int8 row statistics (4 bytes per output row).

    ## Why it matters

    transformers counts quantized weights at 0.5 or 1 byte and leaves 10% of each budget (`adjust_max_memory`) for
    everything else. The quantization state, the CUDA context, activations and the KV cache all come out of that 10%. A
    placement that uses the budget to the last megabyte loads without the `ValueError`, then runs out of memory while
    loading or at the first `generate()`.

    bnbdoctor adds only the quantization state, which it can compute exactly; it does not model the CUDA context,
    activations or the KV cache.

    ## How to fix

    - Pass a smaller `max_memory` for this GPU, so that modules move to the next one.
    - Enable `bnb_4bit_use_double_quant=True`: 0.016 byte of state per weight instead of 0.0625.
    - Use a GPU with more memory.

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/reference/nn/linear4bit
    - https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes
    """
    fit = _fit(facts)
    if fit.verdict != VERDICT_FITS:
        raise Skip("the model does not fit on the GPUs")
    short = []
    for device in fit.devices:
        if not device.device.isdigit() or not device.given_bytes or not device.used_bytes:
            continue
        left = device.given_bytes - device.used_bytes - device.quant_state_bytes
        if left < HEADROOM_SHARE * device.given_bytes:
            short.append((device, left))
    if not short:
        return None
    device, left = min(short, key=lambda item: item[1])
    need = device.used_bytes + device.quant_state_bytes
    given = device.given_bytes or 1
    if left < 0:
        title = (
            f"GPU {device.device} is filled past its memory once the quantization state is added: "
            f"{human(device.used_bytes)} + {human(device.quant_state_bytes)} > {human(device.given_bytes)}"
        )
    else:
        title = (
            f"GPU {device.device} keeps only {human(left)} ({left / given:.1%}) free once the "
            f"quantization state is added: {human(device.used_bytes)} + {human(device.quant_state_bytes)} "
            f"of {human(device.given_bytes)}"
        )
    what = (
        "NF4/FP4 absmax: 0.0625 byte per weight, 0.016 with double quant"
        if fit.quant == QUANT_4BIT
        else "int8 row statistics (SCB)"
    )
    return Hit(
        title=title,
        explanation=(
            f"transformers' placement counts quantized weights at "
            f"{'1 byte' if fit.quant == '8bit' else '0.5 byte'} and keeps 10% of each budget for "
            f"everything else. The quantization state ({what}) is not counted, and neither are the "
            "CUDA context, activations and the KV cache, which need this margin too: loading or the "
            f"first generate() can run out of memory on GPU {device.device} "
            f"({human(need)} of {human(device.given_bytes)} before any of those) although no ValueError "
            "is raised."
        ),
        evidence=[
            Evidence("quantization state", human(fit.quant_state_bytes or 0), "fit.quant_state_bytes"),
            *_gpu_rows(fit),
        ],
        remediation=Remediation(
            "Pass a smaller max_memory for this GPU so that modules move to the next one, enable "
            "bnb_4bit_use_double_quant=True (0.016 byte per weight instead of 0.0625), or use a "
            "GPU with more memory."
        ),
    )
