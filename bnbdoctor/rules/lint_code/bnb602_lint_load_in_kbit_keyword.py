"""BNB602 lint-load-in-kbit-keyword: passes when no from_pretrained call passes a bare load_in_4bit=/load_in_8bit= keyword."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.kbit import KBIT_KWARGS_REMOVED, LOAD_IN_4BIT_KWARG
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import TRANSFORMERS_BNB, _code, _evidence, _installed, _sites


@rule(
    Severity.WARNING,
    "No from_pretrained call passes a bare load_in_4bit=/load_in_8bit= keyword",
    needs=("lint",),
    covers=("transformers_load_in_kbit_kwarg_unsupported",),
    references=(TRANSFORMERS_BNB, "https://github.com/huggingface/transformers/pull/41287"),
)
def load_in_kbit_keyword(facts: Facts) -> list[Hit]:
    """## What it detects

    `from_pretrained(..., load_in_4bit=True)` or `load_in_8bit=True` instead of
    `quantization_config=BitsAndBytesConfig(...)`.

    ## Why it matters

    transformers 5 removed the bare keywords (PR #41287): the keyword reaches the model's `__init__`,
    which raises `TypeError: ... unexpected keyword argument 'load_in_4bit'`. It is an error when the
    examined interpreter has transformers 5 or newer, a warning otherwise.

    ## How to fix

    ```python
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```
    """
    transformers = _installed(facts, "transformers")
    removed = KBIT_KWARGS_REMOVED.contains(transformers)
    hits = []
    for site in _sites(facts, "kbit_kwarg"):
        kwarg = site.detail.get("kwarg", "load_in_4bit")
        installed = f" (transformers {transformers} is installed)" if transformers else ""
        hits.append(
            Hit(
                title=f"from_pretrained(..., {kwarg}=True): transformers {full(KBIT_KWARGS_REMOVED.first_text)}+ "
                f"removed this keyword{installed}",
                explanation=(
                    f"transformers {full(KBIT_KWARGS_REMOVED.first_text)} removed the bare load_in_4bit/load_in_8bit "
                    "keywords of from_pretrained in favour of quantization_config; there the call raises TypeError. "
                    f"quantization_config works on every transformers from {LOAD_IN_4BIT_KWARG.first_text} on."
                ),
                evidence=_evidence(site),
                remediation=Remediation(
                    f"Pass a BitsAndBytesConfig instead of {kwarg}=True:\n"
                    + _code(f"quantization_config=BitsAndBytesConfig({kwarg}=True)")
                ),
                severity=Severity.ERROR if removed else None,
            )
        )
    return hits
