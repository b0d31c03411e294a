"""BNB548 dtype-mismatch-with-8bit-weights: passes when the log shows no matmul of a float input with an 8-bit weight."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

_EIGHT_BIT = re.compile(r"load_in_8bit|Linear8bitLt|Int8Params|8-bit")


@rule(
    Severity.ERROR,
    "The log shows no matmul of a float input with an 8-bit weight",
    needs=("log",),
    covers=("dtype_mismatch_with_8bit_model",),
    references=(
        "https://github.com/huggingface/peft/issues/84",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1029",
    ),
    confirm=(VERSIONS_CHECK,),
)
def dtype_mismatch_with_8bit_weights(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `RuntimeError: self and mat2 must have the same dtype, but got Half and Char` (an int8 operand,
    `Char`, next to a float one), and on the bare `mat1 and mat2 must have the same dtype` when the log loads the
    model in 8-bit (`load_in_8bit`, `Linear8bitLt`). Two float dtypes (`Half and Float`) are another problem.

    ## Why it matters

    An 8-bit model keeps its linear weights as int8 inside `Linear8bitLt`, which dequantizes them in its own forward.
    Code that uses the weight directly (a remote-code model's attention calling `torch.matmul` or `F.linear` on
    `.weight`, an adapter layer that does the same) multiplies a float16 input with int8 data.

    ## How to fix

    Load the model without `load_in_8bit` (16-bit, or 4-bit if its code supports it), or upgrade the model's code /
    peft to a release that handles `Linear8bitLt` layers (the maintainers tracked it in transformers#28856 and
    peft#84); keep such modules out of quantization with `llm_int8_skip_modules`.
    """
    int8 = log.seen(facts, S.INT8_WEIGHT_DTYPE_MISMATCH)
    generic = log.seen(facts, S.MATMUL_DTYPE_MISMATCH)
    eight_bit = any(_EIGHT_BIT.search(m.text) for m in log.matches(facts, S.QUANTIZATION_CONFIG))
    if not (int8 or (generic and eight_bit)):
        return None
    return Hit(
        title="A float input was multiplied with an 8-bit (int8) weight: code bypasses Linear8bitLt",
        explanation=(
            "An 8-bit model keeps its linear weights as int8 inside Linear8bitLt, which dequantizes them in its own "
            "forward; code that uses .weight directly (a remote-code model's attention, an adapter layer) multiplies "
            "float16 activations with int8 data."
        ),
        evidence=log.line_evidence(facts, S.INT8_WEIGHT_DTYPE_MISMATCH, S.MATMUL_DTYPE_MISMATCH, S.QUANTIZATION_CONFIG),
        remediation=Remediation(
            "Load the model without load_in_8bit (16-bit, or 4-bit if its code supports it), or upgrade the model code "
            "and peft; keep the modules that use .weight directly out of quantization (llm_int8_skip_modules).",
            [VERSIONS_CHECK],
        ),
    )
