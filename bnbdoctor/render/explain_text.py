"""``bnbdoctor explain --text``: what the log shows about the machine, then the findings, root cause first.

:func:`seen_lines` is the header ("Machine", "Python", "Library", "Raised" rows); ``rich`` is imported
only when text is rendered.
"""

from __future__ import annotations

from bnbdoctor.environment import override_named
from bnbdoctor.facts import Facts
from bnbdoctor.report import Report


def seen_lines(facts: Facts) -> list[tuple[str, str]]:
    """(label, value) rows: what the log revealed about the machine."""
    rows: list[tuple[str, str]] = []
    platform, gpu, python = facts.platform, facts.gpu, facts.python
    machine = []
    if platform:
        name = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}.get(platform.os, platform.os)
        if platform.wsl:
            name += " (WSL2)"
        if platform.jetson_release:
            name += " (Jetson)"
        if platform.arch != "unknown":
            name += f" {platform.arch}"
        if platform.libc_version:
            name += f", glibc {platform.libc_version}"
        machine.append(name)
    if gpu and gpu.devices:
        machine.append(
            ", ".join(
                f"{d.name} (cc {d.cc_text})"
                if d.name != "name not in the log"
                else f"a GPU with compute capability {d.cc_text}"
                for d in gpu.devices
            )
            + (f"; driver {gpu.driver_version}" if gpu.driver_version else "")
            + (f" (CUDA {gpu.driver_cuda_version})" if gpu.driver_cuda_version else "")
        )
    elif gpu and not gpu.nvml_available:
        machine.append("no NVIDIA driver")
    if machine:
        rows.append(("Machine", "; ".join(machine)))
    if python:
        parts = []
        if python.version:
            parts.append(f"Python {python.version}")
        torch, bnb = python.torch, python.bitsandbytes
        if torch.installed:
            build = f"CUDA {torch.cuda}" if torch.cuda else f"ROCm {torch.hip}" if torch.hip else "CPU"
            parts.append(f"torch {torch.version or '(version not shown)'} ({build} build)")
        elif torch.error and "No module" in torch.error:
            parts.append("torch not installed")
        if bnb.installed:
            era = " (legacy CUDA setup, 0.43.0 or older)" if bnb.legacy_cuda_setup and not bnb.version else ""
            parts.append(
                f"bitsandbytes {bnb.version or '(version not shown)'}{era}"
                + (f" at {bnb.location}" if bnb.location else "")
            )
        elif bnb.error and "No module" in bnb.error:
            parts.append("bitsandbytes not installed")
        for name, version in python.packages.items():
            parts.append(f"{name} {version}")
        if parts:
            rows.append(("Python", ", ".join(parts)))
    if facts.native and facts.native.selection:
        sel = facts.native.selection
        rows.append(
            (
                "Library",
                sel.expected_file
                + ("" if sel.exists else " (missing)")
                + (f", {override_named(facts.env)}={sel.override}" if sel.override else ""),
            )
        )
    if facts.log and facts.log.exception:
        rows.append(("Raised", facts.log.exception))
    return rows


def render_explain_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """The explain report as text: what the log shows, then the findings, root cause first."""
    from rich.text import Text

    from bnbdoctor.findings import Severity
    from bnbdoctor.render.text import catalog_text, finished_text, label_grid, report_console

    style = {
        Severity.ERROR: ("✖", "bold red"),
        Severity.WARNING: ("▲", "bold yellow"),
        Severity.INFO: ("ℹ", "bold cyan"),
    }

    console, buffer = report_console(color, width)
    facts = report.facts
    lines = facts.log.lines if facts.log else 0
    label = report.source.get("label", "log")
    console.print(
        Text(
            f"bnbdoctor {report.tool_version} explain — {label} ({lines} line{'s' if lines != 1 else ''})", style="bold"
        )
    )
    header = label_grid()
    for name, value in seen_lines(facts):
        header.add_row(name, Text(value))
    console.print(header)
    console.print()
    failures = [f for f in report.findings if f.severity is not Severity.INFO]
    if report.source.get("empty") == "true":  # nothing but whitespace
        console.print(Text("Nothing to explain: the log is empty.", style="bold"))
        console.print()
    elif not failures:  # an error no family names is a warning finding (BNB549), so this log shows no error
        console.print(Text("✔ No error in this log: no known bitsandbytes failure found.", style="bold green"))
        console.print()
    for finding in report.findings:
        icon, tone = style[finding.severity]
        head = Text()
        head.append(f"{finding.rank or ''}. ", style="bold")
        head.append(f"{icon} {finding.severity.value:<7} ", style=tone)
        head.append(f"{finding.rule_id}  ", style="bold")
        head.append(finding.title, style="bold")
        console.print(head)
        body = label_grid()
        where = (
            f" (log line{'s' if len(finding.log_lines) != 1 else ''} {', '.join(map(str, finding.log_lines))})"
            if finding.log_lines
            else ""
        )
        sure = {
            "high": "high: the log shows the message this finding explains",
            "medium": "medium: inferred from facts or generic messages in the log",
            "low": "low: the log shows little about it",
        }.get(finding.confidence or "", "")
        if sure:
            body.add_row("  sure", Text(sure + where))
        body.add_row("  why", Text(finding.explanation))
        for i, item in enumerate(finding.evidence):
            body.add_row("  seen" if i == 0 else "", Text(f"{item.label}: ", style="dim") + Text(item.value))
        if finding.remediation.text:
            body.add_row("  fix", Text(finding.remediation.text, style="green"))
        console.print(body)
        for command in finding.remediation.commands:
            console.print(Text("       $ ", style="dim") + Text(command, style="bold green"), soft_wrap=True)
        if finding.remediation.proof is not None:
            note = "       not re-diagnosed: from a log; run bnbdoctor on the machine after these"
            console.print(Text(note, style="dim"))
        if finding.confirm:
            console.print(Text("  check on the machine:", style="dim"))
            for command in finding.confirm[:4]:
                console.print(Text("       $ ", style="dim") + Text(command), soft_wrap=True)
        docs = label_grid()
        if finding.covers:
            docs.add_row("  catalog", catalog_text(finding.covers))
        docs.add_row("  docs", Text(finding.doc, style="dim"))
        console.print(docs)
        console.print()
    # An exception line no family names is listed in the matches (signature "unrecognised_error"), not recognised;
    # render sits below knowledge/ (the layers contract), so it compares the public id a report carries.
    matched = len([m for m in facts.log.matches if m.signature != "unrecognised_error"]) if facts.log else 0
    errors, warnings, info = report.summary.errors, report.summary.warnings, report.summary.info
    console.print(
        Text(
            f"Summary: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}, "
            f"{info} info; {matched} log line{'s' if matched != 1 else ''} recognised; "
            f"{len(report.passed)} rules found nothing, {report.summary.skipped} had too little in the log to judge.",
            style="bold",
        )
    )
    if report.findings:
        console.print(
            Text("Facts from a log are partial: run the commands under 'check on the machine' there.", style="dim")
        )
    return finished_text(buffer.getvalue(), color)


class ExplainTextRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``bnbdoctor explain --text``."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return render_explain_text(report, color=color)
