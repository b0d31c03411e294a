"""BNB535 load-in-kbit-keyword-unsupported: passes when the log shows no 'unexpected keyword argument load_in_4bit/load_in_8bit' TypeError."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.kbit import KBIT_KWARGS_REMOVED, LOAD_IN_4BIT_KWARG
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import _bits


@rule(
    Severity.ERROR,
    "The log shows no 'unexpected keyword argument load_in_4bit/load_in_8bit' TypeError",
    needs=("log",),
    covers=("transformers_load_in_kbit_kwarg_unsupported",),
    references=(
        "https://github.com/huggingface/transformers/pull/41287",
        "https://github.com/huggingface/trl/pull/4262",
        "https://github.com/stochasticai/xTuring/pull/358",
        "https://github.com/artidoro/qlora/issues/40",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/428",
    ),
    confirm=('python -c "import transformers; print(transformers.__version__)"',),
)
def load_in_kbit_kwarg(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `TypeError: <Model>.__init__() got an unexpected keyword argument 'load_in_4bit'` (or
    `'load_in_8bit'`; older Pythons print `__init__()` without the class, and the name may wrap onto the next line).
    It tells the two causes apart by the transformers version the log shows:

    | transformers | verdict |
    |---|---|
    | before {{ kbit.LOAD_IN_4BIT_KWARG.first_text }} | the 4-bit keyword did not exist yet: passed on to the model |
    | {{ kbit.KBIT_KWARGS_REMOVED.first_text }} and newer | both keywords removed (PR #41287): `quantization_config` |
    | in between | the keyword exists: something else (a custom model class, another library's loader) received it |
    | not in the log | either of the first two |

    ## Why it matters

    A script written for transformers {{ kbit.BARE_KBIT_KWARGS.first_text }}-{{ kbit.BARE_KBIT_KWARGS.last_text }} (or a tutorial) passes `load_in_4bit=True` directly to
    `from_pretrained`. transformers 5 removed the bare keywords, so the same script fails after an upgrade; very old
    releases did not know the 4-bit keyword and forwarded it to the model's `__init__`.

    ## How to fix

    Pass a `BitsAndBytesConfig` instead of the bare keyword; this works on every transformers from {{ kbit.LOAD_IN_4BIT_KWARG.first_text }} on:

    ```python
    from transformers import BitsAndBytesConfig
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```
    """
    matches = log.matches(facts, S.LOAD_IN_KBIT_KWARG_UNSUPPORTED)
    if not matches:
        return None
    bits = next((b for b in (_bits(m.text) for m in matches) if b), "4")
    version = log.version(facts, "transformers")
    release = log.release(facts, "transformers")
    removed, first_4bit = full(KBIT_KWARGS_REMOVED.first_text), LOAD_IN_4BIT_KWARG.first_text
    config = f"quantization_config=BitsAndBytesConfig(load_in_{bits}bit=True)"
    fix = Remediation(
        f"Replace load_in_{bits}bit=True in the from_pretrained call with {config}; it works on every transformers "
        f"from {first_4bit} on.",
        [f'pip install "transformers>={first_4bit}"'] if release and not LOAD_IN_4BIT_KWARG.contains(release) else [],
    )
    if KBIT_KWARGS_REMOVED.contains(release):
        title = f"transformers {version} no longer takes load_in_{bits}bit=: pass a BitsAndBytesConfig"
        why = (
            f"transformers {removed} removed the load_in_4bit/load_in_8bit keywords of from_pretrained (PR #41287) in "
            "favour of quantization_config, so the keyword now reaches the model's __init__, which rejects it."
        )
    elif release and not LOAD_IN_4BIT_KWARG.contains(release):
        title = f"transformers {version} predates load_in_4bit: from_pretrained passed it on to the model"
        why = (
            f"4-bit loading arrived in transformers {first_4bit}; older releases do not know the keyword and forward "
            "it to the model's __init__, which rejects it."
        )
    elif release:
        title = f"load_in_{bits}bit= reached a class that does not take it (transformers {version} knows it)"
        why = (
            f"transformers {version} accepts load_in_{bits}bit in from_pretrained, so the keyword went to something "
            "else: a custom model class (trust_remote_code), another library's loader or a config class. Pass it "
            "where that code expects it, or use quantization_config."
        )
    else:
        title = (
            f"from_pretrained does not take load_in_{bits}bit= here: transformers {removed}+ removed it, "
            "or it predates it"
        )
        why = (
            f"transformers {removed} removed the bare load_in_4bit/load_in_8bit keywords (PR #41287), and releases "
            f"before {first_4bit} did not know load_in_4bit; either way the keyword reached the model's __init__. The "
            "log does not show the transformers version."
        )
    return Hit(
        title=title,
        explanation="The script passes the quantization keyword directly to from_pretrained. " + why,
        evidence=log.line_evidence(facts, S.LOAD_IN_KBIT_KWARG_UNSUPPORTED, S.PACKAGE_VERSION, limit=3),
        remediation=fix,
    )
