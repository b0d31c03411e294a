"""BNB537 kbit-model-trained-on-other-device: passes when the log shows no accelerate refusal to train a k-bit model placed on another device."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


def _distributed(facts: Facts) -> bool:
    """The log shows several processes: torchrun/accelerate launch ranks."""
    if facts.log is None:
        return False
    return any(re.match(r"\[rank\d+\]", m.text) for m in facts.log.matches)


@rule(
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
    different device than the one you're training on` (newer releases say `8-bit or 4-bit precision`, older ones
    `... in 8-bit precision on multiple devices`), raised by `Accelerator.prepare` (and so by the Trainer, TRL and PEFT
    scripts built on it).

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
    if not log.seen(facts, S.KBIT_MODEL_OTHER_DEVICE):
        return None
    dmap = next(
        (
            found.group(1)
            for m in log.matches(facts, S.DEVICE_MAP_ARGUMENT)
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
        evidence=log.line_evidence(facts, S.KBIT_MODEL_OTHER_DEVICE, S.DEVICE_MAP_ARGUMENT, limit=2),
        remediation=Remediation(
            "Load with device_map={'': int(os.environ.get('LOCAL_RANK', 0))} (or {'': Accelerator().process_index}) "
            "under torchrun/accelerate launch; keep device_map='auto' for a single process spreading one model over "
            "GPUs."
        ),
    )
