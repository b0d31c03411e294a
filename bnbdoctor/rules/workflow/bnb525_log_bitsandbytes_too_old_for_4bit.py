"""BNB525 log-bitsandbytes-too-old-for-4bit: passes when the log shows no bitsandbytes too old for the 4-bit layers asked of it."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import BNB_4BIT
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: What shows the release the running interpreter imports, and whether it has the 4-bit layer.
HAS_4BIT = "python -c \"import bitsandbytes as b; print(b.__version__, hasattr(b.nn, 'Linear4bit'))\""


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes too old for the 4-bit layers asked of it",
    needs=("log",),
    covers=("bnb_too_old_for_4bit",),
    references=(
        "https://github.com/oobabooga/text-generation-webui/issues/2225",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/815",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/416",
    ),
    confirm=(HAS_4BIT,),
)
def bitsandbytes_too_old_for_4bit(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: module 'bitsandbytes.nn' has no attribute 'Linear4bit'` (or `Params4bit`,
    `LinearNF4`, `LinearFP4`), which peft's `is_bnb_4bit_available` check and transformers' `replace_with_bnb_linear`
    raise on an old release, and on transformers' own gate `4 bit quantization requires bitsandbytes>=X - please
    upgrade your bitsandbytes version`.

    The installed release is also a machine fact: on the machine, bitsandbytes older than
    {{ features.BNB_4BIT.first_text }} is what this message means, and `python -m bitsandbytes` prints it.

    ## Why it matters

    4-bit quantization (`Linear4bit`, `Params4bit`, NF4 and FP4) arrived in bitsandbytes
    {{ features.BNB_4BIT.first_text }}. Loading a model in 4-bit, or importing a peft that supports it, on an older
    release fails before anything runs. On Windows the old release is usually a community build installed before
    the official Windows wheels, kept by a launcher or a requirements pin (a `Did you mean: 'Linear8bitLt'?` hint
    and a `libbitsandbytes_cuda116.dll` path are its marks).

    ## How to fix

    Upgrade bitsandbytes with the interpreter that runs the program, and drop any old pin from its requirements:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```
    """
    if not log.seen(facts, S.BNB_LACKS_4BIT):
        return None
    bnb = facts.python.bitsandbytes if facts.python else None
    installed = bnb.version if bnb and bnb.version else None
    first = BNB_4BIT.first_text
    title = (
        f"bitsandbytes {installed} is too old for 4-bit models"
        if installed
        else (f"The installed bitsandbytes predates 4-bit quantization ({first})")
    )
    return Hit(
        title=title,
        explanation=(
            f"4-bit layers (Linear4bit, Params4bit, NF4/FP4) arrived in bitsandbytes {first}; the program loads a "
            "model in 4-bit (or imports a peft that checks for 4-bit layers) and the installed release has none. "
            "An old community build on Windows, or a pinned release, is the usual reason."
        ),
        evidence=log.line_evidence(facts, S.BNB_LACKS_4BIT, S.BNB_VERSION, limit=2),
        remediation=Remediation(
            f"Upgrade bitsandbytes to {first} or newer in the environment that runs the program (remove an old pin "
            "from its requirements), then check it with python -m bitsandbytes.",
            [f'pip install -U "bitsandbytes{BNB_4BIT.pip_spec()}"', PYTHON_M_BNB],
        ),
    )
