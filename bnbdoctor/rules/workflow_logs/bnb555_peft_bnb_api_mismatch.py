"""BNB555 peft-bnb-api-mismatch: passes when the log shows no peft LoRA layer disagreeing with the quantized layer it wraps."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSIONS = (
    'python -c "import peft, transformers, bitsandbytes; '
    'print(peft.__version__, transformers.__version__, bitsandbytes.__version__)"'
)

FINDING = log.LogFinding(
    (S.PEFT_BNB_API_MISMATCH,),
    title="peft and the quantized layers of transformers/bitsandbytes come from releases that do not match",
    explanation="peft's LoRA layers pass keywords to and read attributes of the bitsandbytes layers transformers "
    "created; this peft expects another release's layer API (or an application patched peft for another release), "
    "so it fails on the first layer it wraps.",
    fix="Upgrade peft, transformers, accelerate and bitsandbytes together (or install the versions the application "
    "pins), and drop a patch of peft written for another release.",
    commands=("pip install -U peft transformers accelerate bitsandbytes", VERSIONS),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no peft LoRA layer disagreeing with the quantized layer it wraps",
    needs=("log",),
    covers=("peft_bnb_api_mismatch",),
    references=(
        "https://github.com/huggingface/peft/issues/1209",
        "https://github.com/oobabooga/text-generation-webui/issues/4058",
    ),
    confirm=(VERSIONS,),
)
def peft_bnb_api_mismatch(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the two messages of a peft that does not match the quantized layers it wraps:

    - `TypeError: Linear.__init__() got an unexpected keyword argument 'loaded_in_8bit'` (also as `Linear.init()`
      where markdown ate the underscores);
    - `AttributeError: 'Linear4bit' object has no attribute 'compute_dtype'` (or `quant_type`,
      `compress_statistics`, `has_fp16_weights`, on `Linear4bit` or `Linear8bitLt`).

    The installed versions are machine facts; which combinations work is not recorded here.

    ## Why it matters

    peft's LoRA layers for bitsandbytes models pass keywords to, and read attributes of, the quantized layers that
    transformers and bitsandbytes create. Each peft release expects the layer API of the releases current when it
    came out; a peft older or newer than the installed transformers/bitsandbytes, or an application's patch of peft
    written for another release, breaks on the first layer it wraps. Nothing is wrong with the GPU or the native
    library.

    ## How to fix

    Install releases of one time together, or exactly the versions the application pins:

    ```bash
    pip install -U peft transformers accelerate bitsandbytes
    ```

    Remove or update an application's patch of peft's LoRA layers that was written for another peft release.
    """
    return FINDING.hit(facts)
