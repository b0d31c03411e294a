"""BNB214 transformers-requires-newer-bnb: passes when the installed bitsandbytes is at least the minimum the installed transformers accepts."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.dependents import (
    TRANSFORMERS_BNB_CONSTANT,
    TRANSFORMERS_BNB_FILE,
    TRANSFORMERS_BNB_MINIMUM_PR,
    TRANSFORMERS_IMPORT_UTILS,
    TRANSFORMERS_WITH_BNB_MINIMUM,
)
from bnbdoctor.knowledge.versions import parse_version
from bnbdoctor.remedy.installable import blocked as install_obstacle
from bnbdoctor.remedy.target import target_of
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev

#: What to change first, by what stops every release from installing (remedy.installable.Blocked.change).
_CHANGE_FIRST = {"torch": "upgrade torch first", "python": "use a newer Python first"}


def _ceiling_below(facts: Facts, minimum: str) -> tuple[str, str] | None:
    """(why no release from ``minimum`` on installs here, keeping torch, on this Python, OS and glibc; what to
    change first), or None."""
    obstacle = install_obstacle(target_of(facts), SpecifierSet(f">={minimum}"))
    if obstacle is None:
        return None
    return obstacle.reason, _CHANGE_FIRST.get(obstacle.change, "run it on an OS where one installs")


# ----------------------------------------------------------------- transformers' minimum bitsandbytes
@rule(
    Severity.ERROR,
    "The installed bitsandbytes is at least the minimum the installed transformers accepts",
    needs=("python",),
    covers=("transformers_requires_newer_bnb",),
    references=(TRANSFORMERS_BNB_MINIMUM_PR, TRANSFORMERS_IMPORT_UTILS),
    confirm=("pip show transformers bitsandbytes",),
)
def transformers_requires_newer_bnb(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. transformers {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} and
    later keep the oldest bitsandbytes they accept in one constant, `{{ dependents.TRANSFORMERS_BNB_CONSTANT }}` in `{{
    dependents.TRANSFORMERS_BNB_FILE }}`. bnbdoctor reads that constant from the installed transformers' own file (as
    text, parsed with `ast`, never imported), so it follows whatever value that transformers release ships. The rule
    fires when the installed bitsandbytes is older than it, compared the way transformers compares
    (`packaging.version`, so a `.dev` build of the minimum is older than the minimum).

    From a log, it fires on transformers' own message, which names the minimum: ``Using `bitsandbytes` 4-bit
    quantization requires bitsandbytes: `pip install -U bitsandbytes>=…` ``.

    When transformers is {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} or later but the constant cannot be
    read (the file is missing, unreadable, or no longer holds it), the rule is skipped and says so: bnbdoctor does not
    guess the number. Older transformers have no such constant and are not checked.

    ## Why it matters

    `is_bitsandbytes_available()` returns False for a bitsandbytes older than the minimum, exactly as if it were not
    installed. Loading with a `BitsAndBytesConfig` then fails with an `ImportError` telling you to install a package
    that `pip list` shows as installed. An old bitsandbytes is usually pinned on purpose (an old torch, an old glibc),
    so upgrading transformers to 5 breaks a setup that worked.

    ## How to fix

    Upgrade bitsandbytes to the minimum or newer (the command keeps the upper bound the installed torch needs); if the
    platform cannot run that release (a torch older than it supports, glibc below what its wheels need), keep
    transformers below {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} instead:

    ```bash
    pip install -U "bitsandbytes>=0.46.1"
    # or
    pip install "transformers<{{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }}"
    ```
    """
    python, bnb = facts.python, bnb_of(facts)
    assert python is not None
    minimum = python.transformers_bnb_minimum
    transformers = python.packages.get("transformers")
    if minimum is None:
        return (
            Skip("transformers' own minimum bitsandbytes was not read (an older recording)") if transformers else None
        )
    if minimum.minimum is None:
        if TRANSFORMERS_WITH_BNB_MINIMUM.contains(transformers):
            why = minimum.error or f"{minimum.file or TRANSFORMERS_BNB_FILE} holds no {TRANSFORMERS_BNB_CONSTANT}"
            return Skip(f"transformers {transformers}'s minimum bitsandbytes is unknown: {why}")
        return None
    from_log = minimum.file is None  # the minimum was read from a log, not the installed transformers
    installed = bnb.version if bnb and bnb.installed else None
    have, need = parse_version(installed), parse_version(minimum.minimum)
    if need is None:
        return Skip(f"transformers' minimum bitsandbytes {minimum.minimum!r} is not a version")
    wanted = str(need)  # as a specifier takes it: a recorded "12.x" is read as 12, never a crash
    if have is not None and have >= need:
        return None
    if have is None and not from_log:
        return None if not (bnb and bnb.installed) else Skip("bitsandbytes version unknown")
    named = f"transformers {transformers}" if transformers else "transformers"
    ceiling = _ceiling_below(facts, wanted)
    pin = f'pip install "transformers<{TRANSFORMERS_WITH_BNB_MINIMUM.first_text}"'
    commands = [f'pip install -U "bitsandbytes>={wanted}"']
    fix = f"Upgrade bitsandbytes to {wanted} or newer"
    if ceiling:
        why, first = ceiling
        fix = f"Keep transformers below {TRANSFORMERS_WITH_BNB_MINIMUM.first_text} ({why}), or {first}"
        commands = [pin]
    else:
        fix += f", or keep transformers below {TRANSFORMERS_WITH_BNB_MINIMUM.first_text}"
        commands.append(pin)
    source = f"{TRANSFORMERS_BNB_CONSTANT} in {minimum.file or TRANSFORMERS_BNB_FILE}"
    where = "its ImportError names" if from_log else source
    evidence = [
        ev("transformers", transformers, "python.packages.transformers"),
        ev("transformers needs bitsandbytes", f">={wanted} ({where})", "python.transformers_bnb_minimum"),
        ev("bitsandbytes", installed or ("not shown in the log" if from_log else None), "python.bitsandbytes.version"),
    ]
    return Hit(
        title=f"{named} needs bitsandbytes >= {wanted}, "
        + (f"found {installed}" if installed else "and refused the installed one"),
        explanation=f"transformers treats a bitsandbytes older than {wanted} ({where}) as not installed: "
        "is_bitsandbytes_available() returns False, so loading with a BitsAndBytesConfig raises an ImportError "
        "although bitsandbytes is installed"
        + ("" if installed else " (or bitsandbytes is missing, or its metadata is)")
        + ".",
        evidence=evidence + log.line_evidence(facts, S.TRANSFORMERS_BNB_MINIMUM, limit=1),
        remediation=Remediation(fix + ".", commands),
    )
