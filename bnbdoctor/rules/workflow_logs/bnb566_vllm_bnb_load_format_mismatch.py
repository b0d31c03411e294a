"""BNB566 vllm-bnb-load-format-mismatch: passes when the log shows no vLLM refusing a bitsandbytes quantization without the bitsandbytes load format, or the other way round."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VLLM_VERSION = 'python -c "import vllm; print(vllm.__version__)"'

FINDING = log.LogFinding(
    (S.VLLM_BNB_LOAD_FORMAT_MISMATCH,),
    title="vLLM was given only one of the two bitsandbytes settings (quantization, load format)",
    explanation="vLLM loads a bitsandbytes model only with both quantization=bitsandbytes and "
    "load_format=bitsandbytes; its config check refuses one without the other. Nothing is wrong with bitsandbytes.",
    fix='Pass both: `--quantization bitsandbytes --load-format bitsandbytes` (LLM(quantization="bitsandbytes", '
    'load_format="bitsandbytes")); in a wrapper such as RunPod\'s worker-vllm, set both of its options.',
    commands=(VLLM_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no vLLM refusing a bitsandbytes quantization without the bitsandbytes load format (or the reverse)",
    needs=("log",),
    covers=("vllm_bnb_load_format_mismatch",),
    references=(
        "https://github.com/runpod-workers/worker-vllm/issues/99",
        "https://github.com/vllm-project/vllm/issues/13150",
    ),
    confirm=(VLLM_VERSION,),
)
def vllm_bnb_load_format_mismatch(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on vLLM's config check for bitsandbytes, in either direction:

    - `ValueError: BitsAndBytes load format and QLoRA adapter only support 'bitsandbytes' quantization, but got None`
      (a paste may lose the first letter, `itsAndBytes ...`);
    - `ValueError: BitsAndBytes quantization and QLoRA adapter only support 'bitsandbytes' load format, but got auto`.

    ## Why it matters

    In vLLM, bitsandbytes is two settings that go together: the quantization (`--quantization bitsandbytes`) and the
    weight loader (`--load-format bitsandbytes`). The releases of the threads refuse either without the other, before
    any weight is read. RunPod's worker-vllm offered the load format but no bitsandbytes quantization option
    (worker-vllm#99); a `vllm serve` of a bitsandbytes model with the default load format `auto` hit the reverse
    (vllm#13150). Nothing is wrong with bitsandbytes, the GPU or the checkpoint.

    ## How to fix

    Pass both settings:

    ```bash
    vllm serve MODEL --quantization bitsandbytes --load-format bitsandbytes
    ```

    (in Python: `LLM(model=..., quantization="bitsandbytes", load_format="bitsandbytes")`). In a wrapper that starts
    vLLM (RunPod's worker-vllm, xinference), set both of its options, or update it to a release that sets them
    together.
    """
    return FINDING.hit(facts)
