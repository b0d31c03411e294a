"""The report: one diagnosis of one machine, with the facts it rests on.

Every output format (text, JSON, Markdown, the TUI) renders a :class:`Report`; a JSON report can be
read back (``--from``) and re-diagnosed with today's rules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from bnbdoctor import __version__
from bnbdoctor.facts import SCHEMA_VERSION, Facts
from bnbdoctor.findings import CheckResult, Finding, Severity


class ExitCode(IntEnum):
    """bnbdoctor's exit status: part of its command-line contract. Each member's ``__doc__``
    says when it is returned (``bnbdoctor --help`` and docs/cli.md repeat it)."""

    OK = 0
    FINDINGS = 1
    FAILURE = 2


# Each member's own ``__doc__``, set once the class exists. Members declared as plain values keep
# ``ExitCode(n)`` a lookup by value for the type checker too: with ``__new__(cls, value, doc)``,
# mypy reads ``ExitCode(n)`` as a call that is missing ``doc``.
ExitCode.OK.__doc__ = "No error findings (warnings are allowed unless --strict)."
ExitCode.FINDINGS.__doc__ = "At least one error finding (or a warning, with --strict)."
ExitCode.FAILURE.__doc__ = "A usage error, unreadable input, or bnbdoctor itself failed."


class Outcome(Protocol):
    """What the rules concluded, as :func:`build_report` reads it
    (:class:`bnbdoctor.rules.engine.Diagnosis`). A protocol, so that the report, which every
    renderer reads, does not depend on the rule engine."""

    @property
    def findings(self) -> list[Finding]: ...

    @property
    def passed(self) -> list[CheckResult]: ...

    @property
    def skipped(self) -> list[CheckResult]: ...


@dataclass
class Summary:
    errors: int = 0
    warnings: int = 0
    info: int = 0
    passed: int = 0
    skipped: int = 0

    def line(self, from_log: bool = False) -> str:
        """The counts in one line; ``from_log``: a rule that found nothing in a log verified nothing."""

        def plural(n: int, word: str) -> str:
            return f"{n} {word}{'' if n == 1 else 's'}"

        return ", ".join(
            [
                plural(self.errors, "error"),
                plural(self.warnings, "warning"),
                f"{self.info} info",
                f"{self.passed} rules found nothing in the log" if from_log else f"{self.passed} checks passed",
                f"{self.skipped} skipped",
            ]
        )


@dataclass
class Report:
    """A diagnosis with its facts. ``schema_version`` versions this whole layout."""

    tool: str
    tool_version: str
    schema_version: int
    created: str
    source: dict[str, str]
    interpreter: str | None
    summary: Summary
    findings: list[Finding] = field(default_factory=list)
    passed: list[CheckResult] = field(default_factory=list)
    skipped: list[CheckResult] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    timings: dict[str, float] = field(default_factory=dict)
    redaction: dict[str, int] | None = None  # rule -> replacements; None when not redacted
    replayed_from: str | None = None  # created time of the report these facts came from (--from)

    def exit_code(self, strict: bool = False) -> ExitCode:
        if self.summary.errors or (strict and self.summary.warnings):
            return ExitCode.FINDINGS
        return ExitCode.OK


def created_now() -> str:
    """Now in UTC as ``datetime.now(timezone.utc).isoformat(timespec="seconds")`` writes it
    ("2026-01-31T09:05:00+00:00"), without importing datetime (a few ms of every run)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


def build_report(facts: Facts, diagnosis: Outcome, started: float | None = None) -> Report:
    """Assemble a report; ``started`` (a perf_counter value) adds the total wall time."""
    counts = {s: sum(1 for f in diagnosis.findings if f.severity is s) for s in Severity}
    timings = {f"probe.{run.name}": round(run.duration_s, 4) for run in facts.probes}
    if started is not None:
        timings["total"] = round(time.perf_counter() - started, 4)
    return Report(
        tool="bnbdoctor",
        tool_version=__version__,
        schema_version=SCHEMA_VERSION,
        created=created_now(),
        source={k: str(v) for k, v in facts.source.items()},
        interpreter=facts.python.executable if facts.python else None,
        summary=Summary(
            counts[Severity.ERROR],
            counts[Severity.WARNING],
            counts[Severity.INFO],
            len(diagnosis.passed),
            len(diagnosis.skipped),
        ),
        findings=diagnosis.findings,
        passed=diagnosis.passed,
        skipped=diagnosis.skipped,
        facts=facts,
        timings=timings,
    )
