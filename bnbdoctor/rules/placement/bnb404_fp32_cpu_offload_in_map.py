"""BNB404 fp32-cpu-offload-in-map: passes when no modules are offloaded to the CPU with llm_int8_enable_fp32_cpu_offload."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import VERDICT_FP32_OFFLOAD
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import (
    _TRANSFORMERS_QUANT_DOCS,
    _VERDICT_TEXT,
    _fit,
    _gpu_rows,
    _offloaded,
    _passing,
    _remedy_text,
)
from bnbdoctor.units import human


@rule(
    Severity.WARNING,
    "No modules are offloaded to the CPU with llm_int8_enable_fp32_cpu_offload",
    needs=("fit",),
    covers=(),  # a slow but working placement; the catalog's TypeError is the misnamed flag (BNB451)
    references=(_TRANSFORMERS_QUANT_DOCS,),
)
def check_fp32_offload(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the call sets `llm_int8_enable_fp32_cpu_offload=True`
    (`bnbdoctor fit --fp32-offload`) and the predicted device map puts modules on `cpu` or `disk`. transformers accepts
    such a map, so there is no error; the finding says how much of the model runs on the CPU.

    ## Why it matters

    Offloaded modules run on the CPU on every forward pass. With a string `device_map` (`"auto"`), the map is computed
    after the modules were converted to bnb layers, so the offloaded layers are sized and loaded as quantized layers on
    the CPU; with a dict device map they are excluded from quantization and stay in the model dtype, which takes more
    CPU RAM. Either way generation is many times slower than on the GPU, which is easy to miss when the load succeeds.

    The flag is `llm_int8_enable_fp32_cpu_offload`. Older transformers error text named `load_in_8bit_fp32_cpu_offload`,
    which `BitsAndBytesConfig` rejects with `TypeError: __init__() got an unexpected keyword argument
    'load_in_8bit_fp32_cpu_offload'`.

    ## How to fix

    - Accept the speed, knowingly, or
    - use one of the listed remedies that keeps every module on a GPU (more GPU memory, `device_map="sequential"`, an
      explicit map).

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://github.com/huggingface/transformers/issues/26153
    """
    fit = _fit(facts)
    if fit.verdict != VERDICT_FP32_OFFLOAD:
        return None
    on_cpu = [k for k, v in fit.placement.items() if v in ("cpu", "disk")]
    return Hit(
        title=f"{human(_offloaded(fit))} of the model will run on the CPU (llm_int8_enable_fp32_cpu_offload=True)",
        explanation=(
            "With llm_int8_enable_fp32_cpu_offload=True, transformers accepts a map with cpu/disk entries. "
            f'With a string device_map ("{fit.device_map}") the map is computed after the modules were '
            "converted, so the offloaded layers are sized and loaded as bnb layers on the CPU; with a "
            "dict device_map they stay unquantized. Either way every forward pass crosses to the CPU."
        ),
        evidence=[
            Evidence("verdict", _VERDICT_TEXT[VERDICT_FP32_OFFLOAD], "fit.verdict"),
            Evidence("on cpu/disk", ", ".join(on_cpu[:8]) + (" ..." if len(on_cpu) > 8 else ""), "fit.placement"),
            *_gpu_rows(fit),
        ],
        remediation=Remediation(_remedy_text(_passing(fit)) or "Accept the speed, or use GPUs with more memory."),
    )
