"""Messages the workers post (dataclasses, thread-safe to post): the diagnosis worker to the app,
the Explain and Fit workers to their tab, the fleet app's reading worker to the fleet app.

``generation`` numbers each run, so that news from a run the app has moved on from is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from bnbdoctor.facts import ProbeRun
from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.report import Report


@dataclass
class ProbeFinished(Message):
    """One probe finished (or failed, or was skipped)."""

    run: ProbeRun
    generation: int


@dataclass
class ReportReady(Message):
    """A run ended with a report."""

    report: Report
    generation: int


@dataclass
class DiagnosisFailed(Message):
    """A run ended with bnbdoctor itself failing (a bug: probes and rules turn errors into facts)."""

    error: str
    generation: int


@dataclass
class ToolProgress(Message):
    """The Explain or Fit tab's worker says what it is doing (``bnbdoctor.fit.run_fit``'s progress)."""

    text: str
    generation: int


@dataclass
class ToolReady(Message):
    """The Explain or Fit tab's worker ended with a report."""

    report: Report
    generation: int


@dataclass
class ToolFailed(Message):
    """The Explain or Fit tab's worker ended without a report: ``error`` is one line;
    ``bad_input`` tells bad input (a missing file, a malformed memory string) from a failure."""

    error: str
    generation: int
    bad_input: bool = False


@dataclass
class FleetProgress(Message):
    """The fleet app's worker has read ``count`` reports so far."""

    count: int


@dataclass
class FleetReady(Message):
    """The fleet app's worker has read every report and grouped the nodes."""

    report: FleetReport


@dataclass
class FleetFailed(Message):
    """The fleet app's worker failed (a bug: unreadable reports are part of the report); one line."""

    error: str
