"""Placement failures read from a log (BNB450-BNB469): the transformers dispatch ValueError,
the misnamed fp32-offload option, and device_map imbalance across GPUs.

These rules read ``facts.log`` (``needs=("log",)``): they run under ``bnbdoctor explain``. The
machine-side placement rules (BNB4xx in ``placement.py``, and ``bnbdoctor fit``) predict the same
failures from a model and the GPUs; here the evidence is the error message and the versions the
log shows. The under-packing facts come from the shared dispatch research (dispatch_fit.md §1,
§2.6): transformers #46823, fixed by #47203 (first in 5.14.0) and #47211 (first in 5.18.0).
"""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.transformers import BIGGEST_LEAF_FIX, NO_SPLIT_BLOCK_FIX
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

QUANTIZATION_DOCS = (
    "https://huggingface.co/docs/transformers/main/en/main_classes/quantization#offload-between-cpu-and-gpu"
)
#: The upgrade that has both under-packing fixes.
UPGRADE_TRANSFORMERS = f'pip install -U "transformers>={BIGGEST_LEAF_FIX.first}"'
VERSIONS_CHECK = 'python -c "import transformers, accelerate; print(transformers.__version__, accelerate.__version__)"'


def model_id(facts: Facts) -> str | None:
    """The model id passed to from_pretrained, when the log shows it literally (``org/name``, never ``./x``)."""
    for match in log.matches(facts, "model_id"):
        found = re.search(
            r"from_pretrained\(\s*(?:pretrained_model_name_or_path\s*=\s*)?['\"]([A-Za-z0-9][\w.-]*/[\w.-]+)['\"]",
            match.text,
        )
        if found and ".." not in found.group(1):
            return found.group(1)
    return None


def quant_bits(facts: Facts) -> str | None:
    for match in log.matches(facts, "quantization_config", "dispatch_cpu_disk_valueerror"):
        found = re.search(r"(?:load_in_|bnb_|quantizer_bnb_|Linear|matmul_)(4|8)bit", match.text)
        if found:
            return found.group(1)
    return None


def device_map_arg(facts: Facts) -> str | None:
    for match in log.matches(facts, "device_map_argument"):
        found = re.search(r"device_map\s*=\s*['\"]?(auto|balanced_low_0|balanced|sequential|\{)", match.text)
        if found:
            return "a dict" if found.group(1) == "{" else found.group(1)
    return None


def fit_command(facts: Facts) -> list[str]:
    """``bnbdoctor fit`` for the model the log loads, as a command that runs as printed (fit finds an ``org/name``
    id in the local Hugging Face cache); none when the log does not name the model (see :func:`fit_advice`)."""
    found = model_id(facts)
    return [f"bnbdoctor fit {found}{_fit_flags(facts)}"] if found else []


def fit_advice(facts: Facts) -> str:
    """A sentence for the fix when the log does not name the model: there is then no command to print."""
    if model_id(facts):
        return ""
    return (
        " To predict the placement offline, without loading weights, run bnbdoctor fit with the model's id or "
        f"folder (what from_pretrained was given) and{_fit_flags(facts)}."
    )


def _fit_flags(facts: Facts) -> str:
    dmap = device_map_arg(facts)
    extra = f" --device-map {dmap}" if dmap in ("auto", "balanced", "balanced_low_0", "sequential") else ""
    return f" --quant {quant_bits(facts) or '4'}bit{extra}"


@rule(
    "BNB450",
    "log-dispatch-cpu-disk-valueerror",
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
    | before 5.14.0 | the `device_map="auto"` under-packing bug (#46823) if the model fits in the GPUs' total memory, else a real shortage |
    | 5.14.0 – 5.17.x | #47203 is in; the biggest-leaf fix (#47211) is not: under-packing still possible with large `embed_tokens`/`lm_head` |
    | 5.18.0 and newer | both fixes present: most likely a real shortage |
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
      #47203 (first in 5.14.0) sizes the buffer from the largest no-split block; #47211 (first in 5.18.0) from the
      biggest leaf.

    ## How to fix

    - Real shortage: free GPU memory, use a smaller model or 4-bit instead of 8-bit, or set `max_memory`. To run the
      overflow on the CPU (slow, kept in 32-bit), pass `BitsAndBytesConfig(..., llm_int8_enable_fp32_cpu_offload=True)`
      together with a `device_map` dict that puts those modules on `"cpu"`.
    - Under-packing: upgrade transformers, or on an older release pass `device_map="sequential"`, an explicit
      `device_map`, or a larger `max_memory` for the first GPU so the largest module fits there:

      ```bash
      pip install -U "transformers>=5.18.0"
      ```

    - Predict the placement offline, without loading weights: `bnbdoctor fit org/name --quant 4bit --device-map auto`
      with the model id the log loads (read from the local Hugging Face cache; `hf download org/name config.json`
      fetches just the config) or its local folder. The finding prints that command when the log names the model.
    """
    if not log.seen(facts, "dispatch_cpu_disk_valueerror"):
        return None
    version = log.version(facts, "transformers")
    release = log.release(facts, "transformers")
    no_gpu = log.seen(facts, "no_gpu_detected", "torch_cuda_none", "no_nvidia_driver", "cuda_driver_insufficient")
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
    lines = log.line_evidence(facts, "dispatch_cpu_disk_valueerror", "device_map_argument", "package_version", limit=3)
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
    if log.seen(facts, "dispatch_message_old_option"):
        why += (
            " This transformers' message names the option `load_in_8bit_fp32_cpu_offload`; the real "
            "BitsAndBytesConfig field is `llm_int8_enable_fp32_cpu_offload`."
        )
    followed = _later(facts, "fp32_offload_kwarg_typeerror", "dispatch_cpu_disk_valueerror")
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


def _later(facts: Facts, signature: str, than: str) -> bool:
    """True when the log shows ``signature`` after the first ``than``."""
    first, later = log.first(facts, than), log.matches(facts, signature)
    return bool(first and later and later[-1].line > first.line)


@rule(
    "BNB451",
    "fp32-offload-option-name",
    Severity.ERROR,
    "The log shows no use of the old option name load_in_8bit_fp32_cpu_offload",
    needs=("log",),
    covers=("fp32_cpu_offload_kwarg_typeerror",),
    references=("https://github.com/huggingface/transformers/issues/26153", QUANTIZATION_DOCS),
    confirm=(VERSIONS_CHECK,),
)
def offload_option(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `TypeError: __init__() got an unexpected keyword argument 'load_in_8bit_fp32_cpu_offload'` (also
    when the argument's name wraps onto the next line), an error. When the log only shows a dispatch error whose text
    still names `load_in_8bit_fp32_cpu_offload`, it reports an info finding so the user does not follow that advice.

    ## Why it matters

    Older transformers ended their dispatch error with "you need to set `load_in_8bit_fp32_cpu_offload=True`", but
    `BitsAndBytesConfig` has no such field: the option is `llm_int8_enable_fp32_cpu_offload`. Following the message
    raises the `TypeError`. The flag alone is not enough either: it must come with a custom `device_map` that names the
    modules to keep on the CPU, and those modules then run in 32-bit on the CPU, slowly.

    ## How to fix

    ```python
    quantization_config = BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)
    device_map = {"transformer.word_embeddings": 0, "transformer.h": 0, "lm_head": "cpu"}  # your model's module names
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=quantization_config, device_map=device_map)
    ```

    If the model should fit on the GPU, see [BNB450](BNB450.md) first: offloading is slow.
    """
    error = log.seen(facts, "fp32_offload_kwarg_typeerror")
    if not error and not log.seen(facts, "dispatch_message_old_option"):
        return None
    fix = Remediation(
        "Use BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True) and pass a device_map dict "
        "that names the modules to keep on 'cpu' (for example {'transformer.h': 0, 'lm_head': 'cpu'}); offloaded "
        "modules stay in 32-bit on the CPU and run slowly."
    )
    if error:
        return Hit(
            title="BitsAndBytesConfig has no load_in_8bit_fp32_cpu_offload: the option is llm_int8_enable_fp32_cpu_offload",
            explanation="Older transformers told users to set `load_in_8bit_fp32_cpu_offload=True` in their dispatch "
            "error, but the BitsAndBytesConfig field has always been `llm_int8_enable_fp32_cpu_offload`, so following "
            'the message raises "unexpected keyword argument". It also needs a custom device_map.',
            evidence=log.line_evidence(facts, "fp32_offload_kwarg_typeerror"),
            remediation=fix,
        )
    return Hit(
        title="The error message names an option that does not exist (load_in_8bit_fp32_cpu_offload)",
        explanation="This transformers' dispatch error suggests `load_in_8bit_fp32_cpu_offload=True`; passing it fails "
        "with an unexpected-keyword TypeError. The BitsAndBytesConfig field is `llm_int8_enable_fp32_cpu_offload`.",
        evidence=log.line_evidence(facts, "dispatch_message_old_option", limit=1),
        remediation=fix,
        severity=Severity.INFO,
    )


@rule(
    "BNB452",
    "device-map-imbalance-oom",
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
      pip install -U "transformers>=5.18.0"
      ```

    - For training, prefer one full model copy per GPU (DDP with `device_map={"": local_rank}`) when it fits.
    """
    if not log.seen(facts, "cuda_out_of_memory"):
        return None
    quantized = (
        quant_bits(facts) is not None
        or log.seen(facts, "quantization_config")
        or bool(facts.python and facts.python.bitsandbytes.installed)
    )
    dmap = device_map_arg(facts)
    oom = log.matches(facts, "cuda_out_of_memory")
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
        evidence=log.line_evidence(facts, "cuda_out_of_memory", "device_map_argument", "quantization_config", limit=3),
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
