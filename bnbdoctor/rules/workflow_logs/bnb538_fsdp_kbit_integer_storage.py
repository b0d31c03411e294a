"""BNB538 fsdp-kbit-integer-storage: passes when the log shows no FSDP error about flattening the integer storage of quantized weights."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import _bits


@rule(
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
    matches = log.matches(facts, S.FSDP_INTEGER_FLATTEN)
    if not matches:
        return None
    text = " ".join(m.text for m in matches)
    context_bits = next(
        (b for b in (_bits(m.text) for m in log.matches(facts, S.QUANTIZATION_CONFIG)) if b),
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
            evidence=log.line_evidence(facts, S.FSDP_INTEGER_FLATTEN, S.QUANTIZATION_CONFIG, limit=2),
            remediation=Remediation(
                "Train the 8-bit model with DDP or DeepSpeed ZeRO instead of FSDP, or switch to 4-bit QLoRA with "
                "bnb_4bit_quant_storage=torch.bfloat16."
            ),
        )
    return Hit(
        title="FSDP cannot flatten the uint8 storage of 4-bit weights: "
        "set bnb_4bit_quant_storage to the training dtype",
        explanation=what + "For 4-bit, bnb_4bit_quant_storage chooses the storage dtype.",
        evidence=log.line_evidence(facts, S.FSDP_INTEGER_FLATTEN, S.QUANTIZATION_CONFIG, limit=2),
        remediation=Remediation(fix_4bit),
    )
