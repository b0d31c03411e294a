"""The doctor's report as text: what was examined, findings first (errors, warnings, info), then what was verified.

:func:`machine_lines` and :func:`print_finding` are shared: the app's header uses the former, the
fit report prints its findings with the latter.
"""

from __future__ import annotations

import io

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from bnbdoctor.catalog import entry_url
from bnbdoctor.facts import GpuDevice
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.render.proof import proof_label, proof_sentence
from bnbdoctor.report import Report

_STYLE = {Severity.ERROR: ("✖", "bold red"), Severity.WARNING: ("▲", "bold yellow"), Severity.INFO: ("ℹ", "bold cyan")}


def package_text(name: str, installed: bool, version: str | None, error: str | None = None) -> str:
    """ "torch 2.5.1", "torch not installed", or "torch (not shown in the log)" for partial facts."""
    if not installed:
        return f"{name} ({error})" if error else f"{name} not installed"
    return f"{name} {version}" if version else f"{name} (version unknown)"


#: The multiplication sign of "8\u00d7 NVIDIA A100-SXM4-80GB" (an ASCII "x" where the output encoding lacks it).
TIMES = "\u00d7"


def count_text(count: int, name: str) -> str:
    """A GPU name, with how many there are when more than one ("8\u00d7 NVIDIA A100-SXM4-80GB")."""
    return f"{count}{TIMES} {name}" if count > 1 else name


def _same_gpus(devices: list[GpuDevice]) -> list[tuple[tuple[str, bool], list[GpuDevice]]]:
    """The devices grouped by (name, capability, visible), in the order they first appear."""
    groups: dict[tuple[str, str, bool], list[GpuDevice]] = {}
    for device in devices:
        groups.setdefault((device.name, device.cc_text, device.visible), []).append(device)
    return [((cc, visible), group) for (_, cc, visible), group in groups.items()]


def machine_lines(report: Report) -> list[tuple[str, str]]:
    """(label, value) rows saying what was examined."""
    facts = report.facts
    rows = []
    where = report.source.get("label", "")
    if facts.platform:
        p = facts.platform
        system = p.distro_name or {"windows": "Windows", "macos": "macOS"}.get(p.os, p.os)
        version = f" {p.os_version}" if p.os_version and p.os != "linux" else ""
        build = p.os_version.split(".")[-1] if p.os == "windows" and p.os_version else ""
        if build.isdigit():  # Windows 11 still reports itself as 10.0 with builds from 22000 on
            version = f" {'11' if int(build) >= 22000 else '10'} (build {build})"
        glibc = f", glibc {p.libc_version}" if p.libc_version else ""
        wsl = f", WSL{p.wsl}" if p.wsl else ""
        rows.append(("Machine", f"{where}: {system}{version} {p.arch}{glibc}{wsl}"))
    else:
        rows.append(("Machine", where))
    if facts.gpu:
        g = facts.gpu
        if g.nvml_available and g.devices:
            gpus = ", ".join(
                f"{count_text(len(group), group[0].name)} (cc {cc}{'' if visible else ', hidden'})"
                for (cc, visible), group in _same_gpus(g.devices)
            )
            rows.append(("GPU", f"{gpus}; driver {g.driver_version} (CUDA {g.driver_cuda_version})"))
        elif facts.platform and facts.platform.os == "macos":
            rows.append(("GPU", "no NVIDIA GPU (macOS)"))
        elif facts.platform and facts.platform.jetson_release:
            rows.append(("GPU", "Jetson integrated GPU (not visible to NVML)"))
        else:
            rows.append(("GPU", f"none visible ({g.nvml_error or 'no devices'})"))
    if facts.python:
        py = facts.python
        torch, bnb = py.torch, py.bitsandbytes
        torch_text = package_text("torch", torch.installed, torch.version, torch.error)
        if torch.installed and torch.version:
            torch_text += f" ({torch.build} build)"
        bnb_text = package_text("bitsandbytes", bnb.installed, bnb.version, bnb.error)
        rows.append(("Python", f"{py.executable} {py.version} ({chosen_by(py.selected_by)})"))
        rows.append(("Packages", f"{torch_text}, {bnb_text}"))
    return rows


def label_grid(min_width: int = 6) -> Table:
    """Rows of a dim label and a value that folds: the layout of every labelled block of text reports."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, min_width=min_width)
    grid.add_column(overflow="fold")
    return grid


def print_finding(console: Console, finding: Finding) -> None:
    """A finding; commands are printed unwrapped so they can be copied whole."""
    console.print(_finding(finding))
    for command in finding.remediation.commands:
        console.print(Text("       $ ", style="dim") + Text(command, style="bold green"), soft_wrap=True)
    proof = finding.remediation.proof
    if proof is not None:
        checked = label_grid()
        style = "dim" if proof.verified is None else "green" if proof.verified else "yellow"
        checked.add_row(f"  {proof_label(proof)}", Text(proof_sentence(proof), style=style))
        console.print(checked)
    docs = label_grid()
    if finding.covers:
        docs.add_row("  catalog", catalog_text(finding.covers))
    docs.add_row("  docs", Text(finding.doc, style="dim"))
    console.print(docs)
    if finding.follows:
        console.print(Text("  also seen, follows from this:", style="dim"))
        muted = label_grid()
        for follow in finding.follows:
            muted.add_row(Text(f"    {follow.rule_id}", style="dim"), Text(follow.title, style="dim"))
        console.print(muted)
    console.print()


def report_console(color: bool, width: int | None) -> tuple[Console, io.StringIO]:
    """The rich console every text report is printed on, and the buffer it writes to: colour only
    when asked, ``width`` None meaning the terminal's (100 when not a terminal)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=width or (None if color else 100),
        highlight=False,
        emoji=False,
    )
    return console, buffer


def finished_text(text: str, color: bool) -> str:
    """What a rich console wrote, as the report: rich pads grid cells with spaces, which plain
    text (a file, a pipe, an issue) should not carry; coloured output is left as it is."""
    return text if color else "\n".join(line.rstrip() for line in text.split("\n"))


def catalog_text(covers: list[str]) -> Text:
    """The catalog ids a finding diagnoses, each a terminal hyperlink to its entry (plain text without colour)."""
    text = Text(style="dim")
    for i, entry_id in enumerate(covers):
        if i:
            text.append(", ")
        text.append(entry_id, style=f"link {entry_url(entry_id)}")
    return text


def _finding(finding: Finding) -> Group:
    icon, style = _STYLE[finding.severity]
    head = Text()
    head.append(f"{icon} {finding.severity.value:<7} ", style=style)
    head.append(f"{finding.rule_id}  ", style="bold")
    head.append(finding.title, style="bold")
    body = label_grid()
    body.add_row("  why", finding.explanation)
    for i, item in enumerate(finding.evidence):
        body.add_row("  seen" if i == 0 else "", Text(f"{item.label}: ", style="dim") + Text(item.value))
    if finding.remediation.text:
        body.add_row("  fix", Text(finding.remediation.text, style="green"))
    return Group(head, body)


def render_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """The report as text; ``width`` None means the terminal's width (100 when not a terminal)."""
    console, buffer = report_console(color, width)
    console.print(Text(f"bnbdoctor {report.tool_version}", style="bold"))
    header = label_grid()
    for label, value in machine_lines(report):
        header.add_row(label, value)
    console.print(header)
    console.print()
    for finding in report.findings:
        print_finding(console, finding)
    if not report.findings:
        console.print(Text("✔ No problems found.", style="bold green"))
        console.print()
    if report.passed:
        console.print(Text(f"Verified ({len(report.passed)}):", style="bold"))
        checks = label_grid()
        for check in report.passed:
            checks.add_row(Text("  ✔ ", style="green") + Text(check.rule_id), check.summary)
        console.print(checks)
    if report.skipped:
        console.print(Text(f"Not checked ({len(report.skipped)}):", style="bold"))
        checks = label_grid()
        for check in report.skipped:
            checks.add_row(f"  · {check.rule_id}", Text(f"{check.summary}: {check.reason}", style="dim"))
        console.print(checks)
    failed = [run for run in report.facts.probes if not run.ok]
    if failed:
        console.print(Text("Probes that failed:", style="bold yellow"))
        for run in failed:
            console.print(Text(f"  ! {run.name}: {run.error}", style="yellow"))
    console.print()
    console.print(Text(f"Summary: {report.summary.line()}", style="bold"))
    return finished_text(buffer.getvalue(), color)


class TextRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for the doctor's ``--text``."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return render_text(report, color=color)


#: How each way of choosing the examined interpreter reads to its user (``PythonFacts.selected_by``).
_CHOSEN_BY = {
    "--python": "named with --python",
    "VIRTUAL_ENV": "the active virtualenv, VIRTUAL_ENV",
    "CONDA_PREFIX": "the active conda env, CONDA_PREFIX",
    "PATH": "python3 on PATH: bnbdoctor runs from its own tool environment",
    "current": "the interpreter running bnbdoctor",
    "log": "the one the log shows",
}


def chosen_by(selected_by: str | None) -> str:
    """Why this interpreter was examined, in words a user knows."""
    return _CHOSEN_BY.get(selected_by or "", f"chosen by {selected_by}")
