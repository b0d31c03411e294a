"""BNB571 meta-device-weight-needs-value: passes when the log shows no weight left on the meta device when accelerate placed the model."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSIONS = 'python -c "import transformers, accelerate; print(transformers.__version__, accelerate.__version__)"'

FINDING = log.LogFinding(
    (S.META_DEVICE_WEIGHT_NEEDS_VALUE,),
    title="A weight was never loaded: accelerate found it still on the meta device",
    explanation="With a device_map (which load_in_8bit/load_in_4bit use), transformers builds the model on the meta "
    "device and fills it from the checkpoint; accelerate refuses to place a parameter that was never filled. Either "
    "transformers did not load it (a 2023 bug with load_in_8bit, fixed in transformers) or the checkpoint has no "
    "such weight.",
    fix="Upgrade transformers and accelerate; if it persists, check that the checkpoint holds the weight the message "
    "names (a tensor the model code adds must be initialised after loading).",
    commands=("pip install -U transformers accelerate", VERSIONS),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no weight left on the meta device when accelerate placed the model",
    needs=("log",),
    covers=("meta_device_weight_needs_value",),
    references=(
        "https://github.com/huggingface/accelerate/issues/1524",
        "https://github.com/huggingface/accelerate/issues/1335",
        "https://github.com/microsoft/LLaVA-Med/issues/97",
    ),
    confirm=(VERSIONS,),
)
def meta_device_weight_needs_value(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on accelerate's ``ValueError: weight is on the meta device, we need a `value` to put in on 0.``
    (any tensor name and device: `prompt ... on 0`, `... on cpu`), raised by `set_module_tensor_to_device` while
    `from_pretrained` dispatches a model with a `device_map`. `Cannot copy out of meta tensor; no data!` is a
    different failure.

    ## Why it matters

    With a `device_map` (and `load_in_8bit`/`load_in_4bit`, which need one) transformers creates the model on the
    meta device, loads each weight from the checkpoint and lets accelerate put it on its device. A parameter that is
    still on the meta device then has no data to put anywhere. In the threads either transformers did not load it
    (the 8-bit loading of early-2023 transformers: the accelerate maintainer pointed at a bug just fixed in
    transformers, and a source install fixed it, accelerate#1335), or the checkpoint has no such weight (a tensor the
    model code adds, a model saved without a layer's weight). bitsandbytes is not at fault, though a 4-bit/8-bit load
    is where most users meet it.

    ## How to fix

    Upgrade transformers and accelerate:

    ```bash
    pip install -U transformers accelerate
    ```

    If it persists, check that the checkpoint has the weight the message names: a tensor the model code adds must be
    initialised after loading, and a model saved without a weight must be saved again with it.
    """
    return FINDING.hit(facts)
