"""BNB452 device-map-imbalance-oom: passes when the log shows no CUDA out-of-memory error on one GPU of a quantized model spread by device_map."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BIGGEST_LEAF_FIX, NO_SPLIT_BLOCK_FIX
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement_logs._shared import (
    UPGRADE_TRANSFORMERS,
    VERSIONS_CHECK,
    device_map_arg,
    fit_advice,
    fit_command,
    quant_bits,
)


@rule(
    Severity.ERROR,
    "The log shows no CUDA out-of-memory error on one GPU of a quantized model spread by device_map",
    needs=("log",),
    covers=("accelerate_4bit_device_map_imbalance",),
    references=(
        "https://github.com/huggingface/accelerate/issues/2586",
        "https://github.com/huggingface/accelerate/pull/3244",
        "https://github.com/huggingface/transformers/issues/46823",
    ),
    confirm=("nvidia-smi", VERSIONS_CHECK),
)
def imbalance(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on a CUDA out-of-memory error (`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate … GPU 7
    …`) when the log also shows a bitsandbytes-quantized model (`load_in_4bit`, `bnb_4bit_…`, `Linear4bit`, a
    bitsandbytes frame) and either `device_map="auto"`/`"balanced"` or several GPUs (a GPU index above 0). A bare
    out-of-memory error, without a quantized model spread over GPUs, is not reported: it has many causes.

    ## Why it matters

    Balanced placement budgets every GPU as if all modules shrank with quantization. Large unquantized modules (the
    embeddings and `lm_head` of big-vocabulary models, several GB each in bf16) cannot be split, so they pile onto the
    first or last GPU; that GPU runs out of memory at the first training or generation step while others hold a few
    hundred MB. It is the same mechanism as transformers #46823 and accelerate #3244.

    ## How to fix

    - Pass `max_memory` per GPU to leave headroom on the crowded GPU, e.g. `max_memory={i: "20GiB" for i in range(n)}`,
      or write the `device_map` by hand.
    - Upgrade transformers (#47203 and #47211 size the balancing buffer from the largest modules):

      ```bash
      pip install -U "transformers>={{ transformers.BIGGEST_LEAF_FIX.first }}"
      ```

    - For training, prefer one full model copy per GPU (DDP with `device_map={"": local_rank}`) when it fits.
    """
    if not log.seen(facts, S.CUDA_OUT_OF_MEMORY):
        return None
    quantized = (
        quant_bits(facts) is not None
        or log.seen(facts, S.QUANTIZATION_CONFIG)
        or bool(facts.python and facts.python.bitsandbytes.installed)
    )
    dmap = device_map_arg(facts)
    oom = log.matches(facts, S.CUDA_OUT_OF_MEMORY)
    gpu_index = None
    for match in oom:
        found = re.search(r"GPU (\d{1,3})", match.text)
        if found:
            gpu_index = int(found.group(1))
    several = (facts.gpu is not None and len(facts.gpu.devices) > 1) or (gpu_index or 0) > 0
    if not quantized or not (dmap in ("auto", "balanced", "balanced_low_0") or several):
        return None
    where = f"GPU {gpu_index}" if gpu_index is not None else "one GPU"
    return Hit(
        title=f"CUDA ran out of memory on {where} while device_map spread a quantized model over several GPUs",
        explanation="Balanced placement budgets every GPU as if all modules shrank with quantization, but large "
        "unquantized modules (embeddings and lm_head of big-vocabulary models, several GB each in bf16) cannot be "
        "split and pile onto the first or last GPU; that GPU then runs out of memory at the first training or "
        "generation step while others sit almost empty. It is the same mechanism as transformers #46823 and "
        "accelerate #3244.",
        evidence=log.line_evidence(facts, S.CUDA_OUT_OF_MEMORY, S.DEVICE_MAP_ARGUMENT, S.QUANTIZATION_CONFIG, limit=3),
        remediation=Remediation(
            "Pass max_memory per GPU (for example {i: '20GiB' for i in range(n)}) to leave headroom on the crowded "
            f"GPU, or write the device_map by hand; upgrade transformers to {BIGGEST_LEAF_FIX.first} or newer "
            f"({NO_SPLIT_BLOCK_FIX.pr}, {BIGGEST_LEAF_FIX.pr}); for "
            "training, prefer one full model copy per GPU (DDP with device_map={'': local_rank}) when it fits."
            + fit_advice(facts),
            ["nvidia-smi", UPGRADE_TRANSFORMERS, *fit_command(facts)],
        ),
        severity=Severity.ERROR,
    )
