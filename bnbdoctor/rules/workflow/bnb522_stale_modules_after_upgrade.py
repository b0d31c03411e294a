"""BNB522 stale-modules-after-upgrade: passes when the log shows no bitsandbytes module importing a name its sibling lacks (old and new files mixed)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

FINDING = log.LogFinding(
    (S.STALE_BNB_MODULES,),
    title="Old and new bitsandbytes modules are mixed in one Python process",
    explanation="A bitsandbytes module imports a name that another bitsandbytes module does not define (such as "
    "sync_gpu from bitsandbytes.utils). After `pip install -U bitsandbytes` inside a running notebook, the old "
    "modules already imported stay in memory next to the new files; outdated packages built on bitsandbytes "
    "(an old PEFT) add to it. `python -m bitsandbytes` in a fresh process usually reports success.",
    fix="Restart the runtime or kernel after upgrading, and upgrade peft, transformers and "
    "accelerate together with bitsandbytes.",
    commands=(
        "pip install -U bitsandbytes peft transformers accelerate",
        PYTHON_M_BNB,
    ),
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes module importing a name its sibling lacks (old and new files mixed)",
    needs=("log",),
    covers=("colab_stale_modules_sync_gpu",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1792",),
    confirm=("pip show bitsandbytes peft transformers accelerate", PYTHON_M_BNB),
)
def stale_modules(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when a bitsandbytes module imports a name that another bitsandbytes module lacks: `ImportError:
    cannot import name 'X' from 'bitsandbytes.Y'` (for example `sync_gpu` from `bitsandbytes.utils`), and the paraphrase
    `can not import 'sync_gpu'`.

    ## Why it matters

    After `pip install -U bitsandbytes` inside a running notebook, the modules already imported stay in memory next to
    the new files on disk, so a new module imports from an old one. Outdated packages built on bitsandbytes (an old
    PEFT) add to it. `python -m bitsandbytes` in a fresh process usually reports success, which makes this confusing.

    ## How to fix

    Restart the runtime or kernel after upgrading, and upgrade the packages built on bitsandbytes together with it:

    ```bash
    pip install -U bitsandbytes peft transformers accelerate
    ```
    """
    return FINDING.hit(facts)
