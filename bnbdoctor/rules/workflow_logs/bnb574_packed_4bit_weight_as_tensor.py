"""BNB574 packed-4bit-weight-as-tensor: passes when the log shows no 4-bit weight (uint8) used as a plain tensor."""

from __future__ import annotations

from dataclasses import replace

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of

FINDING = log.LogFinding(
    (S.PACKED_4BIT_WEIGHT_AS_TENSOR,),
    title="A 4-bit weight (packed uint8, 'Byte') reached code that uses it as a plain tensor",
    explanation="bitsandbytes stores a 4-bit weight as packed uint8 data that only its Linear4bit layer can use. "
    "Here a uint8 ('Byte') tensor met a float one in a matmul or a convolution: model code outside bitsandbytes "
    "(often a model's own remote code, trust_remote_code) multiplied by a quantized layer's weight directly, or cast "
    "its input to that weight's dtype. The quantization worked; that part of the model cannot run quantized.",
    fix="Keep the modules that do this in 16-bit: BitsAndBytesConfig(load_in_4bit=True, "
    'llm_int8_skip_modules=["visual"]) names them (the module the traceback shows: a vision tower, a projector); '
    "or load the model unquantized, or with a checkpoint whose remote code supports bitsandbytes.",
    also_quoted=(S.KBIT_LOAD_CONTEXT,),
    limit=2,
)


#: The same finding from torch's convolution/layer message, which a raw uint8 image raises too: only under a 4-bit load.
INPUT_FINDING = replace(FINDING, signatures=(S.UINT8_INPUT_TYPE_MISMATCH,))


@rule(
    Severity.ERROR,
    "The log shows no 4-bit weight (uint8) used as a plain tensor",
    needs=("log",),
    covers=("packed_4bit_weight_used_as_tensor",),
    references=(
        "https://github.com/QwenLM/Qwen-VL/issues/494",
        "https://github.com/ATH-MaaS/Ovis/issues/29",
    ),
)
def packed_4bit_weight_as_tensor(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on torch's dtype errors with a uint8 ("Byte") operand: `self and mat2 must have the same dtype,
    but got BFloat16 and Byte` (an int8 "Char" operand is [BNB548](BNB548.md)'s 8-bit weight), and `Input type
    (torch.cuda.ByteTensor) and weight type (CUDABFloat16Type) should be the same` (either way round). A raw uint8
    image fed to a convolution raises the second too, so the rule asks for a 4-bit load in the log
    (`load_in_4bit=True`, `BitsAndBytesConfig(`, a `bnb-4bit` checkpoint, `Linear4bit`) or bitsandbytes among the
    facts, except for the matmul message.

    ## Why it matters

    A 4-bit bitsandbytes weight is packed into uint8 and only `Linear4bit.forward` dequantizes it. Code that uses a
    layer's `weight` itself (`F.linear(x, layer.weight)`) or casts its input to `layer.weight.dtype` gets uint8:
    in Qwen-VL #494 the vision tower casts the image to a quantized layer's dtype (the input becomes a ByteTensor),
    in Ovis #29 a pre-quantized bnb-4bit checkpoint's visual tokenizer multiplies by a packed weight. Such code is
    usually a model's own remote code, written for 16-bit weights.

    ## How to fix

    Keep those modules out of the quantization, naming them as the traceback does:

    ```python
    BitsAndBytesConfig(load_in_4bit=True, llm_int8_skip_modules=["visual"])
    ```

    or load the model in 16-bit, or use a checkpoint whose code supports bitsandbytes.
    """
    if log.seen(facts, S.PACKED_4BIT_WEIGHT_AS_TENSOR):  # the matmul message: a uint8 operand is a packed weight
        return FINDING.hit(facts)
    bnb = bnb_of(facts)
    if log.seen(facts, S.UINT8_INPUT_TYPE_MISMATCH) and (
        log.seen(facts, S.KBIT_LOAD_CONTEXT) or (bnb is not None and bnb.installed)
    ):
        return INPUT_FINDING.hit(facts)
    return None
