"""Rules about model placement with device_map (BNB4xx): the transformers dispatch ValueError and its remedies.

They read :class:`~bnbdoctor.facts.FitFacts`, which ``bnbdoctor fit`` computes with the user's own
transformers on a meta-device model (see bnbdoctor/fit/). BNB450-469 (log signatures for the same
catalog entries) live in ``placement_logs.py``.
"""

from __future__ import annotations

from bnbdoctor.facts import Facts, FitFacts, FitRemedy
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.fit_protocol import (
    ENGINE_APPROXIMATE,
    ENGINE_TRANSFORMERS,
    QUANT_4BIT,
    QUANT_8BIT,
    REMEDY_UPGRADE_TRANSFORMERS,
    SAME_HARDWARE_REMEDIES,
    STATUS_PASSES,
    STATUS_UNVERIFIED,
    VERDICT_ALL_CPU,
    VERDICT_FITS,
    VERDICT_FP32_OFFLOAD,
    VERDICT_LIKELY_FITS,
    VERDICT_LIKELY_RAISES,
    VERDICT_RAISES,
    VERDICT_UNKNOWN,
)
from bnbdoctor.knowledge.transformers import FIT_ENGINE_TRANSFORMERS
from bnbdoctor.rules.base import rule
from bnbdoctor.units import human

_TRANSFORMERS_QUANT_DOCS = (
    "https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu"
)
_ISSUE_46823 = "https://github.com/huggingface/transformers/issues/46823"
_PR_47203 = "https://github.com/huggingface/transformers/pull/47203"
_PR_47211 = "https://github.com/huggingface/transformers/pull/47211"
_BNB_1849 = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1849"
#: Remedies that change only the from_pretrained call, not the hardware or the quantization.
_SAME_HARDWARE = SAME_HARDWARE_REMEDIES
_VERDICT_TEXT = {
    VERDICT_FITS: "fits on the GPUs",
    VERDICT_RAISES: "raises ValueError",
    VERDICT_ALL_CPU: "no error, but the whole model is on the CPU",
    VERDICT_FP32_OFFLOAD: "no error, modules offloaded to the CPU (llm_int8_enable_fp32_cpu_offload)",
    VERDICT_LIKELY_FITS: "probably fits (approximate)",
    VERDICT_LIKELY_RAISES: "probably raises ValueError (approximate)",
    VERDICT_UNKNOWN: "unknown",
}


def _fit(facts: Facts) -> FitFacts:
    if facts.fit is None:
        raise Skip("bnbdoctor fit did not run")
    return facts.fit


def _quant_name(fit: FitFacts) -> str:
    return "8-bit" if fit.quant == QUANT_8BIT else "4-bit"


def _call_text(fit: FitFacts) -> str:
    memory = "max_memory=None" if fit.max_memory is None else "max_memory given"
    return f'device_map="{fit.device_map}", {memory}'


def _passing(fit: FitFacts, kinds: tuple[str, ...] | None = None) -> list[FitRemedy]:
    return [r for r in fit.remedies if r.status == STATUS_PASSES and (kinds is None or r.kind in kinds)]


def _remedy_text(remedies: list[FitRemedy], limit: int = 4) -> str:
    if not remedies:
        return ""
    items = [f"({i}) {r.title}" for i, r in enumerate(remedies[:limit], 1)]
    more = f"; {len(remedies) - limit} more in the fit report" if len(remedies) > limit else ""
    return "Simulated and passing: " + "; ".join(items) + more + ". The code for each is in the fit report."


def _gpu_rows(fit: FitFacts) -> list[Evidence]:
    rows = []
    for device in fit.devices:
        label = f"GPU {device.device}" if device.device.isdigit() else device.device
        parts = []
        if device.given_bytes is not None:
            parts.append(f"given {human(device.given_bytes)}")
        if device.balanced_cap_bytes is not None and device.balanced_cap_bytes != device.given_bytes:
            parts.append(f"balanced cap {human(device.balanced_cap_bytes)}")
        if device.budget_bytes is not None:
            parts.append(f"x0.9 {human(device.budget_bytes)}")
        if device.reserved_bytes:
            parts.append(f"reserved {human(device.reserved_bytes)}")
        parts.append(f"used {human(device.used_bytes)}")
        if device.quant_state_bytes and device.device.isdigit():
            parts.append(f"+ quantization state {human(device.quant_state_bytes)}")
        if device.skipped_at:
            parts.append(
                f"left at {device.skipped_at} ({human(device.skipped_atom_bytes)} > "
                f"{human(device.remaining_bytes)} remaining)"
            )
        rows.append(Evidence(label, ", ".join(parts), f"fit.devices[{fit.devices.index(device)}]"))
    return rows


def _offloaded(fit: FitFacts) -> int:
    return sum(d.used_bytes for d in fit.devices if d.device in ("cpu", "disk"))


def _gpu_budget(fit: FitFacts) -> int:
    return sum(d.budget_bytes or 0 for d in fit.devices if d.device.isdigit())


def _first_skip(fit: FitFacts) -> str:
    for device in fit.devices:
        if device.device.isdigit() and device.skipped_at:
            label = f"GPU {device.device}"
            return (
                f"The packer left {label} at {device.skipped_at} ({human(device.skipped_atom_bytes)}), "
                f"which is larger than the {human(device.remaining_bytes)} that remained there"
                + (
                    f" after keeping {human(device.reserved_bytes)} free for the largest layer still to place"
                    if device.reserved_bytes
                    else ""
                )
                + "; it never goes back to a device it has left."
            )
    return ""


def _underpacked(fit: FitFacts) -> bool:
    return fit.verdict in (VERDICT_RAISES, VERDICT_ALL_CPU) and bool(_passing(fit, _SAME_HARDWARE))


@rule(
    "BNB401",
    "quantized-model-exceeds-gpu-budget",
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


@rule(
    "BNB402",
    "device-map-leaves-gpu-memory-unused",
    Severity.ERROR,
    "No GPU is left with room while the model spills to the CPU or disk",
    needs=("fit",),
    covers=(
        "dispatch_valueerror_device_map_underpacking",
        "accelerate_4bit_device_map_imbalance",
        "dispatch_cpu_disk_valueerror",
    ),
    references=(_ISSUE_46823, _PR_47203, _PR_47211),
)
def check_underpacking(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the predicted call raises the dispatch `ValueError` (or
    puts the whole model on the CPU) although a change to the call alone makes it fit on the same GPUs:
    `device_map="sequential"`, an explicit `max_memory`, or a newer transformers verified on this machine (BNB407). Each
    of these was simulated with the same engine.

    The explanation says which of transformers' placement rules left GPU memory unused:

    - `get_balanced_memory` caps every GPU but the last at *model size / number of GPUs + 1.25 x the largest no-split
      block or leaf*, also when `max_memory` is given;
    - with `max_memory=None` and one GPU, from_pretrained takes 90% of the free memory and the bnb quantizer 90% again
      (81% in all);
    - the packer keeps room on GPU 0 for the largest layer still to place, and never goes back to a device it has left:
      the finding names the module that did not fit and what remained.

    ## Why it matters

    The error tells users to find more GPU memory, while the memory is there: a different `device_map` or `max_memory`,
    or an explicit device map, loads the same model on the same GPUs. In transformers before 5.14.0 (#47203) and 5.18.0
    (#47211) the balanced caps were sized from the first no-split block and the mean leaf, so large unquantized
    embeddings or MoE layers collapsed the model onto the last GPU (transformers #46823: MiniMax-M3 on 8 x 178 GB;
    Llama-3-8B in 4-bit on 8 x 4 GiB). The caps still cause it in current releases, for example Qwen3-235B-A22B in 4-bit
    on 8 x 78 GiB.

    ## How to fix

    Use one of the remedies the finding lists; the fit report prints the code for each. In order of preference:

    - `device_map="sequential"`: it fills each GPU to its budget without the balanced caps.
    - An explicit `max_memory`, which is reduced once (x0.9) instead of twice.
    - The explicit device map the report prints as Python; from_pretrained uses a dict as given.
    - Upgrade transformers when BNB407 verified that a newer release places the model.

    [bnbdoctor fit](../fit.md) explains how the placement is computed.
    """
    fit = _fit(facts)
    if not _underpacked(fit):
        return None
    passing = _passing(fit, _SAME_HARDWARE)
    unused = [d for d in fit.devices if d.device.isdigit() and d.budget_bytes and d.used_bytes == 0]
    outcome = (
        "will raise the dispatch ValueError" if fit.verdict == VERDICT_RAISES else "puts the whole model on the CPU"
    )
    title = f'device_map="{fit.device_map}" {outcome} although the GPUs can hold the model: {passing[0].title}'
    gpu_rows = [d for d in fit.devices if d.device.isdigit()]
    caps = [
        d
        for d in gpu_rows
        if d.balanced_cap_bytes is not None and d.given_bytes is not None and d.balanced_cap_bytes < d.given_bytes
    ]
    parts = []
    if caps and len(gpu_rows) > 1:
        parts.append(
            f"get_balanced_memory caps {len(caps)} of the GPUs at {human(caps[0].balanced_cap_bytes)} "
            "(model size / number of GPUs + 1.25 x the largest block or leaf), also when max_memory is "
            "given; the bnb quantizer then takes 90% of each cap."
        )
    if fit.max_memory is None and len(gpu_rows) == 1 and fit.device_map != "sequential":
        parts.append(
            "With max_memory=None and one GPU, from_pretrained takes 90% of the free memory and the bnb "
            "quantizer 90% again: 81% in all."
        )
    parts.append(_first_skip(fit))
    if unused:
        parts.append(
            f"{len(unused)} GPU{'s' if len(unused) != 1 else ''} "
            f"({', '.join(d.device for d in unused)}) received nothing."
        )
    evidence = [Evidence("verdict", _VERDICT_TEXT.get(fit.verdict, fit.verdict), "fit.verdict")]
    if fit.error_text:
        evidence.append(Evidence("error", f"ValueError: {fit.error_text.strip()}", "fit.error_text"))
    evidence.append(Evidence("model size", human(fit.model_bytes), "fit.model_bytes"))
    if fit.biggest_leaf_bytes:
        evidence.append(
            Evidence("largest leaf", f"{fit.biggest_leaf} ({human(fit.biggest_leaf_bytes)})", "fit.biggest_leaf")
        )
    evidence.extend(_gpu_rows(fit))
    return Hit(
        title=title,
        explanation=" ".join(p for p in parts if p),
        evidence=evidence,
        remediation=Remediation(_remedy_text(_passing(fit))),
        # One GPU cannot be imbalanced against another.
        covers=[
            "dispatch_valueerror_device_map_underpacking",
            "dispatch_cpu_disk_valueerror",
            *(["accelerate_4bit_device_map_imbalance"] if len(gpu_rows) > 1 else []),
        ],
    )


@rule(
    "BNB403",
    "quantized-model-all-on-cpu",
    Severity.WARNING,
    "device_map puts the quantized model on a GPU, not wholly on the CPU",
    needs=("fit",),
    covers=("dispatch_cpu_disk_valueerror",),
)
def check_all_cpu(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the predicted device map puts the whole model on the CPU
    (`{"": "cpu"}`). This happens when not even the first module fits the GPU budget: the packer moves straight to the
    CPU.

    ## Why it matters

    transformers raises the dispatch `ValueError` only for a map that mixes GPUs with `cpu` or `disk`. A map that is
    entirely `cpu` passes its check, so the load succeeds without a word and the model runs on bitsandbytes' CPU
    backend, far slower than on a GPU. The same happens when CUDA is not visible to torch at all.

    ## How to fix

    - Give the GPU more memory, or use more GPUs, as the finding says.
    - If a GPU is present but not used, check that torch sees it: run `bnbdoctor` (without `fit`).

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu
    """
    fit = _fit(facts)
    if fit.verdict != VERDICT_ALL_CPU:
        return None
    gpu = next((d for d in fit.devices if d.device.isdigit()), None)
    why = (
        f" Not even the first module fits GPU {gpu.device}: {gpu.skipped_at} needs "
        f"{human(gpu.skipped_atom_bytes)}, {human(gpu.remaining_bytes)} remained."
        if gpu and gpu.skipped_at
        else ""
    )
    return Hit(
        title=f"from_pretrained will not raise, but it puts the whole {_quant_name(fit)} model on the CPU",
        explanation=(
            "transformers raises the dispatch ValueError only when a map mixes GPUs with cpu or disk. A "
            "map that is entirely {'': 'cpu'} passes its check and the model runs on bitsandbytes' CPU "
            "backend, far slower than on a GPU." + why
        ),
        evidence=[Evidence("verdict", _VERDICT_TEXT[VERDICT_ALL_CPU], "fit.verdict"), *_gpu_rows(fit)],
        remediation=Remediation(_remedy_text(_passing(fit)) or "Use a GPU with more memory, or a smaller model."),
    )


@rule(
    "BNB404",
    "fp32-cpu-offload-in-map",
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


@rule(
    "BNB405",
    "large-unquantized-tensors",
    Severity.WARNING,
    "Tensors bitsandbytes leaves unquantized are a small part of the model",
    needs=("fit",),
    covers=("accelerate_4bit_device_map_imbalance",),
    references=(_BNB_1849, _PR_47211),
)
def check_unquantized(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when a quarter or more of the model, as transformers counts
    it, stays unquantized. It lists the largest such tensors by kind: embeddings, `lm_head`, fused MoE experts, modules
    in `llm_int8_skip_modules`, norms. The severity is **warning** when fused MoE experts are a quarter of the model or
    more, and **info** otherwise (embeddings and `lm_head` of a small model).

    ## Why it matters

    bitsandbytes replaces only modules whose type is exactly `nn.Linear`. transformers keeps embeddings, `lm_head` (and
    tied weights), `llm_int8_skip_modules` and `_keep_in_fp32_modules` in the model dtype. The fused 3-D expert tensors
    of transformers v5 MoE models (`Qwen3MoeExperts`, `DeepseekV3Experts`, ...) are not `nn.Linear`, so bitsandbytes
    does not quantize them at all (bitsandbytes #1849): a "4-bit" Qwen3-235B-A22B is 428.5 GiB, not 110 GiB as a uniform
    division suggests.

    These tensors are also single atoms for the device-map packer. A large bf16 embedding or `lm_head` decides which GPU
    is left (BNB402) and makes `device_map="auto"` imbalanced across GPUs.

    ## How to fix

    - Budget for these tensors in the model dtype when choosing GPUs.
    - For MoE models in transformers v5, use a checkpoint pre-quantized in a format that quantizes the experts, or GPUs
      sized for the bf16 experts.
    - Keep `llm_int8_skip_modules` short: every module listed stays in the model dtype.

    [bnbdoctor fit](../fit.md) explains how the placement is computed.
    """
    fit = _fit(facts)
    if not fit.model_bytes or fit.unquantized_bytes is None:
        raise Skip("no sizes")
    share = fit.unquantized_bytes / fit.model_bytes
    if share < 0.25:
        return None
    experts = fit.unquantized_by_kind.get("experts", 0)
    parts = sorted(fit.unquantized_by_kind.items(), key=lambda kv: -kv[1])
    floor = fit.unquantized_bytes * 0.01
    listing = ", ".join(f"{kind} {human(size)}" for kind, size in parts[:4] if size >= floor)
    explanation = (
        "bitsandbytes replaces only modules whose type is exactly nn.Linear. transformers keeps "
        "embeddings, lm_head (and tied weights), llm_int8_skip_modules and _keep_in_fp32_modules in the "
        f"model dtype{', and' if experts else ''}"
        + (
            " the fused 3-D expert tensors of transformers v5 MoE models are not nn.Linear, so they are "
            "not quantized at all (bitsandbytes #1849)."
            if experts
            else "."
        )
        + " These tensors are single large atoms: a balanced device_map cannot split them, and they "
        "decide which GPU is left."
    )
    severity = Severity.WARNING if experts and experts / fit.model_bytes >= 0.25 else Severity.INFO
    evidence = [
        Evidence(
            "unquantized",
            f"{human(fit.unquantized_bytes)} of {human(fit.model_bytes)} ({share:.0%})",
            "fit.unquantized_bytes",
        )
    ]
    for tensor in [t for t in fit.largest_unquantized if t.bytes >= floor][:4]:
        evidence.append(
            Evidence(
                tensor.kind,
                f"{tensor.name} {tuple(tensor.shape)} {tensor.dtype} {human(tensor.bytes)}",
                "fit.largest_unquantized",
            )
        )
    fix = (
        "Budget for these tensors in the model dtype. For MoE models in transformers v5, bitsandbytes does not "
        "shrink the experts: use a checkpoint pre-quantized in a format that quantizes experts, or GPUs sized for "
        "the bf16 experts."
        if experts
        else "Budget for these tensors in the model dtype; llm_int8_skip_modules only adds to them."
    )
    return Hit(
        title=f"{share:.0%} of the {_quant_name(fit)} model stays unquantized: {listing}",
        explanation=explanation,
        evidence=evidence,
        remediation=Remediation(fix),
        severity=severity,
        # Informational for a dense model: the tensors are noted, no imbalance is diagnosed.
        covers=None if severity == Severity.WARNING else [],
    )


#: Below this share of a GPU's memory left after the quantization state, BNB406 warns.
HEADROOM_SHARE = 0.03


@rule(
    "BNB406",
    "no-headroom-for-quantization-state",
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


@rule(
    "BNB407",
    "transformers-underpacking-fixed-upstream",
    Severity.WARNING,
    "The installed transformers sizes the balanced caps by the largest block and leaf (#47203, #47211)",
    needs=("fit",),
    covers=("dispatch_valueerror_device_map_underpacking",),
    references=(_ISSUE_46823, _PR_47203, _PR_47211),
)
def check_upgrade(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts. When the installed transformers predates the under-packing fixes (#47203 in 5.14.0,
    #47211 in 5.18.0), the call uses a balanced device map (`auto`, `balanced`, `balanced_low_0`) and the prediction is
    an error or an all-CPU map, `bnbdoctor fit` re-runs the same placement with a newer transformers, if one is
    available on this machine:

    - another copy on the patient interpreter's `sys.path` (for example site-packages behind an older copy on
      `PYTHONPATH`);
    - a folder given with `--compare-transformers DIR` (`pip install --target DIR transformers`).

    If the newer release places the model on the GPUs, the finding is a **warning** that says so and names the version
    and folder it was verified with. If no newer transformers is available, the finding is **info**: upgrading may help,
    but bnbdoctor cannot verify it offline and does not claim it.

    ## Why it matters

    `get_balanced_memory` caps every GPU but the last. Before #47203 the buffer added to the caps was sized from the
    first block of each no-split class (a small dense layer in front of large MoE layers); before #47211 it ignored
    large leaves such as a bf16 `embed_tokens` or `lm_head`. The caps were then smaller than a single block, the packer
    skipped GPU after GPU and spilled to the CPU: Llama-3-8B in 4-bit raises on 8 x 4 GiB with transformers 5.13.1 and
    fits with 5.18 and later.

    ## Example notes

    BNB402 is reported for the same call, with `device_map="sequential"` as a remedy that works without upgrading.

    ## How to fix

    ```bash
    pip install -U "transformers>=5.18"
    ```

    To verify an upgrade without touching the environment first:

    ```bash
    pip install --target /tmp/tf-new transformers
    bnbdoctor fit ./model ... --compare-transformers /tmp/tf-new
    ```

    [bnbdoctor fit](../fit.md) explains how the placement is computed.
    """
    fit = _fit(facts)
    upgrade = next((r for r in fit.remedies if r.kind == REMEDY_UPGRADE_TRANSFORMERS), None)
    if upgrade is None or upgrade.status not in (STATUS_PASSES, STATUS_UNVERIFIED):
        return None
    installed = fit.versions.get("transformers", "?")
    if upgrade.status == STATUS_PASSES:
        return Hit(
            title=f"transformers {installed} has the device_map under-packing bug; {upgrade.transformers_version} "
            "places this model without the error (verified here)",
            explanation=upgrade.detail,
            evidence=[
                Evidence("installed", f"transformers {installed}", "fit.versions.transformers"),
                Evidence(
                    "verified with",
                    f"transformers {upgrade.transformers_version} in {upgrade.transformers_location}",
                    "fit.remedies",
                ),
            ],
            remediation=Remediation(
                f"Upgrade transformers to {upgrade.transformers_version} or newer.",
                [upgrade.code] if upgrade.code else [],
            ),
        )
    return Hit(
        title=f"transformers {installed} predates the device_map under-packing fixes; whether upgrading helps here "
        "cannot be verified offline",
        explanation=upgrade.detail,
        evidence=[Evidence("installed", f"transformers {installed}", "fit.versions.transformers")],
        remediation=Remediation(
            "Prefer a remedy verified above. To verify an upgrade without changing this "
            "environment: pip install --target DIR transformers, then re-run with "
            "--compare-transformers DIR."
        ),
        severity=Severity.INFO,
    )


@rule(
    "BNB408",
    "fit-engine-degraded",
    Severity.INFO,
    "The placement was computed by the installed transformers with bitsandbytes itself",
    needs=("fit",),
)
def check_engine(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when the placement was not computed by the installed
    transformers with the real bitsandbytes:

    - **approximate mode**: torch, transformers or accelerate cannot be imported in the patient interpreter, or
      transformers is outside the range the engine replicates (5.12 to 5.x). The sizes then come from the
      `*.safetensors` headers (or the config) by tensor name, the verdict compares totals with the GPU budgets after
      x0.9 (`likely_fits` / `likely_raises`), and no device map or remedy is computed;
    - **stand-in mode**: bitsandbytes is missing or fails to import. A stand-in module provides `Linear4bit` and
      `Linear8bitLt` as plain `nn.Linear` subclasses, so transformers' own module selection and placement run unchanged.
      The placement is still exact (the tests compare it with real bitsandbytes), but the real load needs a working
      bitsandbytes.

    ## Why it matters

    The approximate verdict can be wrong near the limit: it does not apply the balanced caps, the GPU 0 reservation or
    the packing order, which decide most borderline cases (BNB402). The stand-in verdict is exact, but a broken
    bitsandbytes will fail the real load for another reason first.

    ## How to fix

    - Approximate mode: install torch, transformers (5.12 or newer) and accelerate in the interpreter that loads the
      model, or point `--python` at one that has them.
    - Stand-in mode: run `bnbdoctor` (without `fit`) to find out why bitsandbytes does not import.

      ```bash
      bnbdoctor
      ```

    [bnbdoctor fit](../fit.md) explains how the placement is computed.

    ## Further reading

    - https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes
    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    fit = _fit(facts)
    if fit.engine == ENGINE_TRANSFORMERS:
        return None
    if fit.engine == ENGINE_APPROXIMATE:
        return Hit(
            title=f"Approximate only: {_VERDICT_TEXT.get(fit.verdict, fit.verdict)}",
            explanation=(
                f"{fit.engine_note}. So the verdict compares totals, sized from tensor names, with the "
                "GPU budgets after from_pretrained's x0.9; it is not the device map from_pretrained would "
                "compute, and no remedy was simulated."
            ),
            evidence=[Evidence("engine", fit.engine_note or ENGINE_APPROXIMATE, "fit.engine_note")],
            remediation=Remediation(
                f"Install torch, transformers ({FIT_ENGINE_TRANSFORMERS.first_text} or newer) and "
                "accelerate in the interpreter "
                "that loads the model, or point --python at one that has them."
            ),
        )
    return Hit(
        title="bitsandbytes could not be imported; a stand-in selected the modules to quantize",
        explanation=(
            f"{fit.engine_note}. The placement is still transformers' own: the stand-in only provides "
            "bitsandbytes' Linear4bit/Linear8bitLt classes so that transformers' module selection and sizes "
            "run unchanged. The real load needs a working bitsandbytes."
        ),
        evidence=[Evidence("engine", fit.engine_note or fit.engine, "fit.engine_note")],
        remediation=Remediation(
            "Run `bnbdoctor` (without `fit`) to find out why bitsandbytes does not import.", ["bnbdoctor"]
        ),
    )
