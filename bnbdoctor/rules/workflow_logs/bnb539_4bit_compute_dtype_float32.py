"""BNB539 4bit-compute-dtype-float32: passes when the log shows no warning that 4-bit layers compute in float32 for 16-bit inputs."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.COMPUTE_DTYPE_FP32_SLOW,),
    title="4-bit layers compute in float32 while the input is {dtype}: slow, not wrong",
    explanation="BitsAndBytesConfig was created without bnb_4bit_compute_dtype, so the 4-bit layers dequantize to "
    "float32 and compute in float32 although the activations are {dtype}. Results are correct; matmuls are much "
    "slower. This is a performance note, not the cause of an error.",
    fix="Pass bnb_4bit_compute_dtype=torch.bfloat16 (or torch.float16 on GPUs without bf16) to BitsAndBytesConfig, "
    "matching torch_dtype.",
    limit=1,
)


@rule(
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
    speed", some spell the option `bnb_4bit_compute_type`). It is a performance note, never an error: results are
    correct.

    ## Why it matters

    `BitsAndBytesConfig` was created without `bnb_4bit_compute_dtype`, so the 4-bit layers dequantize to float32 and
    run their matmuls in float32 while the activations are 16-bit: correct, but much slower. It is not the cause of a
    failure elsewhere in the log.

    ## How to fix

    Set `bnb_4bit_compute_dtype=torch.bfloat16` (or `torch.float16` on GPUs without bf16) in `BitsAndBytesConfig`,
    matching `torch_dtype`.
    """
    match = log.first(facts, S.COMPUTE_DTYPE_FP32_SLOW)
    if match is None:
        return None
    found = re.search(r"Linear4bit is (?:torch\.)?(\w+)", match.text)
    return FINDING.hit(facts, dtype=found.group(1) if found else "float16")
