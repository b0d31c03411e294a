"""BNB527 log-bitsandbytes-too-old-for-optimizer: passes when the log shows no bitsandbytes lacking the optimizer a trainer asks for."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import BNB_LION, BNB_PAGED_OPTIMIZERS
from bnbdoctor.knowledge.ranges import VersionRange
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: What lists the optimizers the running interpreter's bitsandbytes has.
OPTIMIZERS = 'python -c "import bitsandbytes as b; print(b.__version__, [n for n in dir(b.optim) if n[0].isupper()])"'


def _needs(text: str) -> tuple[str, VersionRange | None]:
    """The optimizer (or option) the line asks for, and the releases that have it when it is one of the known."""
    if "is_paged" in text:
        return "the paged optimizers (is_paged=)", BNB_PAGED_OPTIMIZERS
    found = re.search(r"has no attribute '(\w+)'", text)
    name = found.group(1) if found else "the optimizer"
    if name.startswith("Paged"):
        return name, BNB_PAGED_OPTIMIZERS
    if name.startswith("Lion"):
        return name, BNB_LION
    return name, None


FINDING = log.LogFinding(
    (S.BNB_LACKS_OPTIMIZER,),
    title="The installed bitsandbytes has no {name}: a release older than the trainer expects",
    explanation="The trainer asks bitsandbytes for {name}{since}, and the installed release does not have it. An old "
    "release (on Windows often a community build) stays installed when a launcher or a requirements pin keeps it.",
    fix="Upgrade bitsandbytes in the trainer's environment, or choose an optimizer the installed release has.",
    commands=('pip install -U "bitsandbytes{spec}"', PYTHON_M_BNB),
    also_quoted=(S.BNB_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes lacking the optimizer a trainer asks for",
    needs=("log",),
    covers=("bnb_too_old_for_optimizer",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/670",
        "https://github.com/d8ahazard/sd_dreambooth_extension/issues/1395",
    ),
    confirm=(OPTIMIZERS,),
)
def bitsandbytes_too_old_for_optimizer(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: module 'bitsandbytes.optim' has no attribute 'PagedAdam'` (any optimizer
    name: `Lion8bit`, `PagedAdamW8bit`, ...) and on `AdamW8bit.__init__() got an unexpected keyword argument
    'is_paged'`, which trainers (kohya_ss, the Dreambooth extension, transformers' `optim="paged_adamw_8bit"`)
    raise when the installed bitsandbytes lacks the optimizer or the option they ask for.

    The installed release is also a machine fact: `python -m bitsandbytes` prints it, and the optimizers a release
    has are fixed by its version.

    ## Why it matters

    Optimizers arrived release by release: 8-bit Lion in {{ features.BNB_LION.first_text }}, the paged optimizers
    and their `is_paged` argument in {{ features.BNB_PAGED_OPTIMIZERS.first_text }}. An older release, often a
    Windows community build that a launcher installed long ago, has no such class; the trainer fails (or falls back
    to torch's AdamW with a warning, using far more memory).

    ## How to fix

    Upgrade bitsandbytes in the trainer's environment, or pick an optimizer the installed release has:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```
    """
    matches = log.matches(facts, S.BNB_LACKS_OPTIMIZER)
    if not matches:
        return None
    name, releases = _needs(matches[0].text)
    since = f" (bitsandbytes {releases.first_text} and newer have it)" if releases else ""
    return FINDING.hit(facts, name=name, since=since, spec=(releases or BNB_PAGED_OPTIMIZERS).pip_spec())
