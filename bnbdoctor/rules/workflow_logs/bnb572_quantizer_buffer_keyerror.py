"""BNB572 quantizer-buffer-keyerror: passes when the log shows no transformers 4.38 quantizer looking a buffer up among parameters."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSION = 'python -c "import transformers; print(transformers.__version__)"'
FIXED = "4.39.0"

FINDING = log.LogFinding(
    (S.QUANTIZER_BUFFER_KEYERROR,),
    title="transformers 4.38's bitsandbytes quantizer failed on a buffer of the checkpoint (KeyError: 'inv_freq')",
    explanation="transformers 4.38.0-4.38.2 ask their bitsandbytes 4-bit and 8-bit quantizers about every tensor of "
    "the checkpoint and those look it up among the module's parameters; a checkpoint that stores a buffer, as the "
    "rotary embedding's inv_freq of ESM, ChatGLM3 or CogVLM, has no such parameter and the lookup raises KeyError. "
    "The model and bitsandbytes are fine.",
    fix=f"Upgrade transformers to {FIXED} or newer, whose quantizers look the name up safely (transformers PR "
    "#29329); or load with transformers 4.37.2.",
    commands=(f'pip install -U "transformers>={FIXED}"', VERSION),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no transformers 4.38 quantizer looking a buffer up among parameters",
    needs=("log",),
    covers=("quantizer_buffer_keyerror",),
    references=(
        "https://github.com/huggingface/transformers/issues/29323",
        "https://github.com/huggingface/transformers/pull/29329",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1117",
        "https://github.com/hiyouga/LlamaFactory/issues/2554",
        "https://github.com/zai-org/CogVLM/issues/396",
    ),
    confirm=(VERSION,),
)
def quantizer_buffer_keyerror(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `KeyError: 'inv_freq'` (the buffer's name, also with a module path in front), and on the
    source line transformers 4.38 prints in the traceback above it, `if isinstance(module._parameters[tensor_name],
    bnb.nn.Params4bit):` (or `Int8Params`), in `check_quantized_param` of `quantizers/quantizer_bnb_4bit.py` or
    `quantizer_bnb_8bit.py`.

    ## Why it matters

    transformers 4.38.0 moved quantized loading into `HfQuantizer` classes. While loading with `load_in_4bit` or
    `load_in_8bit`, `_load_state_dict_into_meta_model` asks the quantizer's `check_quantized_param` about every key of
    the checkpoint, and in 4.38.0-4.38.2 that indexes `module._parameters[tensor_name]`. A checkpoint that also stores
    a buffer (the rotary embedding's `inv_freq`, saved by ESM, ChatGLM3 and CogVLM) names a tensor that is not a
    parameter, and the lookup raises `KeyError`. transformers 4.39.0 looks it up with `module._parameters.get(...)`
    (PR #29329, "Fix ESM 8bit / 4bit with bitsandbytes"), and 4.37 has no quantizer classes; the wheels of 4.38.0,
    4.38.1, 4.38.2 and 4.39.0 on PyPI show both. Threads: transformers #29323 (ESM, 8-bit), bitsandbytes #1117 (ESM,
    4-bit), LLaMA-Factory #2554 (ChatGLM3 QLoRA on 4.38.1), CogVLM #396 (fixed by downgrading to 4.37.2).

    ## How to fix

    Upgrade transformers (or pin 4.37.2 where the rest of the stack needs an older release):

    ```bash
    pip install -U "transformers>=4.39.0"
    ```
    """
    return FINDING.hit(facts)
