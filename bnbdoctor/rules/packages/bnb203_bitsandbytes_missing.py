"""BNB203 bitsandbytes-missing: passes when bitsandbytes is installed in the examined interpreter."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of
from bnbdoctor.rules.packages._shared import _not_installed


@rule(
    Severity.ERROR,
    "bitsandbytes is installed in the examined interpreter",
    needs=("python",),
    requires=("users-env-examined",),
    covers=("bitsandbytes_not_installed",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate(
        "a log shows bitsandbytes missing only with \"No module named 'bitsandbytes'\"",
        signatures=(S.BNB_NOT_INSTALLED,),
    ),
)
def bnb_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when no bitsandbytes distribution or package folder is found in the
    interpreter bnbdoctor examines, whether chosen with `--python`, by the active virtual environment or conda
    environment, or from `PATH`. bnbdoctor reads installed metadata and files without importing bitsandbytes.

    ## Why it matters

    In that interpreter, `import bitsandbytes` raises `ModuleNotFoundError`, and so does every library that loads models
    in 8 or 4 bits through it (transformers, PEFT, accelerate). When bitsandbytes *is* installed somewhere, the usual
    cause is a second interpreter: the program runs in one environment, and `pip install` went to another (a different
    virtual environment, conda env, user site, or notebook kernel).

    Until it is installed, the checks that need its version ([BNB204](BNB204.md), [BNB206](BNB206.md)) are reported as
    skipped.

    ## How to fix

    Install bitsandbytes with the same interpreter that runs your code. Calling pip through that interpreter avoids
    installing into the wrong environment:

    ```bash
    /path/to/python -m pip install -U bitsandbytes
    /path/to/python -m bitsandbytes
    ```

    If it is already installed elsewhere, point bnbdoctor at the interpreter you actually use:

    ```bash
    bnbdoctor --python /path/to/python
    ```

    In Jupyter, install from within the kernel (`%pip install -U bitsandbytes`) and restart the kernel.
    """
    bnb = bnb_of(facts)
    if bnb is None or bnb.installed:
        return None
    python = facts.python
    assert python is not None
    return _not_installed(
        facts,
        "bitsandbytes",
        "`import bitsandbytes` fails with ModuleNotFoundError in this interpreter. If you installed "
        "it elsewhere, bnbdoctor examined the wrong interpreter (choose it with --python).",
        Remediation(
            "Install bitsandbytes into this interpreter.", [f"{python.executable} -m pip install -U bitsandbytes"]
        ),
    )
