"""What the packages rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation
from bnbdoctor.knowledge.ranges import VersionRange
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules.common import bnb_of, ev, versioned


def _not_installed(facts: Facts, package: str, explanation: str, remediation: Remediation) -> Hit:
    """BNB201's and BNB203's finding: ``package`` is not installed in the examined interpreter, which the
    evidence names (the usual cause is that bnbdoctor examined another one than the user runs)."""
    python = facts.python
    assert python is not None
    return Hit(
        title=f"{package} is not installed in the examined Python",
        explanation=explanation,
        evidence=[ev("interpreter", f"{python.executable} (Python {python.version})", "python.executable")],
        remediation=remediation,
    )


@dataclass(frozen=True)
class ImportBreakage:
    """A way ``import bitsandbytes`` fails because of another package (BNB207, BNB208: one check, two rows)."""

    releases: VersionRange  # the bitsandbytes releases that import the module
    packages: tuple[str, ...]  # the other package as facts.python.packages names it (the first one found)
    breaks: Callable[[str | None], bool]  # given its version (None: not installed), does the import fail?
    title: str  # follows "bitsandbytes X.Y.Z "; {other} is the other package's version
    explanation: str
    shown: str  # the other package's evidence value; {other} is its version
    fix: str
    commands: tuple[str, ...]

    def check(self, facts: Facts) -> Hit | None:
        """The installed release imports the module, and the other package is in the state that breaks it."""
        bnb, python = bnb_of(facts), facts.python
        assert python is not None
        release = release_tuple(bnb.version) if bnb and bnb.installed else None
        other = next((version for version in map(python.packages.get, self.packages) if version), None)
        if bnb is None or not self.releases.contains(release) or not self.breaks(other):
            return None
        label = self.packages[0]
        return Hit(
            title=f"{versioned(facts, 'bitsandbytes', bnb.version)} {self.title.format(other=other)}",
            explanation=self.explanation,
            evidence=[
                ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
                ev(label, self.shown.format(other=other), f"python.packages.{label}"),
            ],
            remediation=Remediation(self.fix, list(self.commands)),
        )
