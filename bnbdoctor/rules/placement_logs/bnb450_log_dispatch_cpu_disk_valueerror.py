"""BNB450 log-dispatch-cpu-disk-valueerror: passes when the log shows no 'Some modules are dispatched on the CPU or the disk' ValueError."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.knowledge.transformers import BIGGEST_LEAF_FIX, NO_SPLIT_BLOCK_FIX
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement_logs._shared import (
    QUANTIZATION_DOCS,
    UPGRADE_TRANSFORMERS,
    VERSIONS_CHECK,
    fit_advice,
    fit_command,
)


def _later(facts: Facts, signature: SignatureId, than: SignatureId) -> bool:
    """True when the log shows ``signature`` after the first ``than``."""
    first, later = log.first(facts, than), log.matches(facts, signature)
    return bool(first and later and later[-1].line > first.line)


@rule(
    Severity.ERROR,
    "The log shows no 'Some modules are dispatched on the CPU or the disk' ValueError",
    needs=("log",),
    covers=("dispatch_cpu_disk_valueerror", "dispatch_valueerror_device_map_underpacking"),
    references=(
        QUANTIZATION_DOCS,
        "https://github.com/huggingface/transformers/issues/46823",
        "https://github.com/huggingface/transformers/pull/47203",
        "https://github.com/huggingface/transformers/pull/47211",
    ),
    confirm=("nvidia-smi", VERSIONS_CHECK),
)
def dispatch_valueerror(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads `facts.log` and fires when the log shows transformers' refusal to load a quantized model that
    `device_map` placed partly on the CPU or disk: `ValueError: Some modules are dispatched on the CPU or the disk. Make
    sure you have enough GPU RAM to fit the quantized model.` It raises from
    `quantizer_bnb_4bit`/`quantizer_bnb_8bit.validate_environment` (and, for a dict `device_map`, from
    `get_hf_quantizer`).

    The finding decides between the two causes from the transformers version the log shows (`transformers==X`, `pip
    list`, an environment report):

    | transformers | verdict |
    |---|---|
    | before {{ transformers.NO_SPLIT_BLOCK_FIX.first }} | the `device_map="auto"` under-packing bug (#46823) if the model fits in the GPUs' total memory, else a real shortage |
    | {{ transformers.NO_SPLIT_BLOCK_FIX.first }} – {{ transformers.ONLY_NO_SPLIT_BLOCK_FIX.last_text }} | #47203 is in; the biggest-leaf fix (#47211) is not: under-packing still possible with large `embed_tokens`/`lm_head` |
    | {{ transformers.BIGGEST_LEAF_FIX.first }} and newer | both fixes present: most likely a real shortage |
    | not in the log | either; the finding says how to tell |

    When the log also shows that CUDA is unusable, the finding says the GPU budget is zero. When a `TypeError` for the
    misnamed offload option follows the error, this finding drops to a warning and [BNB451](BNB451.md) leads.

    ## Why it matters

    bitsandbytes' 4-bit and 8-bit layers run only on the GPU. With `device_map="auto"`, accelerate's planner fills the
    GPUs within per-device budgets and puts what does not fit on `cpu` or `disk`; transformers then refuses, unless
    `llm_int8_enable_fp32_cpu_offload=True` keeps those modules in 32-bit on the CPU.

    Two situations produce the same message:

    - **A real shortage.** The quantized layers, plus the embeddings and `lm_head` that 4-bit does not shrink, plus
      reserved buffers, exceed the GPUs' memory. Typical on 8–12 GB cards, Colab/Kaggle T4s, or 13B+ models on 24 GB.
    - **Under-packing (transformers #46823).** `get_balanced_memory` caps every GPU but the last at `total / n +
      buffer`, and the packer never returns to a GPU it skipped. With a buffer sized from the first no-split block (a
      small dense layer in front of big MoE layers) or ignoring a large bf16 `embed_tokens`/`lm_head`, a model that fits
      several times over collapses onto the last GPU and spills to the CPU while the other GPUs stay nearly empty.
      #47203 (first in {{ transformers.NO_SPLIT_BLOCK_FIX.first }}) sizes the buffer from the largest no-split block; #47211 (first in {{ transformers.BIGGEST_LEAF_FIX.first }}) from the
      biggest leaf.

    ## How to fix

    - Real shortage: free GPU memory, use a smaller model or 4-bit instead of 8-bit, or set `max_memory`. To run the
      overflow on the CPU (slow, kept in 32-bit), pass `BitsAndBytesConfig(..., llm_int8_enable_fp32_cpu_offload=True)`
      together with a `device_map` dict that puts those modules on `"cpu"`.
    - Under-packing: upgrade transformers, or on an older release pass `device_map="sequential"`, an explicit
      `device_map`, or a larger `max_memory` for the first GPU so the largest module fits there:

      ```bash
      pip install -U "transformers>={{ transformers.BIGGEST_LEAF_FIX.first }}"
      ```

    - Predict the placement offline, without loading weights: `bnbdoctor fit org/name --quant 4bit --device-map auto`
      with the model id the log loads (read from the local Hugging Face cache; `hf download org/name config.json`
      fetches just the config) or its local folder. The finding prints that command when the log names the model.
    """
    if not log.seen(facts, S.DISPATCH_CPU_DISK_VALUEERROR):
        return None
    version = log.version(facts, "transformers")
    release = log.release(facts, "transformers")
    no_gpu = log.seen(facts, S.NO_GPU_DETECTED, S.TORCH_CUDA_NONE, S.NO_NVIDIA_DRIVER, S.CUDA_DRIVER_INSUFFICIENT)
    shortage_fix = (
        "If the model really does not fit: free GPU memory, use a smaller model or 4-bit instead of 8-bit, "
        "or set max_memory; to run the overflow on the CPU (slow, kept in 32-bit) pass "
        "BitsAndBytesConfig(..., llm_int8_enable_fp32_cpu_offload=True) together with a device_map dict "
        "that puts those modules on 'cpu'."
    )
    block, leaf = NO_SPLIT_BLOCK_FIX, BIGGEST_LEAF_FIX
    bug_fix = (
        f"Upgrade transformers to {leaf.first} or newer ({block.pr} is in {block.first}, {leaf.pr} in "
        f"{leaf.first}); on older releases "
        "pass device_map='sequential', an explicit device_map, or a larger max_memory for the first GPU so "
        "the largest module fits there."
    )
    commands = ["nvidia-smi"]
    lines = log.line_evidence(facts, S.DISPATCH_CPU_DISK_VALUEERROR, S.DEVICE_MAP_ARGUMENT, S.PACKAGE_VERSION, limit=3)
    how = (
        "With device_map='auto' (or 'balanced'/'sequential'), accelerate's planner gave some modules to 'cpu' or "
        "'disk' because they did not fit the GPU budget; bitsandbytes' 4/8-bit layers cannot run there, so "
        "transformers' quantizer refuses unless fp32 CPU offload is enabled. "
    )
    # A GPU-less run and a release with both fixes are real shortages; the other branches name the bug too.
    covers = ["dispatch_cpu_disk_valueerror", "dispatch_valueerror_device_map_underpacking"]
    if no_gpu:
        covers = ["dispatch_cpu_disk_valueerror"]
        title = "The quantized model was dispatched to the CPU because torch sees no usable GPU"
        why = (
            "The log also shows that CUDA is not usable, so the GPU budget is zero and modules land on the CPU: "
            "fix the GPU problem reported above first."
        )
        fix = "Make torch.cuda.is_available() return True (see the GPU findings), then load the model again."
        commands.append('python -c "import torch; print(torch.cuda.is_available())"')
    elif leaf.releases.contains(release):
        covers = ["dispatch_cpu_disk_valueerror"]
        title = f"Not enough GPU memory for the quantized model (transformers {version} has the under-packing fixes)"
        why = (
            "transformers " + version + " contains both fixes for the device_map='auto' under-packing bug "  # type: ignore[operator]
            f"({block.pr}, {leaf.pr}), so this is most likely a real shortage: the quantized layers plus the "
            "embeddings "
            "and lm_head (which 4-bit does not shrink) and the reserved buffers exceed what the GPUs offer. Very "
            "large mixture-of-experts models can still under-pack with 'auto': device_map='sequential' packs "
            "GPUs one after the other."
        )
        fix = shortage_fix + " For very large MoE models try device_map='sequential' first."
    elif block.releases.contains(release):
        title = (
            f"Too little GPU memory, or the remaining under-packing bug of transformers {version} "
            f"(fixed in {leaf.first})"
        )
        why = (
            f"transformers {version} sizes the per-GPU buffer from the largest no-split block ({block.pr}, "
            f"{block.first}) but not yet from the biggest single module ({leaf.pr}, {leaf.first}): a bf16 "
            "embed_tokens or lm_head larger than "
            "the per-GPU cap still pushes the model onto the last GPU and then the CPU, with the other GPUs "
            "nearly empty. If the model's quantized size fits comfortably in the GPUs' total memory, that is the "
            "cause."
        )
        fix = bug_fix + " " + shortage_fix
        commands.append(UPGRADE_TRANSFORMERS)
    elif release:
        title = (
            f"transformers {version} has the device_map='auto' under-packing bug (#46823), or the GPUs are too small"
        )
        why = (
            f"transformers {version} caps every GPU but the last at total/number of GPUs plus a buffer sized from "
            "the first no-split block, and never returns to a GPU it skipped: with large un-splittable modules "
            "(MoE layers, bf16 embeddings/lm_head) a model that fits in total collapses onto the last GPU and "
            "spills to the CPU. If the model's quantized size fits in the GPUs' total memory, this is the bug; "
            "otherwise it is a real shortage."
        )
        fix = bug_fix + " " + shortage_fix
        commands.append(UPGRADE_TRANSFORMERS)
    else:
        title = "device_map put part of the quantized model on the CPU or disk: too little GPU memory, or an under-packing bug"
        why = (
            "Most often the GPU is simply too small for the quantized model plus its unquantized embeddings and "
            f"lm_head. When the model clearly fits, transformers releases before {leaf.first} under-pack "
            f"device_map='auto' (#46823; fixed by {block.pr} in {block.first} and {leaf.pr} in {leaf.first}); the "
            "log does not show the transformers "
            "version."
        )
        fix = shortage_fix + " If the model clearly fits: " + bug_fix
        commands.append(VERSIONS_CHECK)
    if log.seen(facts, S.DISPATCH_MESSAGE_OLD_OPTION):
        why += (
            " This transformers' message names the option `load_in_8bit_fp32_cpu_offload`; the real "
            "BitsAndBytesConfig field is `llm_int8_enable_fp32_cpu_offload`."
        )
    followed = _later(facts, S.FP32_OFFLOAD_KWARG_TYPEERROR, S.DISPATCH_CPU_DISK_VALUEERROR)
    if followed:
        why += (
            " The log then shows the TypeError from the misnamed offload option: that is the current failure (BNB451)."
        )
    return Hit(
        title=title,
        explanation=how + why,
        evidence=lines,
        remediation=Remediation(fix + fit_advice(facts), [*commands, *fit_command(facts)]),
        severity=Severity.WARNING if followed else None,
        covers=covers,
    )
