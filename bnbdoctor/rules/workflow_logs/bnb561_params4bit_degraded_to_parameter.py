"""BNB561 params4bit-degraded-to-parameter: passes when the log shows no 4-bit layer whose weight lost its Params4bit type."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSIONS = (
    'python -c "import peft, transformers, accelerate, bitsandbytes; print(peft.__version__, '
    'transformers.__version__, accelerate.__version__, bitsandbytes.__version__)"'
)

FINDING = log.LogFinding(
    (S.PARAMS4BIT_DEGRADED_TO_PARAMETER,),
    title="A 4-bit layer's weight is a plain Parameter/DTensor, no longer a bitsandbytes Params4bit",
    explanation="A Linear4bit's packed weight must stay a Params4bit, which carries its quantization attributes "
    "(quant_state, quant_type, compress_statistics). Something re-created or wrapped it (nn.Parameter(weight), a "
    "meta/to_empty re-initialisation, FSDP2 or tensor parallelism making it a DTensor), and peft, wrapping the "
    "layer, cannot read them.",
    fix="Leave the weights of bitsandbytes layers as transformers loaded them until peft wraps them; for sharded "
    "training use the documented FSDP + QLoRA setup; upgrade peft, transformers, accelerate and bitsandbytes together.",
    commands=("pip install -U peft transformers accelerate bitsandbytes", VERSIONS),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no 4-bit layer whose weight lost its Params4bit type",
    needs=("log",),
    covers=("params4bit_degraded_to_parameter",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1542",
        "https://github.com/huggingface/peft/issues/2650",
    ),
    confirm=(VERSIONS,),
)
def params4bit_degraded_to_parameter(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: 'Parameter' object has no attribute 'compress_statistics'` and the same with
    `'DTensor'` (or `quant_type`): a bitsandbytes 4-bit attribute read from a weight that is not a `Params4bit`.

    ## Why it matters

    A bitsandbytes `Linear4bit` keeps its packed weight in a `Params4bit`, a Parameter subclass that carries the
    quantization attributes. peft reads them when it wraps the layer with LoRA
    (`target_base_layer.weight.compress_statistics`). Code that re-creates or wraps the parameter leaves a plain
    `Parameter` (`nn.Parameter(module.weight)`, a meta-device or `to_empty` re-initialisation) or a `DTensor` (FSDP2,
    tensor parallelism: peft #2650) in its place, and the first read fails. The weights themselves are still the
    packed 4-bit data, now without the state to use them. The threads (bitsandbytes #1542, peft #2650) have no
    maintainer answer.

    ## How to fix

    Let transformers load the 4-bit model and call `get_peft_model` on it as loaded, without replacing or re-wrapping
    the weights of its bitsandbytes layers; to shard a 4-bit model for training, follow the FSDP + QLoRA setup of the
    peft/accelerate docs (`bnb_4bit_quant_storage` set to the compute dtype) rather than wrapping the quantized
    weights yourself. Install releases of one time together:

    ```bash
    pip install -U peft transformers accelerate bitsandbytes
    ```
    """
    return FINDING.hit(facts)
