"""BNB547 quantized-params-require-grad: passes when the log shows no quantized (integer) weight made to require gradients."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

FINDING = log.LogFinding(
    (S.INT_PARAMS_REQUIRE_GRAD,),
    title="A quantized (integer) weight was made to require gradients",
    explanation="bitsandbytes keeps quantized weights as int8/uint8 tensors, which torch cannot train. A layer meant "
    "to train (a classification head) was quantized and then set trainable, or the quantized parameters were created "
    "with requires_grad=True (transformers under DeepSpeed ZeRO-3).",
    fix="Keep trainable layers out of quantization (llm_int8_skip_modules in the BitsAndBytesConfig, modules_to_save "
    "in the LoraConfig); upgrade transformers for the DeepSpeed ZeRO-3 case.",
    commands=(VERSIONS_CHECK,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no quantized (integer) weight made to require gradients",
    needs=("log",),
    covers=("int8_params_require_grad",),
    references=(
        "https://github.com/huggingface/transformers/issues/32943",
        "https://github.com/huggingface/peft/issues/1720",
    ),
    confirm=(VERSIONS_CHECK,),
)
def quantized_params_require_grad(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on torch's `RuntimeError: Only Tensors of floating point and complex dtype can require gradients`
    (older torch: `only Tensors of floating point dtype can require gradients`). torch raises it for any integer
    tensor, so the finding is less certain when the log shows nothing of bitsandbytes around it.

    ## Why it matters

    bitsandbytes stores quantized weights as int8/uint8 tensors, and torch refuses `requires_grad` on an integer
    tensor. It is hit when code creates `Int8Params` with `requires_grad=True` (transformers under DeepSpeed ZeRO-3,
    fixed in transformers after issue #32943), or when a layer that must stay trainable (a classification head such
    as `classifier`/`pre_classifier`, which newer transformers quantize too) was quantized and then set trainable.

    ## How to fix

    Keep the trainable layers out of quantization and let peft train them:

    ```python
    BitsAndBytesConfig(load_in_4bit=True, llm_int8_skip_modules=["classifier", "pre_classifier"])
    LoraConfig(..., modules_to_save=["classifier", "pre_classifier"])
    ```

    (the peft maintainer's answer); upgrade transformers for the ZeRO-3 8-bit case; never call `requires_grad_()` on
    quantized weights.
    """
    return FINDING.hit(facts)
