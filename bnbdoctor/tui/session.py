"""Session: what the app diagnoses, and how, without any Textual.

A session either probes a host (:class:`~bnbdoctor.hosts.live.LiveHost`,
:class:`~bnbdoctor.hosts.fixture.FixtureHost`) or shows recorded facts or a ready report (a report
read back with ``--from``); then a re-run only re-applies today's rules. :meth:`Session.diagnose`
blocks: the app calls it from a thread worker. The probes themselves run in a daemon thread that
the caller can abandon (``cancelled``), so a hung NVML call or dlopen never holds up quitting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from bnbdoctor.doctor import diagnose, diagnose_facts, in_background
from bnbdoctor.facts import Facts
from bnbdoctor.hosts.base import Host
from bnbdoctor.probes import PROBES, ProbeOptions
from bnbdoctor.probes.runner import ProgressCallback
from bnbdoctor.report import ExitCode, Report
from bnbdoctor.rules.base import Rule

T = TypeVar("T")


def call_abandonable(
    fn: Callable[[], T], cancelled: Callable[[], bool] | None = None, poll_s: float = 0.05, name: str = "bnbdoctor-task"
) -> T:
    """``fn()`` in a daemon thread, abandoned when ``cancelled()`` turns true. The Explain and Fit
    tabs run their analyses this way, as :meth:`Session.diagnose` runs the probes: a fit's engine
    subprocess can take seconds, and quitting must not wait for it."""
    return in_background(fn, name)(cancelled, poll_s)


@dataclass
class Session:
    """A host to probe, or facts/a report to show; ``rules`` None means every rule."""

    host: Host | None = None
    options: ProbeOptions = field(default_factory=ProbeOptions)
    rules: list[Rule] | None = None
    facts: Facts | None = None
    report: Report | None = None  # shown at start without probing or diagnosing
    strict: bool = False  # --strict: warnings count as errors in the exit code
    redact: bool = True  # exports are redacted like --json/--markdown (off with --no-redact)

    def shareable(self, report: Report) -> Report:
        """The report as it may leave the machine: redacted unless the user said --no-redact."""
        if not self.redact:
            return report
        from bnbdoctor.redact import Redactor
        from bnbdoctor.report_io import redact_report

        redactor = Redactor.for_machine(self.host.os_info()) if self.host is not None else Redactor()
        return redact_report(report, redactor)

    def __post_init__(self) -> None:
        if self.host is None and self.facts is None and self.report is None:
            raise ValueError("a session needs a host to probe, or facts or a report to show")
        if self.facts is None and self.report is not None:
            self.facts = self.report.facts

    @property
    def probes(self) -> bool:
        """Whether a (re-)run probes a host; False: it re-applies the rules to recorded facts."""
        return self.host is not None

    @property
    def probe_names(self) -> list[str]:
        """The probes a run reports progress for, in report order."""
        return [probe.name for probe in PROBES] if self.probes else []

    @property
    def label(self) -> str:
        """What is examined: "this machine", "fixture kepler-k80", or a saved report's label."""
        if self.host is not None:
            return str(self.host.describe().get("label", "") or self.host.kind)
        source = self.report.source if self.report is not None else (self.facts.source if self.facts else {})
        label = str(source.get("label", "") or "")
        return f"{label} (recorded)" if label else "recorded facts"

    @property
    def needs_first_run(self) -> bool:
        """True unless a ready report was handed over (then the app shows it without running)."""
        return self.report is None

    def diagnose(
        self,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Report:
        """Probe (with a host) and run the rules; raises :class:`Cancelled` when ``cancelled()``
        turns true while the probes run. Does not change the session: the caller keeps the report."""
        if self.host is not None:
            return diagnose(self.host, self.options, self.rules, progress, cancelled)
        if self.facts is None:  # __post_init__ refuses such a session
            raise ValueError("a session without a host needs facts to diagnose")
        return diagnose_facts(self.facts, self.rules, time.perf_counter())

    def exit_code(self, report: Report | None) -> ExitCode:
        """The CLI's exit code for the last report shown (OK when there is none)."""
        return report.exit_code(self.strict) if report is not None else ExitCode.OK
