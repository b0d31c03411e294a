"""Rules and findings: the vocabulary of a diagnosis.

A rule has a stable public id (``BNB101``), a readable name, a default severity and the ids of the
failure-catalog entries it diagnoses (``covers``). Its check reads facts only and returns
:class:`Hit` objects (or nothing); the engine stamps each hit with the rule's identity to make a
:class:`Finding`. Checks never print.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Iterable, Union

from bnbdoctor.facts import Facts


class Severity(str, Enum):
    """How bad a finding is. ``error`` means bitsandbytes (or the feature) will not work."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass
class Evidence:
    """A fact the finding rests on, with its value as the probe recorded it."""

    label: str
    value: str
    fact: str | None = None  # dotted path into the facts, e.g. "gpu.devices[0].compute_capability"


@dataclass
class Remediation:
    """What to do. ``commands`` holds only safe, non-destructive commands a user may copy."""

    text: str
    commands: list[str] = field(default_factory=list)


@dataclass
class Hit:
    """What a check returns: the specifics of one problem it found."""

    title: str
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)
    remediation: Remediation = field(default_factory=lambda: Remediation(""))
    severity: Severity | None = None  # None: the rule's default
    references: list[str] = field(default_factory=list)  # in addition to the rule's


@dataclass
class Finding:
    """A hit stamped with its rule's identity: what renderers show and reports carry."""

    rule_id: str
    rule_name: str
    severity: Severity
    title: str
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)
    remediation: Remediation = field(default_factory=lambda: Remediation(""))
    references: list[str] = field(default_factory=list)
    covers: list[str] = field(default_factory=list)
    doc: str = ""  # docs/rules/<ID>.md
    # Set by ``bnbdoctor explain`` (facts from a log are partial); None/empty for a machine's report.
    rank: int | None = None  # 1 = the root cause the log most likely shows
    confidence: str | None = None  # "high" | "medium" | "low": how directly the log shows this failure
    confirm: list[str] = field(default_factory=list)  # what to run on the machine to confirm it
    log_lines: list[int] = field(default_factory=list)  # line numbers of the log lines it rests on


@dataclass
class CheckResult:
    """A rule that produced no finding (passed) or could not run (skipped, with why)."""

    rule_id: str
    rule_name: str
    summary: str
    reason: str | None = None


class Skip(Exception):
    """Raised (or returned) by a check that does not apply to these facts."""


CheckOutput = Union[Hit, Iterable[Hit], Skip, None]
Check = Callable[[Facts], CheckOutput]


@dataclass(frozen=True)
class Rule:
    """A registered rule. ``summary`` says, as a passed check, what was verified."""

    id: str
    name: str
    severity: Severity
    summary: str
    check: Check
    needs: tuple[str, ...] = ()  # Facts sections that must be present
    covers: tuple[str, ...] = ()
    references: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return f"docs/rules/{self.id}.md"


_REGISTRY: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    severity: Severity,
    summary: str,
    *,
    needs: tuple[str, ...] = (),
    covers: tuple[str, ...] = (),
    references: tuple[str, ...] = (),
) -> Callable[[Check], Check]:
    """Register a check function as a rule. Ids are public API: never reuse or renumber."""

    def register(check: Check) -> Check:
        if id in _REGISTRY:
            raise ValueError(f"rule id {id} registered twice")
        _REGISTRY[id] = Rule(id, name, severity, summary, check, needs, covers, references)
        return check

    return register


def registered_rules() -> list[Rule]:
    """Every rule, ordered by id."""
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]
