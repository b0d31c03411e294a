"""Findings: the vocabulary of a diagnosis, shared by the rules, the explain pipeline and the renderers.

A check returns :class:`Hit` objects (or nothing, or :class:`Skip`); the rule engine stamps each hit
with its rule's identity to make a :class:`Finding`. Renderers and reports only need this module,
never the rules themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

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
class Proof:
    """The machine re-diagnosed as the report's commands leave it (``bnbdoctor.rules.verify``): a fix is a
    claim, shown as verified only when the rules find no error on the facts the commands would leave."""

    verified: bool | None  # True: no error remains; False: ``remaining`` remain; None: cannot tell (see below)
    remaining: list[str] = field(default_factory=list)  # "BNB101: <title>" of each error left after the fix
    not_replayed: list[str] = field(default_factory=list)  # "`command`: what it does that is not replayed"
    unknown: list[str] = field(default_factory=list)  # what the re-diagnosis could not check again


@dataclass
class Remediation:
    """What to do. ``commands`` holds only safe, non-destructive commands a user may copy."""

    text: str
    commands: list[str] = field(default_factory=list)
    proof: Proof | None = None  # None: not re-diagnosed (no commands, or a command that does not diagnose a machine)


@dataclass
class Hit:
    """What a check returns: the specifics of one problem it found."""

    title: str
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)
    remediation: Remediation = field(default_factory=lambda: Remediation(""))
    severity: Severity | None = None  # None: the rule's default
    references: list[str] = field(default_factory=list)  # in addition to the rule's
    # The catalog ids this hit diagnoses; None means the rule's declared ``covers``. A branch of a
    # rule that diagnoses only some of its families names them, so that a finding never claims a
    # failure its text does not explain.
    covers: list[str] | None = None


@dataclass
class FollowOn:
    """A finding muted because it follows from a root finding: its rule's premise was refuted.

    Shown under the root as "also seen, follows from this"; never counted, never the exit code."""

    rule_id: str
    rule_name: str
    severity: Severity
    title: str
    premise: str  # the premise (see ``bnbdoctor.rules.base.PREMISES``) the root refuted
    doc: str = ""


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
    doc: str = ""  # the command that prints the rule's page: "bnbdoctor rule <ID>"
    # Set by ``bnbdoctor explain`` (facts from a log are partial); None/empty for a machine's report.
    rank: int | None = None  # 1 = the root cause the log most likely shows
    confidence: str | None = None  # "high" | "medium" | "low": how directly the log shows this failure
    confirm: list[str] = field(default_factory=list)  # what to run on the machine to confirm it
    log_lines: list[int] = field(default_factory=list)  # line numbers of the log lines it rests on
    # Findings of rules whose premise this finding refuted: consequences, not causes of their own.
    follows: list[FollowOn] = field(default_factory=list)


@dataclass
class CheckResult:
    """A rule that produced no finding (passed) or could not run (skipped, with why).

    ``blocked_by`` names the root finding's rule when the check is "not checked" because that
    finding refuted its premise (the check ran, but on a premise known to be false)."""

    rule_id: str
    rule_name: str
    summary: str
    reason: str | None = None
    blocked_by: str | None = None


class Skip(Exception):
    """Raised (or returned) by a check that does not apply to these facts."""


CheckOutput = Hit | Iterable[Hit] | Skip | None
Check = Callable[[Facts], CheckOutput]
