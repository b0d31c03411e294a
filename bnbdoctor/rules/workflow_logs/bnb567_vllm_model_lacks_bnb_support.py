"""BNB567 vllm-model-lacks-bnb-support: passes when the log shows no vLLM release refusing bitsandbytes for a model class."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VLLM_VERSION = 'python -c "import vllm; print(vllm.__version__)"'

FINDING = log.LogFinding(
    (S.VLLM_MODEL_LACKS_BNB,),
    title="This vLLM release cannot load the model class with bitsandbytes",
    explanation="vLLM's bitsandbytes loader needs each model class to map its checkpoint's weights onto vLLM's fused "
    "layers; support came model by model, and the installed release has none for this model. Nothing is wrong with "
    "bitsandbytes or the checkpoint.",
    fix="Upgrade vLLM to a release that supports bitsandbytes for this model, or serve it without bitsandbytes (the "
    "full-precision checkpoint, or a quantization the release supports for it).",
    commands=("pip install -U vllm", VLLM_VERSION),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no vLLM release refusing bitsandbytes for a model class",
    needs=("log",),
    covers=("vllm_model_lacks_bnb_support",),
    references=(
        "https://github.com/vllm-project/vllm/issues/7624",
        "https://github.com/vllm-project/vllm/issues/9967",
        "https://github.com/vllm-project/vllm/issues/11687",
    ),
    confirm=(VLLM_VERSION,),
)
def vllm_model_lacks_bnb_support(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on vLLM's `AttributeError: Model LlavaForConditionalGeneration does not support BitsAndBytes
    quantization yet.` (any model class: `Qwen2ForCausalLM`, `Qwen2VLForConditionalGeneration`, ...; one 2024
    release printed its loader's name, `Model BitsAndBytesModelLoader ...`).

    ## Why it matters

    vLLM's bitsandbytes loader reads a checkpoint's separate projections into vLLM's fused layers, and each model class
    has to declare that mapping. bitsandbytes support arrived model by model over the 2024 releases (Qwen2,
    Gemma 2, LLaVA, Qwen2-VL came later), so a model a newer vLLM serves with bitsandbytes fails on an older one
    before any weight is loaded. Nothing is wrong with bitsandbytes, the GPU or the pre-quantized checkpoint.

    ## How to fix

    Upgrade vLLM to a release that supports bitsandbytes for the model:

    ```bash
    pip install -U vllm
    ```

    or serve the model without bitsandbytes: its full-precision checkpoint, or a GPTQ/AWQ quantization the installed
    release supports for it.
    """
    return FINDING.hit(facts)
