"""Log rules for what transformers, accelerate and FSDP refuse to do with a 4-bit/8-bit model, two
harmless messages, and the error no family names (BNB534-BNB549, issue 12).

These rules read ``facts.log`` (``needs=("log",)``) and run under ``bnbdoctor explain``; a machine
has none of these facts (they happen in the user's script). The message families are in
``logs/collectors/kbit.py``; the release boundaries in ``knowledge/kbit.py``. BNB549 reports an
exception line that no family names, so that an unknown error is never "no known failure".
"""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.knowledge.kbit import BNB_4BIT_MOVE, BNB_8BIT_MOVE, KBIT_KWARGS_REMOVED, LOAD_IN_4BIT_KWARG
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.common import bnb_of, torch_of

VERSIONS_CHECK = (
    'python -c "import transformers, bitsandbytes; print(transformers.__version__, bitsandbytes.__version__)"'
)
QUANT_DOCS = "https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes"
#: The rule that reports an error no family names: explain keeps it only when no error finding stands.
UNRECOGNISED_ERROR_RULE = "BNB549"


def _bits(text: str) -> str | None:
    found = re.search(r"load_in_([48])bit|`([48])-bit`|([48])-bit", text)
    return next((g for g in found.groups() if g), None) if found else None


def _torch_version(facts: Facts) -> str | None:
    torch = torch_of(facts)
    return (torch.version if torch and torch.installed else None) or log.version(facts, "torch")


# ------------------------------------------------------------------------------------------ BNB534
def _no_gpu_cause(facts: Facts, devices: str | None) -> tuple[str, str, str, list[str]] | None:
    """(cause in a few words, why, fix, commands) for what the rest of the log shows about the missing accelerator."""
    torch_version = _torch_version(facts) or ""
    if log.seen(facts, "torch_cuda_none") or torch_version.endswith("+cpu"):
        shown = f"torch {torch_version}" if torch_version else "torch.version.cuda = None"
        return (
            f"torch is a CPU-only build ({shown})",
            f"The log shows a CPU-only build of torch ({shown}): it cannot see any GPU.",
            (
                "Install a CUDA build of torch from the PyTorch index for your driver (pip install torch --index-url "
                "https://download.pytorch.org/whl/cuXXX), then load the model again."
            ),
            [TORCH_CHECK, "nvidia-smi"],
        )
    no_driver = facts.gpu is not None and not facts.gpu.nvml_available
    if log.seen(facts, "no_nvidia_driver", "libcuda_not_found") or no_driver:
        return (
            "no NVIDIA driver is visible to torch",
            (
                "The log shows that torch finds no NVIDIA driver (libcuda): the GPU is not visible to this process. In "
                "a container that means it was started without GPU access; on a host, the driver is missing."
            ),
            (
                "Start the container with the GPU (docker run --gpus all, or the NVIDIA container runtime), or install "
                "the "
                "NVIDIA driver on the host; nvidia-smi must list the GPU inside the environment that runs the script."
            ),
            ["nvidia-smi", TORCH_CHECK],
        )
    if log.seen(facts, "driver_too_old", "cuda_driver_insufficient", "cuda_error_803"):
        return (
            "CUDA failed to initialise (driver)",
            (
                "The log shows that CUDA failed to initialise (the driver is too old for this torch, or does not match "
                "its kernel module): torch.cuda.is_available() is False although a GPU may be present."
            ),
            "Update the NVIDIA driver, or install a torch built for an older CUDA that this driver supports.",
            ["nvidia-smi", TORCH_CHECK],
        )
    if log.is_macos(facts) or (devices and "mps" in devices):
        return (
            "Apple Silicon (MPS) is not accepted by this bitsandbytes/transformers",
            (
                "The log points to Apple Silicon (MPS): older bitsandbytes and transformers releases accept only CUDA "
                "(and a few other backends) for quantization."
            ),
            (
                "Use a bitsandbytes release with MPS support and a transformers that accepts it, or another "
                "quantization method on macOS."
            ),
            [VERSIONS_CHECK],
        )
    if log.seen(facts, "compiled_without_gpu_support", "cpu_library_selected"):
        return (
            "bitsandbytes saw no usable CUDA either",
            (
                "The log also shows bitsandbytes loading its CPU library: bitsandbytes saw no usable CUDA either, so "
                "torch "
                "or the driver is the problem rather than the quantizer."
            ),
            (
                "Make torch.cuda.is_available() return True (a CUDA build of torch, a visible driver), then reinstall "
                "bitsandbytes if it still loads its CPU library."
            ),
            [TORCH_CHECK, "nvidia-smi", "python -m bitsandbytes"],
        )
    return None


@rule(
    "BNB534",
    "quantizer-found-no-gpu",
    Severity.ERROR,
    "The log shows no bitsandbytes quantizer refusing to load because it found no GPU",
    needs=("log",),
    covers=("quantizer_no_gpu_found",),
    references=(
        "https://github.com/huggingface/diffusers/issues/13361",
        "https://github.com/huggingface/diffusers/pull/13915",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1627",
        "https://github.com/hiyouga/LlamaFactory/issues/4369",
    ),
    confirm=(TORCH_CHECK, "nvidia-smi"),
)
def quantizer_no_gpu(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when transformers' (or diffusers') bitsandbytes quantizer refuses to load a model because torch
    offers no accelerator it can quantize on. Its `validate_environment` says so in one of these wordings, by release:

    - `RuntimeError: No GPU found. A GPU is needed for quantization.` (transformers 4.3x-4.4x);
    - ``RuntimeError: None of the available devices `available_devices = None` are supported by the bitsandbytes
      version you have installed: `bnb_supported_devices = {...}` `` (the multi-backend check, transformers 4.4x-5.x);
    - `RuntimeError: CUDA is required but not available for bitsandbytes. ...`;
    - `ImportError: The installed version of bitsandbytes (<0.43.1) requires CUDA, but CUDA is not available.`

    The finding says which cause the rest of the log points to: a CPU-only torch (`+cpu`, `torch.version.cuda` is
    None), no NVIDIA driver visible (a container started without the GPU), CUDA failing to initialise (driver too old
    or mismatched), Apple Silicon (MPS), or bitsandbytes falling back to its CPU library. When the log shows none of
    these, it says so and what to run.

    ## Why it matters

    The message names the symptom (torch sees no supported accelerator), not its cause; users often reinstall
    bitsandbytes or transformers, which changes nothing while torch itself cannot see the GPU.

    ## How to fix

    Find out why torch sees no accelerator:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    nvidia-smi
    ```

    Install a CUDA build of torch, start the container with `--gpus all` or the NVIDIA runtime, or fix the driver. On
    Apple Silicon use a bitsandbytes and transformers that accept MPS, or another quantization method.
    """
    matches = log.matches(facts, "quantizer_no_gpu")
    if not matches:
        return None
    devices = None
    for match in matches:
        found = re.search(r"available_devices = (None|set\(\)|\{[^}]*\})", match.text)
        if found:
            devices = found.group(1)
    cause = _no_gpu_cause(facts, devices)
    seen = f" (available_devices = {devices})" if devices else ""
    what = (
        "transformers' bitsandbytes quantizer checks, before loading any weight, that torch offers an accelerator the "
        f"installed bitsandbytes supports; it found none{seen}. The message names the symptom, not the cause: a "
        "CPU-only torch, a container without GPU access, a driver or CUDA initialisation failure, or an unsupported "
        "platform. "
    )
    if cause is None:
        return Hit(
            title="transformers found no GPU to quantize on; the log does not show why torch sees none",
            explanation=what + "The rest of the log shows none of these; check torch and the driver on the machine.",
            evidence=log.line_evidence(facts, "quantizer_no_gpu", limit=2),
            remediation=Remediation(
                "Check what torch sees: a CUDA build of torch, torch.cuda.is_available() True, nvidia-smi listing the "
                "GPU in the same environment (container, WSL, venv) that runs the script.",
                [TORCH_CHECK, "nvidia-smi"],
            ),
        )
    short, why, fix, commands = cause
    return Hit(
        title=f"transformers found no GPU to quantize on: {short}",
        explanation=what + why,
        evidence=log.line_evidence(facts, "quantizer_no_gpu", limit=2),
        remediation=Remediation(fix, commands),
    )


# ------------------------------------------------------------------------------------------ BNB535
@rule(
    "BNB535",
    "load-in-kbit-keyword-unsupported",
    Severity.ERROR,
    "The log shows no 'unexpected keyword argument load_in_4bit/load_in_8bit' TypeError",
    needs=("log",),
    covers=("transformers_load_in_kbit_kwarg_unsupported",),
    references=(
        "https://github.com/huggingface/transformers/pull/41287",
        "https://github.com/huggingface/trl/pull/4262",
        "https://github.com/stochasticai/xTuring/pull/358",
        "https://github.com/artidoro/qlora/issues/40",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/428",
    ),
    confirm=('python -c "import transformers; print(transformers.__version__)"',),
)
def load_in_kbit_kwarg(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `TypeError: <Model>.__init__() got an unexpected keyword argument 'load_in_4bit'` (or
    `'load_in_8bit'`; older Pythons print `__init__()` without the class, and the name may wrap onto the next line).
    It tells the two causes apart by the transformers version the log shows:

    | transformers | verdict |
    |---|---|
    | before {{ kbit.LOAD_IN_4BIT_KWARG.first_text }} | the 4-bit keyword did not exist yet: passed on to the model |
    | {{ kbit.KBIT_KWARGS_REMOVED.first_text }} and newer | both keywords removed (PR #41287): `quantization_config` |
    | in between | the keyword exists: something else (a custom model class, another library's loader) received it |
    | not in the log | either of the first two |

    ## Why it matters

    A script written for transformers 4.30-4.x (or a tutorial) passes `load_in_4bit=True` directly to
    `from_pretrained`. transformers 5 removed the bare keywords, so the same script fails after an upgrade; very old
    releases did not know the 4-bit keyword and forwarded it to the model's `__init__`.

    ## How to fix

    Pass a `BitsAndBytesConfig` instead of the bare keyword; this works on every transformers from 4.30 on:

    ```python
    from transformers import BitsAndBytesConfig
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```
    """
    matches = log.matches(facts, "load_in_kbit_kwarg_unsupported")
    if not matches:
        return None
    bits = next((b for b in (_bits(m.text) for m in matches) if b), "4")
    version = log.version(facts, "transformers")
    release = log.release(facts, "transformers")
    removed, first_4bit = full(KBIT_KWARGS_REMOVED.first_text), LOAD_IN_4BIT_KWARG.first_text
    config = f"quantization_config=BitsAndBytesConfig(load_in_{bits}bit=True)"
    fix = Remediation(
        f"Replace load_in_{bits}bit=True in the from_pretrained call with {config}; it works on every transformers "
        f"from {first_4bit} on.",
        [f'pip install "transformers>={first_4bit}"'] if release and not LOAD_IN_4BIT_KWARG.contains(release) else [],
    )
    if KBIT_KWARGS_REMOVED.contains(release):
        title = f"transformers {version} no longer takes load_in_{bits}bit=: pass a BitsAndBytesConfig"
        why = (
            f"transformers {removed} removed the load_in_4bit/load_in_8bit keywords of from_pretrained (PR #41287) in "
            "favour of quantization_config, so the keyword now reaches the model's __init__, which rejects it."
        )
    elif release and not LOAD_IN_4BIT_KWARG.contains(release):
        title = f"transformers {version} predates load_in_4bit: from_pretrained passed it on to the model"
        why = (
            f"4-bit loading arrived in transformers {first_4bit}; older releases do not know the keyword and forward "
            "it to the model's __init__, which rejects it."
        )
    elif release:
        title = f"load_in_{bits}bit= reached a class that does not take it (transformers {version} knows it)"
        why = (
            f"transformers {version} accepts load_in_{bits}bit in from_pretrained, so the keyword went to something "
            "else: a custom model class (trust_remote_code), another library's loader or a config class. Pass it "
            "where that code expects it, or use quantization_config."
        )
    else:
        title = (
            f"from_pretrained does not take load_in_{bits}bit= here: transformers {removed}+ removed it, "
            "or it predates it"
        )
        why = (
            f"transformers {removed} removed the bare load_in_4bit/load_in_8bit keywords (PR #41287), and releases "
            f"before {first_4bit} did not know load_in_4bit; either way the keyword reached the model's __init__. The "
            "log does not show the transformers version."
        )
    return Hit(
        title=title,
        explanation="The script passes the quantization keyword directly to from_pretrained. " + why,
        evidence=log.line_evidence(facts, "load_in_kbit_kwarg_unsupported", "package_version", limit=3),
        remediation=fix,
    )


# ------------------------------------------------------------------------------------------ BNB536
@rule(
    "BNB536",
    "kbit-model-moved-or-cast",
    Severity.ERROR,
    "The log shows no .to()/.cuda()/dtype cast refused for a 4-bit or 8-bit model",
    needs=("log",),
    covers=("kbit_model_to_device_unsupported",),
    references=(
        "https://github.com/huggingface/transformers/issues/38717",
        "https://github.com/OpenBMB/MiniCPM-V/issues/719",
        "https://github.com/TTPlanetPig/Comfyui_JC2/issues/26",
        "https://github.com/huggingface/diffusers/issues/10653",
    ),
    confirm=(VERSIONS_CHECK,),
)
def kbit_model_moved(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when transformers (or diffusers) refuses to move or cast a bitsandbytes model:

    - ``ValueError: `.to` is not supported for `4-bit` or `8-bit` bitsandbytes models`` and the `.cuda` variant
      (older releases refuse every move);
    - ``Calling `to()` is not supported for `4-bit` quantized models with the installed version of bitsandbytes``
      (needs bitsandbytes {{ kbit.BNB_4BIT_MOVE.first_text }}) and the `8-bit` one (needs
      {{ kbit.BNB_8BIT_MOVE.first_text }});
    - ``You cannot cast a bitsandbytes model in a new `dtype` `` and ``.half()``/``.float()`` refused for a quantized
      model (always refused).

    ## Why it matters

    Quantized parameters cannot be moved or cast like ordinary tensors on older bitsandbytes, so transformers blocks
    `model.to(device)`, `.cuda()` and `.half()`. Scripts and notebook nodes written for full-precision models call
    them out of habit; accelerate's `dispatch_model` calls `model.to()` itself when the device map holds one device.

    ## How to fix

    Drop the `.to()`/`.cuda()`/`.half()` call and place the model with `device_map` at load time (`device_map={"":
    0}`); or upgrade bitsandbytes for moves. Never cast a quantized model's dtype: set `torch_dtype` and
    `bnb_4bit_compute_dtype` when loading.
    """
    matches = log.matches(facts, "kbit_model_moved")
    if not matches:
        return None
    text = " ".join(m.text for m in matches)
    bnb = bnb_of(facts)
    bnb_version = bnb.version if bnb and bnb.installed else None
    placement = (
        "Drop the call and place the model when loading it: from_pretrained(..., device_map={'': 0}) (or "
        "device_map='auto'); the model is already on its devices and in its dtype."
    )
    if re.search(r"cast a bitsandbytes model|\.?(?:half|float)\(\)`", text):
        return Hit(
            title="A quantized model cannot be cast to another dtype (.to(dtype)/.half()/.float())",
            explanation="The script casts a bitsandbytes model to another dtype. transformers refuses it with every "
            "release: the 4-bit/8-bit weights keep their storage, and the layers compute in bnb_4bit_compute_dtype.",
            evidence=log.line_evidence(facts, "kbit_model_moved", limit=2),
            remediation=Remediation(
                "Remove the cast; load the model with the dtype you want: from_pretrained(..., torch_dtype=torch."
                "bfloat16, quantization_config=BitsAndBytesConfig(..., bnb_4bit_compute_dtype=torch.bfloat16))."
            ),
        )
    upgrade = None
    if re.search(r"Calling `(?:to|cuda)\(\)` is not supported for `8-bit`", text):
        upgrade = BNB_8BIT_MOVE
    elif re.search(r"Calling `(?:to|cuda)\(\)` is not supported for `4-bit`", text):
        upgrade = BNB_4BIT_MOVE
    if upgrade is not None:
        first = full(upgrade.first_text)
        bits = "8" if upgrade is BNB_8BIT_MOVE else "4"
        installed = f" (the log shows {bnb_version})" if bnb_version else ""
        return Hit(
            title=f"Moving {'an 8' if bits == '8' else 'a 4'}-bit model needs bitsandbytes {first} or newer{installed}",
            explanation=f"The script calls .to()/.cuda() on a {bits}-bit model. transformers allows that only with "
            f"bitsandbytes {first} or newer; with the installed release it refuses the move.",
            evidence=log.line_evidence(facts, "kbit_model_moved", limit=2),
            remediation=Remediation(
                placement + f" Or upgrade bitsandbytes to {first} or newer.",
                [f'pip install -U "bitsandbytes>={first}"'],
            ),
        )
    return Hit(
        title=".to()/.cuda() is refused for a 4-bit or 8-bit model: place it with device_map when loading",
        explanation="The script (or accelerate's dispatch_model, for a device map with one device) calls .to() or "
        ".cuda() on a bitsandbytes model. This transformers refuses every move of a quantized model; newer releases "
        f"allow moves of 4-bit models with bitsandbytes {full(BNB_4BIT_MOVE.first_text)} and of 8-bit models with "
        f"{full(BNB_8BIT_MOVE.first_text)}.",
        evidence=log.line_evidence(facts, "kbit_model_moved", limit=2),
        remediation=Remediation(placement, [VERSIONS_CHECK]),
    )


# ------------------------------------------------------------------------------------------ BNB537
def _distributed(facts: Facts) -> bool:
    """The log shows several processes: torchrun/accelerate launch ranks."""
    if facts.log is None:
        return False
    return any(re.match(r"\[rank\d+\]", m.text) for m in facts.log.matches)


@rule(
    "BNB537",
    "kbit-model-trained-on-other-device",
    Severity.ERROR,
    "The log shows no accelerate refusal to train a k-bit model placed on another device",
    needs=("log",),
    covers=("accelerate_kbit_model_on_other_device",),
    references=(
        "https://github.com/huggingface/accelerate/issues/1515",
        "https://github.com/yangjianxin1/Firefly/issues/270",
        "https://github.com/lrzjason/T2ITrainer/issues/56",
    ),
    confirm=("nvidia-smi", 'python -c "import accelerate; print(accelerate.__version__)"'),
)
def kbit_model_other_device(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on accelerate's `ValueError: You can't train a model that has been loaded in 8-bit precision on a
    different device than the one you're training on` (newer releases say `8-bit or 4-bit precision`), raised by
    `Accelerator.prepare` (and so by the Trainer, TRL and PEFT scripts built on it).

    ## Why it matters

    Under DDP (`torchrun`, `accelerate launch`) every process trains its own full copy of the quantized model on its
    own GPU. `device_map="auto"` (or a map naming another GPU) places the model across GPUs or on GPU 0 for every
    process, and a quantized model cannot be moved afterwards, so accelerate refuses.

    ## How to fix

    Load the model on the process's own GPU:

    ```python
    device_map = {"": int(os.environ.get("LOCAL_RANK", 0))}   # or {"": Accelerator().process_index}
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=bnb_config, device_map=device_map)
    ```

    Use `device_map="auto"` only for single-process model parallelism (`python script.py`, one process).
    """
    if not log.seen(facts, "kbit_model_other_device"):
        return None
    dmap = next(
        (
            found.group(1)
            for m in log.matches(facts, "device_map_argument")
            if (found := re.search(r"device_map\s*=\s*['\"]?(auto|balanced_low_0|balanced|sequential)", m.text))
        ),
        None,
    )
    context = ""
    if dmap:
        context = f" The log shows device_map='{dmap}', which spreads the model over GPUs instead of one per process."
    elif _distributed(facts):
        context = " The log shows several ranks: each process needs its own copy on its own GPU."
    return Hit(
        title="A quantized model is on another GPU than the process that trains it: "
        "load it with device_map={'': local_rank}",
        explanation="accelerate trains a k-bit model only on the device of the current process. Under DDP each "
        "process must load its own full copy on its own GPU; device_map='auto' (or a map naming another GPU) put it "
        "elsewhere, and a quantized model cannot be moved after loading." + context,
        evidence=log.line_evidence(facts, "kbit_model_other_device", "device_map_argument", limit=2),
        remediation=Remediation(
            "Load with device_map={'': int(os.environ.get('LOCAL_RANK', 0))} (or {'': Accelerator().process_index}) "
            "under torchrun/accelerate launch; keep device_map='auto' for a single process spreading one model over "
            "GPUs."
        ),
    )


# ------------------------------------------------------------------------------------------ BNB538
@rule(
    "BNB538",
    "fsdp-kbit-integer-storage",
    Severity.ERROR,
    "The log shows no FSDP error about flattening the integer storage of quantized weights",
    needs=("log",),
    covers=("fsdp_kbit_integer_storage",),
    references=(
        "https://github.com/huggingface/peft/issues/1432",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/970",
    ),
    confirm=('python -c "import torch, bitsandbytes; print(torch.__version__, bitsandbytes.__version__)"',),
)
def fsdp_integer_storage(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on FSDP's `ValueError: Cannot flatten integer dtype tensors`, and on `ValueError: Must flatten
    tensors with uniform dtype but got torch.bfloat16 and torch.uint8` when one of the two dtypes is an integer
    (`int8`, `uint8`). Two float dtypes (`float16` and `float32`) are another problem (mixed trainable dtypes) and are
    not reported.

    ## Why it matters

    FSDP flattens each wrapped module's parameters into one buffer of one floating dtype. 8-bit weights are `int8`
    and 4-bit weights are stored as `uint8` by default, so they cannot be flattened with the bf16/fp16 parameters
    around them.

    ## How to fix

    For QLoRA with FSDP, store the 4-bit weights in the training dtype:

    ```python
    BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16, bnb_4bit_compute_dtype=torch.bfloat16)
    ```

    with `torch_dtype=torch.bfloat16` and bf16 trainable parameters. 8-bit models cannot be sharded by FSDP: use DDP
    or DeepSpeed ZeRO instead.
    """
    matches = log.matches(facts, "fsdp_integer_flatten")
    if not matches:
        return None
    text = " ".join(m.text for m in matches)
    context_bits = next(
        (b for b in (_bits(m.text) for m in log.matches(facts, "quantization_config")) if b),
        None,
    )
    eight = bool(re.search(r"\bint8\b", text)) or (context_bits == "8" and "uint8" not in text)
    fix_4bit = (
        "Load the 4-bit model with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16, "
        "bnb_4bit_compute_dtype=torch.bfloat16) and torch_dtype=torch.bfloat16, so that the quantized storage has "
        "the dtype of the other parameters."
    )
    what = (
        "FSDP flattens each wrapped module's parameters into one buffer of one floating dtype; bitsandbytes stores "
        "8-bit weights as int8 and 4-bit weights as uint8 by default, so they cannot be flattened with the bf16/fp16 "
        "parameters. "
    )
    if eight:
        return Hit(
            title="FSDP cannot shard an 8-bit bitsandbytes model (int8 weights)",
            explanation=what + "8-bit models are not supported under FSDP at all.",
            evidence=log.line_evidence(facts, "fsdp_integer_flatten", "quantization_config", limit=2),
            remediation=Remediation(
                "Train the 8-bit model with DDP or DeepSpeed ZeRO instead of FSDP, or switch to 4-bit QLoRA with "
                "bnb_4bit_quant_storage=torch.bfloat16."
            ),
        )
    return Hit(
        title="FSDP cannot flatten the uint8 storage of 4-bit weights: "
        "set bnb_4bit_quant_storage to the training dtype",
        explanation=what + "For 4-bit, bnb_4bit_quant_storage chooses the storage dtype.",
        evidence=log.line_evidence(facts, "fsdp_integer_flatten", "quantization_config", limit=2),
        remediation=Remediation(fix_4bit),
    )


# ------------------------------------------------------------------------------------------ BNB539
@rule(
    "BNB539",
    "4bit-compute-dtype-float32",
    Severity.INFO,
    "The log shows no warning that 4-bit layers compute in float32 for 16-bit inputs",
    needs=("log",),
    covers=("bnb_4bit_compute_dtype_fp32_slow_warning",),
    references=(
        "https://github.com/h2oai/h2ogpt/pull/682",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/2077",
    ),
)
def compute_dtype_fp32(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reports bitsandbytes' warning `Input type into Linear4bit is torch.float16, but
    bnb_4bit_compute_dtype=torch.float32 (default). This will lead to slow inference.` (later releases add "or training
    speed"). It is a performance note, never an error: results are correct.

    ## Why it matters

    `BitsAndBytesConfig` was created without `bnb_4bit_compute_dtype`, so the 4-bit layers dequantize to float32 and
    run their matmuls in float32 while the activations are 16-bit: correct, but much slower. It is not the cause of a
    failure elsewhere in the log.

    ## How to fix

    Set `bnb_4bit_compute_dtype=torch.bfloat16` (or `torch.float16` on GPUs without bf16) in `BitsAndBytesConfig`,
    matching `torch_dtype`.
    """
    match = log.first(facts, "compute_dtype_fp32_slow")
    if match is None:
        return None
    found = re.search(r"Linear4bit is (?:torch\.)?(\w+)", match.text)
    dtype = found.group(1) if found else "float16"
    return Hit(
        title=f"4-bit layers compute in float32 while the input is {dtype}: slow, not wrong",
        explanation="BitsAndBytesConfig was created without bnb_4bit_compute_dtype, so the 4-bit layers dequantize "
        f"to float32 and compute in float32 although the activations are {dtype}. Results are correct; matmuls are "
        "much slower. This is a performance note, not the cause of an error.",
        evidence=log.line_evidence(facts, "compute_dtype_fp32_slow", limit=1),
        remediation=Remediation(
            "Pass bnb_4bit_compute_dtype=torch.bfloat16 (or torch.float16 on GPUs without bf16) to BitsAndBytesConfig, "
            "matching torch_dtype."
        ),
    )


# ------------------------------------------------------------------------------------------ BNB540
@rule(
    "BNB540",
    "wsl-ldconfig-not-a-symlink",
    Severity.INFO,
    "The log shows no WSL2 ldconfig 'is not a symbolic link' message",
    needs=("log",),
    covers=("wsl_ldconfig_libcuda_not_symlink_noise",),
    references=("https://github.com/microsoft/WSL/issues/5663", "https://github.com/microsoft/WSL/issues/5548"),
)
def wsl_ldconfig_noise(facts: Facts) -> Hit | None:
    """## What it detects

    The rule recognises `ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link` (also from
    `/sbin/ldconfig.real`, for any driver library in `/usr/lib/wsl/lib`), printed on WSL2 by every `apt` or `ldconfig`
    run, and reports it as harmless so that it is never taken for the cause of a failure.

    ## Why it matters

    WSL2 mounts `libcuda.so`, `libcuda.so.1` and `libcuda.so.1.1` as regular files with the same SONAME instead of
    symbolic links. `ldconfig` warns, but the loader finds `libcuda.so.1` normally: the message has nothing to do with
    a bitsandbytes failure. Users who see it next to a real error often chase it instead.

    ## How to fix

    Nothing to fix for bitsandbytes: look at the other findings for the real error. (The warning can be silenced by
    replacing the files with symbolic links, which WSL undoes on restart.)
    """
    matches = log.matches(facts, "wsl_ldconfig_not_symlink")
    if not matches:
        return None
    return Hit(
        title="WSL2's 'libcuda.so.1 is not a symbolic link' from ldconfig is harmless",
        explanation="WSL2 mounts its driver libraries in /usr/lib/wsl/lib as regular files with the same SONAME "
        "instead of symbolic links; ldconfig warns on every run, but the loader still finds libcuda.so.1. It is not "
        "the cause of a bitsandbytes failure: look at the other findings.",
        evidence=log.line_evidence(facts, "wsl_ldconfig_not_symlink", limit=1),
        remediation=Remediation("Nothing to fix for bitsandbytes."),
    )


# ------------------------------------------------------------------------------------------ BNB549
def _facts_read(facts: Facts) -> list[Evidence]:
    """What the log shows about the machine, as evidence items (the facts bnbdoctor could read)."""
    out: list[Evidence] = []
    if facts.platform is not None:
        out.append(Evidence("platform", facts.platform.os + (" (WSL2)" if facts.platform.wsl else ""), "platform.os"))
    if facts.gpu is not None and facts.gpu.devices:
        out.append(Evidence("GPUs", ", ".join(d.name for d in facts.gpu.devices), "gpu.devices"))
    versions = dict(facts.log.versions) if facts.log else {}
    if versions:
        out.append(Evidence("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())), "log.versions"))
    return out


@rule(
    UNRECOGNISED_ERROR_RULE,
    "unrecognised-error-in-log",
    Severity.WARNING,
    "The log shows no error that bnbdoctor cannot name",
    needs=("log",),
    confirm=("bnbdoctor --markdown",),
)
def unrecognised_error(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when the log holds an exception line (`KeyError: 'lm_head'`, `torch.OutOfMemoryError: CUDA out of
    memory ...`, `[rank0]: RuntimeError: ...`) and no known message family names a failure anywhere in the log. It
    quotes the error lines with their numbers and the facts the log shows, and says what to run on the machine. When
    another finding reports an error, `bnbdoctor explain` leaves this one out: the log's failure is named.

    Warnings (`UserWarning: ...`) are not errors, and a log whose only bitsandbytes-related lines are known harmless
    messages (see [BNB540](BNB540.md)) gets no error finding.

    ## Why it matters

    "No known failure" would be wrong for a log that ends in a traceback: the error is real, bnbdoctor just cannot
    name it. It may be unrelated to bitsandbytes (a bug in the script, a CUDA out-of-memory error in user code) or a
    failure bnbdoctor does not know yet.

    ## How to fix

    Run the doctor on the machine itself, where it sees the installation and not only the log, and attach its report
    to an issue:

    ```bash
    bnbdoctor
    bnbdoctor --markdown > bnbdoctor-report.md
    ```
    """
    matches = log.matches(facts, "unrecognised_error")
    if not matches:
        return None
    lines = ", ".join(str(m.line) for m in matches[:6]) + (", ..." if len(matches) > 6 else "")
    last = matches[-1]
    return Hit(
        title=f"The log shows an error bnbdoctor does not recognise (line {last.line}): {last.text[:120]}",
        explanation=f"The exception line{'s' if len(matches) > 1 else ''} at log line{'s' if len(matches) > 1 else ''} "
        f"{lines} match{'es' if len(matches) == 1 else ''} no known bitsandbytes, CUDA, torch, transformers, "
        "accelerate or PEFT failure family. It may be unrelated to bitsandbytes (a bug in the script, memory "
        "exhausted by the workload) or a failure bnbdoctor does not know yet. The facts below are all the log shows "
        "about the machine; the doctor on the machine sees the rest.",
        evidence=[Evidence(f"log line {m.line}", m.text, "log.matches") for m in matches[:4]] + _facts_read(facts),
        remediation=Remediation(
            "Run bnbdoctor on the machine that produced the log; to ask for help, attach its Markdown report and the "
            "whole traceback to an issue.",
            ["bnbdoctor", "bnbdoctor --markdown > bnbdoctor-report.md"],
        ),
    )
