"""BNB402 device-map-leaves-gpu-memory-unused: passes when no GPU is left with room while the model spills to the CPU or disk."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.fit_protocol import VERDICT_RAISES
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import (
    _ISSUE_46823,
    _PR_47203,
    _PR_47211,
    _SAME_HARDWARE,
    _VERDICT_TEXT,
    _first_skip,
    _fit,
    _gpu_rows,
    _passing,
    _remedy_text,
    _underpacked,
)
from bnbdoctor.units import human


@rule(
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
    or an explicit device map, loads the same model on the same GPUs. In transformers before {{ transformers.NO_SPLIT_BLOCK_FIX.first }} (#47203) and {{ transformers.BIGGEST_LEAF_FIX.first }}
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
