"""BNB401 quantized-model-exceeds-gpu-budget: passes when the bnb-quantized model fits in the GPU budgets from_pretrained computes."""

from __future__ import annotations

from bnbdoctor.facts import Facts, FitFacts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import VERDICT_LIKELY_RAISES, VERDICT_RAISES
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import (
    _TRANSFORMERS_QUANT_DOCS,
    _VERDICT_TEXT,
    _first_skip,
    _fit,
    _gpu_rows,
    _offloaded,
    _passing,
    _quant_name,
    _remedy_text,
    _underpacked,
)
from bnbdoctor.units import human


def _call_text(fit: FitFacts) -> str:
    memory = "max_memory=None" if fit.max_memory is None else "max_memory given"
    return f'device_map="{fit.device_map}", {memory}'


def _gpu_budget(fit: FitFacts) -> int:
    return sum(d.budget_bytes or 0 for d in fit.devices if d.device.isdigit())


@rule(
    Severity.ERROR,
    "The bnb-quantized model fits in the GPU budgets from_pretrained computes",
    needs=("fit",),
    covers=("dispatch_cpu_disk_valueerror",),
    references=(_TRANSFORMERS_QUANT_DOCS,),
)
def check_exceeds_budget(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts that `bnbdoctor fit` computes and is skipped without them. It reports one finding
    when the predicted `from_pretrained(..., quantization_config=BitsAndBytesConfig(...), device_map=...)` call raises
    `ValueError: Some modules are dispatched on the CPU or the disk`, and no simulated change to the call alone
    (`device_map="sequential"`, an explicit `max_memory`, a newer transformers) keeps every module on the GPUs. When one
    does, BNB402 reports the case instead: the GPUs can hold the model.

    The finding quotes the exact error text of the installed transformers, the model's size as transformers counts it,
    and for each device the budget at each step (the memory given, `get_balanced_memory`'s cap, the bnb quantizer's
    x0.9, the room kept on GPU 0 for the largest layer) against what was placed there. It names the first module that
    did not fit where the packer left the GPU. The fix lists the remedies that passed the same simulation: 4-bit instead
    of 8-bit, `llm_int8_enable_fp32_cpu_offload=True` with a custom device map and the CPU RAM it needs, the least GPU
    memory that fits, or the fewest GPUs of the given size.

    When the engine could not run the user's transformers (BNB408), the rule still reports a total-size estimate, as a
    **warning** titled "will probably raise".

    ## Why it matters

    transformers refuses to dispatch bnb 4/8-bit layers to the CPU or disk unless
    `llm_int8_enable_fp32_cpu_offload=True` is set and a dict device map is passed. It sizes the model before loading
    any weight: nn.Linear weights at 0.5 byte (4-bit) or 1 byte (8-bit), but embeddings, `lm_head`,
    `llm_int8_skip_modules`, `_keep_in_fp32_modules` and fused MoE experts in the model dtype. Then it keeps 10% of
    every budget for the quantizer and room on GPU 0 for the largest layer. A model whose "4-bit size" looks smaller
    than the GPU can still be refused.

    Older transformers told users to set `load_in_8bit_fp32_cpu_offload=True`; `BitsAndBytesConfig` has no such argument
    and raises `TypeError: __init__() got an unexpected keyword argument 'load_in_8bit_fp32_cpu_offload'`. The flag is
    `llm_int8_enable_fp32_cpu_offload`, which is what the remedies use.

    ## Example notes

    The fit report before the findings prints the code of each remedy, for example the device map for the CPU offload as
    a Python dict.

    ## How to fix

    - Load in 4-bit instead of 8-bit when the finding lists it.
    - Use GPUs with at least the memory the finding names, or more of them.
    - Offload to the CPU deliberately: `BitsAndBytesConfig(..., llm_int8_enable_fp32_cpu_offload=True)` and the dict
      device map printed in the fit report. The offloaded modules stay unquantized and run on the CPU: generation is
      many times slower.

      ```python
      bnb_config = BitsAndBytesConfig(load_in_4bit=True, llm_int8_enable_fp32_cpu_offload=True)
      model = AutoModelForCausalLM.from_pretrained(path, quantization_config=bnb_config, device_map=device_map)
      ```

    - Otherwise, use a smaller model.

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://github.com/huggingface/transformers/blob/main/src/transformers/quantizers/quantizer_bnb_4bit.py
      (`validate_environment`)
    """
    fit = _fit(facts)
    approximate = fit.verdict == VERDICT_LIKELY_RAISES
    if fit.verdict != VERDICT_RAISES and not approximate:
        return None
    if _underpacked(fit):
        return None  # BNB402: the GPUs can hold it, the placement does not use them
    size = human(fit.model_bytes)
    budget = _gpu_budget(fit)
    if approximate:
        title = (
            f'from_pretrained will probably raise "Some modules are dispatched on the CPU or the disk": the '
            f"{_quant_name(fit)} model is about {size}, the GPU budget about {human(budget)} (approximate)"
        )
    else:
        title = (
            f'from_pretrained will raise "Some modules are dispatched on the CPU or the disk": the '
            f"{_quant_name(fit)} model ({size} as transformers counts it) does not fit the GPU budget "
            f"({human(budget)} after x0.9)"
        )
    explanation = (
        f"With {_call_text(fit)}, transformers sizes every module on the meta device (nn.Linear weights at "
        f"{'1 byte' if fit.quant == '8bit' else '0.5 byte'}; embeddings, lm_head, skipped modules and fused experts "
        "in the model dtype), takes 90% of each device's memory for the bnb quantizer, keeps room on GPU 0 for the "
        f"largest layer, and packs modules in order. {human(_offloaded(fit))} land on cpu/disk, and bnb layers "
        "cannot be dispatched there unless llm_int8_enable_fp32_cpu_offload=True is set with a custom device_map. "
        + _first_skip(fit)
    )
    if approximate:
        explanation = (
            "The placement engine could not run the installed transformers, so this is a total-size "
            "estimate from tensor names, not the device map transformers would compute. " + explanation
        )
    evidence = [Evidence("verdict", _VERDICT_TEXT.get(fit.verdict, fit.verdict), "fit.verdict")]
    if fit.error_text:
        evidence.append(Evidence("error", f"ValueError: {fit.error_text.strip()}", "fit.error_text"))
    evidence.append(
        Evidence(
            "model size",
            f"{size} ({human(fit.quantized_bytes)} quantized + {human(fit.unquantized_bytes)} unquantized)",
            "fit.model_bytes",
        )
    )
    evidence.extend(_gpu_rows(fit))
    passing = _passing(fit)
    text = _remedy_text(passing) or (
        "No simulated change fits on these GPUs: use GPUs with more memory, or a smaller model."
    )
    text += (
        " The flag is llm_int8_enable_fp32_cpu_offload (older error text named load_in_8bit_fp32_cpu_offload, "
        "which BitsAndBytesConfig rejects with a TypeError)."
    )
    return Hit(
        title=title,
        explanation=explanation,
        evidence=evidence,
        remediation=Remediation(text),
        severity=Severity.WARNING if approximate else None,
    )
