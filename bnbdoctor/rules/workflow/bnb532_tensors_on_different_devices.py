"""BNB532 tensors-on-different-devices: passes when the log shows no 'Expected all tensors to be on the same device' error."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.TENSORS_DIFFERENT_DEVICES,),
    title="Parts of a {quantized}model run on different devices{replica}",
    explanation="An operation received tensors on two devices. With bitsandbytes layers this happens when device_map "
    "offloaded some layers (or their quant_state) to the CPU or split them across GPUs, when torch.nn.DataParallel "
    "replicas keep the 4-bit quant_state on device 0, or when a LoRA update on the GPU meets a base layer offloaded "
    "to the CPU.",
    fix="Load the quantized model on one device when it fits (device_map={{'': 0}}); for several GPUs use "
    "accelerate/torchrun DDP with device_map={{'': local_rank}} instead of DataParallel; avoid CPU offload with "
    "bitsandbytes layers; move inputs to the device of the model's first layer; upgrade peft.",
    commands=("nvidia-smi", "pip install -U peft accelerate transformers"),
    also_quoted=(S.DATAPARALLEL_REPLICA_ERROR,),
)


@rule(
    Severity.ERROR,
    "The log shows no 'Expected all tensors to be on the same device' error",
    needs=("log",),
    covers=("tensors_same_device_after_device_map_auto",),
    references=(
        "https://github.com/huggingface/peft/issues/1831",
        "https://github.com/huggingface/trl/issues/2760",
        "https://github.com/huggingface/peft/issues/3169",
    ),
    confirm=("nvidia-smi", 'python -c "import peft, transformers; print(peft.__version__, transformers.__version__)"'),
)
def different_devices(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
    cuda:0 and cpu!` (and `cuda:1 and cuda:0`), noting `torch.nn.DataParallel` when the log shows `Caught RuntimeError
    in replica N on device N`. The message is generic PyTorch, so the confidence is medium unless the log shows a
    quantized model.

    ## Why it matters

    Part of a quantized computation lives on another device than the activations: `device_map` offloaded some layers (or
    their `quant_state`) to the CPU or split them across GPUs; `DataParallel` replicas keep the 4-bit `quant_state` on
    device 0; or, with LoRA on CPU-offloaded bitsandbytes layers, the base result stays on the CPU while the LoRA update
    is on the GPU.

    ## How to fix

    - Load the quantized model on one device when it fits: `device_map={"": 0}`.
    - For several GPUs use accelerate/torchrun DDP with `device_map={"": local_rank}` instead of `DataParallel`.
    - Avoid CPU offload with bitsandbytes layers; move inputs to the device of the model's first layer.
    - Upgrade peft (device fixes in PR #3418):

      ```bash
      pip install -U peft accelerate transformers
      ```
    """
    quantized = log.seen(facts, S.QUANTIZATION_CONFIG) or bool(facts.python and facts.python.bitsandbytes.installed)
    return FINDING.hit(
        facts,
        quantized="quantized " if quantized else "",
        replica=" (torch.nn.DataParallel)" if log.seen(facts, S.DATAPARALLEL_REPLICA_ERROR) else "",
    )
