"""BNB572 quantizer-buffer-keyerror: passes when the log shows no transformers 4.38 quantizer looking a buffer up among parameters."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BEFORE_QUANTIZERS, QUANTIZER_BUFFER_KEYERROR
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSION = 'python -c "import transformers; print(transformers.__version__)"'
BUGGY = QUANTIZER_BUFFER_KEYERROR

FINDING = log.LogFinding(
    (S.QUANTIZER_BUFFER_KEYERROR,),
    title=f"transformers {BUGGY.first_text}'s bitsandbytes quantizer failed on a buffer of the checkpoint "
    "(KeyError: 'inv_freq')",
    explanation=f"transformers {BUGGY.first_full}-{BUGGY.last_text} ask their bitsandbytes 4-bit and 8-bit quantizers "
    "about every tensor of the checkpoint and those look it up among the module's parameters; a checkpoint that "
    "stores a buffer, as the rotary embedding's inv_freq of ESM, ChatGLM3 or CogVLM, has no such parameter and the "
    "lookup raises KeyError. The model and bitsandbytes are fine.",
    fix=f"Upgrade transformers to {BUGGY.below_full} or newer, whose quantizers look the name up safely (transformers "
    f"PR #29329); or load with transformers {BEFORE_QUANTIZERS}.",
    commands=(f'pip install -U "transformers>={BUGGY.below_full}"', VERSION),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    f"The log shows no transformers {BUGGY.first_text} quantizer looking a buffer up among parameters",
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
    source line transformers {{ transformers.QUANTIZER_BUFFER_KEYERROR.first_text }} prints in the traceback above it, `if isinstance(module._parameters[tensor_name],
    bnb.nn.Params4bit):` (or `Int8Params`), in `check_quantized_param` of `quantizers/quantizer_bnb_4bit.py` or
    `quantizer_bnb_8bit.py`.

    ## Why it matters

    transformers {{ transformers.QUANTIZER_BUFFER_KEYERROR.first_full }} moved quantized loading into `HfQuantizer` classes. While loading with `load_in_4bit` or
    `load_in_8bit`, `_load_state_dict_into_meta_model` asks the quantizer's `check_quantized_param` about every key of
    the checkpoint, and in {{ transformers.QUANTIZER_BUFFER_KEYERROR.first_full }}-{{ transformers.QUANTIZER_BUFFER_KEYERROR.last_text }} that indexes `module._parameters[tensor_name]`. A checkpoint that also stores
    a buffer (the rotary embedding's `inv_freq`, saved by ESM, ChatGLM3 and CogVLM) names a tensor that is not a
    parameter, and the lookup raises `KeyError`. transformers {{ transformers.QUANTIZER_BUFFER_KEYERROR.below_full }} looks it up with `module._parameters.get(...)`
    (PR #29329, "Fix ESM 8bit / 4bit with bitsandbytes"), and {{ transformers.BEFORE_QUANTIZERS }} has no quantizer classes; the
    releases' wheels on PyPI show both. Threads: transformers #29323 (ESM, 8-bit), bitsandbytes #1117 (ESM,
    4-bit), LLaMA-Factory #2554 (ChatGLM3 QLoRA), CogVLM #396 (fixed by downgrading to {{ transformers.BEFORE_QUANTIZERS }}).

    ## How to fix

    Upgrade transformers (or pin {{ transformers.BEFORE_QUANTIZERS }} where the rest of the stack needs an older release):

    ```bash
    pip install -U "transformers>={{ transformers.QUANTIZER_BUFFER_KEYERROR.below_full }}"
    ```
    """
    return FINDING.hit(facts)
