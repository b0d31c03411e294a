"""What the app leaves on the terminal when it quits: the verdict and the first fix command.

A full-screen app restores the terminal as it found it, so without this the answer is gone the
moment the user presses ``q`` (flutter doctor, by contrast, leaves its output behind). The lines
are plain text, printed by :func:`bnbdoctor.tui.run` after the app has exited: the summary line,
the top finding (as the Findings list orders them) and the first command that fixes it (its fix
in words when it has no command).
"""

from __future__ import annotations

from bnbdoctor.findings import Finding
from bnbdoctor.report import Report
from bnbdoctor.tui.widgets.findings import SEVERITY_STYLE, entries
from bnbdoctor.tui.widgets.summary import summary_text


def top_findings(report: Report) -> list[Finding]:
    """The findings in the Findings list's order (errors, warnings, info)."""
    return [e.finding for _, _, group in entries(report, include_checks=False) for e in group if e.finding]


def farewell_lines(report: Report | None, label: str, failed: str | None = None) -> list[str]:
    """The lines to print after the app: verdict, top finding, its first command."""
    if report is None:
        if failed:
            return [f"bnbdoctor ({label}) failed: {failed}"]
        return [f"bnbdoctor ({label}): quit before the report was ready."]
    lines = [f"bnbdoctor ({label}): {summary_text(report, show_timings=False).plain}"]
    findings = top_findings(report)
    if not findings:
        return lines
    top = findings[0]
    lines.append(f"{SEVERITY_STYLE[top.severity][0]} {top.rule_id}  {top.title}")
    if top.remediation.commands:
        lines.append(f"  $ {top.remediation.commands[0]}")
    elif top.remediation.text:  # a fix without a command (new hardware, a driver from the vendor)
        lines.append(f"  fix: {' '.join(top.remediation.text.split())}")
    if len(findings) > 1:
        lines.append(f"  … and {len(findings) - 1} more finding{'' if len(findings) == 2 else 's'} in the app.")
    return lines
