"""Messages the diagnosis worker posts to the app (dataclasses, thread-safe to post).

``generation`` numbers each run, so that news from a run the app has moved on from is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from bnbdoctor.facts import ProbeRun
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
