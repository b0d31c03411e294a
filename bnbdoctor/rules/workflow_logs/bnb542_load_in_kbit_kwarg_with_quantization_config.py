"""BNB542 load-in-kbit-kwarg-with-quantization-config: passes when the log shows no from_pretrained given load_in_4bit/8bit and a quantization_config together."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.ERROR,
    "The log shows no from_pretrained given load_in_4bit/8bit and a quantization_config together",
    needs=("log",),
    covers=("load_in_kbit_kwarg_with_quantization_config",),
    references=(
        "https://github.com/04RR/LLM-Trainer/issues/2",
        "https://github.com/hiyouga/LlamaFactory/issues/4157",
        "https://github.com/luxonis/datadreamer/issues/39",
    ),
    confirm=('python -c "import transformers; print(transformers.__version__)"',),
)
def load_in_kbit_kwarg_with_quantization_config(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `ValueError: You can't pass load_in_4bit or load_in_8bit as a kwarg when passing
    quantization_config argument at the same time.`

    The same call is visible in the code: `bnbdoctor lint` flags the bare keyword ([BNB602](BNB602.md)).

    ## Why it matters

    `from_pretrained` takes the quantization either as a bare `load_in_4bit=True`/`load_in_8bit=True` keyword or as
    a `quantization_config`, not both: the two may disagree, so transformers refuses the pair. Wrappers and training
    templates that add the keyword to a call that already passes a `BitsAndBytesConfig` hit it.

    ## How to fix

    Keep only the config and drop the bare keyword (what fixed it in the threads):

    ```python
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```
    """
    if not log.seen(facts, S.KBIT_KWARG_WITH_CONFIG):
        return None
    return Hit(
        title="from_pretrained got load_in_4bit/load_in_8bit and a quantization_config: pass only the config",
        explanation=(
            "transformers takes the quantization either as a bare load_in_4bit/load_in_8bit keyword or as a "
            "quantization_config, and refuses both at once because they may disagree. The call (often a wrapper or "
            "a template) passes a BitsAndBytesConfig and the keyword too."
        ),
        evidence=log.line_evidence(facts, S.KBIT_KWARG_WITH_CONFIG, limit=2),
        remediation=Remediation(
            "Remove the load_in_4bit=/load_in_8bit= keyword from the from_pretrained call and keep "
            "quantization_config=BitsAndBytesConfig(...)."
        ),
    )
