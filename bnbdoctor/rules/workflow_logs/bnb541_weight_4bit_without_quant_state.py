"""BNB541 weight-4bit-without-quant-state: passes when the log shows no 4-bit weight used without its quantization state."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

FINDING = log.LogFinding(
    (S.QUANT_STATE_MISSING, S.PACKED_4BIT_MATMUL),
    title="{title}",
    explanation="A 4-bit (Params4bit) weight is quantized, and gets its quant state, when it is moved to the GPU. This "
    "one reached the matmul as packed data without that state: a layer built on the CPU and never moved, a state "
    "dict loaded into plain tensors, or an NF4 checkpoint loaded with the application's bitsandbytes path off (Forge "
    "needs --bnb for NF4 models).",
    fix="Move the quantized model to the GPU before use, or load it with from_pretrained and a BitsAndBytesConfig; in "
    "Forge, start with the --bnb flag for NF4 checkpoints.",
    commands=(VERSIONS_CHECK,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no 4-bit weight used without its quantization state",
    needs=("log",),
    covers=("weight_4bit_without_quant_state",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/825",
        "https://github.com/Haoming02/sd-webui-forge-classic/issues/488",
        "https://github.com/yolain/ComfyUI-Easy-Use/issues/325",
    ),
    confirm=(VERSIONS_CHECK,),
)
def weight_4bit_without_quant_state(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the messages of a 4-bit weight that reaches the matmul without its quantization state:

    - bitsandbytes' `FP4 quantization state not initialized. Please call .cuda() or .to(device) on the LinearFP4
      layer first.`;
    - `NotImplementedError: 4-bit quantization data type None is not implemented` (the state's `quant_type` is
      missing);
    - `AttributeError: 'Tensor' object has no attribute 'quant_state'` (the weight is a plain tensor, not a
      `Params4bit`);
    - `mat1 and mat2 shapes cannot be multiplied (AxB and 1xN)`: a plain matmul got the packed 4-bit weight, whose
      shape is `N x 1` (a generic message, so that finding is less certain).

    ## Why it matters

    A `Params4bit` weight is quantized, and gets its quant state (absmax, code, blocksize, data type), when it is
    moved to the GPU. A 4-bit layer built on the CPU and never moved, a state dict loaded into plain tensors, or a
    Flux NF4 checkpoint loaded by a UI whose bitsandbytes path is off (Forge without `--bnb`) leaves packed uint8
    data with no state, and the 4-bit matmul cannot run.

    ## How to fix

    - Code that builds 4-bit layers: move the model to the GPU before the first forward (`model.cuda()`), or load it
      with `from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True), device_map=...)`.
    - Forge and Forge Classic: start with the `--bnb` flag for NF4 checkpoints (the maintainer's answer).
    - ComfyUI: load NF4 checkpoints with a loader that supports them, with a current bitsandbytes.
    """
    title = (
        "A 4-bit weight was used without its quantization state"
        if log.seen(facts, S.QUANT_STATE_MISSING)
        else "A plain matmul got a packed 4-bit weight: the 4-bit path was not taken"
    )
    return FINDING.hit(facts, title=title)
