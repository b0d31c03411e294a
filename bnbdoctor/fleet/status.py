"""A fleet report as an exit code: bnbdoctor's own 0/1/2, or a Nagios plugin's 0/1/2/3 (``--nagios``).

bnbdoctor: 0 no node has an error finding; 1 some node has one (or a warning, with ``--strict``),
or a report could not be read; 2 no report could be read at all (or a usage error).
Nagios (NHC, node-problem-detector custom plugins): 0 OK, 1 WARNING (warnings, or unreadable
reports), 2 CRITICAL (an error finding), 3 UNKNOWN (no report could be read).
"""

from __future__ import annotations

from enum import IntEnum

from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.report import ExitCode


class NagiosState(IntEnum):
    """The plugin exit codes of the Nagios plugin guidelines."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


def _has(report: FleetReport, status: str) -> bool:
    return any(group.status == status for group in report.groups)


def exit_code(report: FleetReport, strict: bool = False) -> ExitCode:
    if not report.nodes:
        return ExitCode.FAILURE
    if _has(report, "error") or report.unreadable or (strict and _has(report, "warning")):
        return ExitCode.FINDINGS
    return ExitCode.OK


def nagios_state(report: FleetReport) -> NagiosState:
    if not report.nodes:
        return NagiosState.UNKNOWN
    if _has(report, "error"):
        return NagiosState.CRITICAL
    if _has(report, "warning") or report.unreadable:
        return NagiosState.WARNING
    return NagiosState.OK


def nagios_line(report: FleetReport) -> str:
    """The plugin's one status line, with performance data after ``|``."""
    state = nagios_state(report)
    bad = {s: sum(g.count for g in report.groups if g.status == s) for s in ("error", "warning")}
    text = (
        f"BNBDOCTOR {state.name} - {report.nodes} nodes in {len(report.groups)} groups, "
        f"{bad['error']} with errors, {bad['warning']} with warnings, {len(report.unreadable)} unreadable"
    )
    perf = (
        f"nodes={report.nodes} groups={len(report.groups)} error_nodes={bad['error']} "
        f"warning_nodes={bad['warning']} unreadable={len(report.unreadable)}"
    )
    return f"{text} | {perf}\n"
