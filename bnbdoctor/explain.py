"""``bnbdoctor explain FILE``: the doctor's diagnosis, from a console log instead of the machine.

Users usually have a log, not the broken machine. This command reads one (a traceback, the output
of ``python -m bitsandbytes`` of any release, a notebook cell, a transformers or PEFT error),
extracts the facts it reveals into the same records the probes fill (``bnbdoctor.logs``), runs
the same rules, and ranks the findings root cause first (``bnbdoctor.logs.ranking``).

Contract (docs/explain.md):

- ``FILE`` is a path or ``-`` for stdin. Any bytes are accepted: binary data, an empty file, a
  huge log, ANSI colours, CRLF, Markdown fences. What is not a known failure is reported as
  "no known bitsandbytes failure found".
- Exit codes are the doctor's (:class:`bnbdoctor.report.ExitCode`): 0 when the log was read and
  shows no error finding (including "no known failure"), 1 when it shows an error finding (or a
  warning, with ``--strict``), 2 when the file cannot be read or the arguments are wrong (one line
  on stderr, never a traceback unless ``--debug``).
- stdout is data: ``--json`` prints one JSON document (the doctor's report layout; the matched
  log lines with their numbers are in ``facts.log.matches``).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Sequence
from typing import BinaryIO

from bnbdoctor import __version__
from bnbdoctor.contract import guarded, use_color, write_output
from bnbdoctor.facts import Facts
from bnbdoctor.render import OutputFormat
from bnbdoctor.report import ExitCode, Report, build_report


class ExplainError(Exception):
    """Bad input or arguments: one line on stderr, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bnbdoctor explain",
        description="Explain a console log of a bitsandbytes failure: the facts it shows, the findings the doctor "
        "would report on that machine, root cause first, and what to run there to confirm.",
        epilog="Exit status: 0 the log shows no error (or no known failure), 1 it shows an error finding "
        "(a warning too with --strict), 2 the file cannot be read or the arguments are wrong.",
    )
    parser.add_argument("file", metavar="FILE", help="the log to explain, or - to read standard input")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--text", dest="format", action="store_const", const=OutputFormat.TEXT, help="plain text (default)")
    fmt.add_argument("--json", dest="format", action="store_const", const=OutputFormat.JSON,
                     help="one JSON document: the doctor's report layout, with the matched log lines")
    fmt.add_argument("--markdown", dest="format", action="store_const", const=OutputFormat.MARKDOWN,
                     help="Markdown to paste into an issue")
    parser.add_argument("--rule", metavar="ID", action="append", default=[],
                        help="run only this rule (repeatable), e.g. --rule BNB306")
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    parser.add_argument("--no-redact", action="store_true",
                        help="keep the home folder and user name the log shows (redacted by default)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def _rules(ids: list[str]):  # -> list[Rule]
    from bnbdoctor.rules import all_rules, select_rules

    if not ids:
        return all_rules()
    try:
        return select_rules(ids)
    except KeyError as exc:
        raise ExplainError(exc.args[0]) from None


def explain_stream(stream: BinaryIO, label: str, rules=None) -> Report:  # rules: list[Rule] | None
    """Read a log from a binary stream and diagnose it: the whole pipeline, no I/O besides the stream."""
    from bnbdoctor.logs.extract import extract
    from bnbdoctor.logs.ranking import judge
    from bnbdoctor.rules import all_rules, run_rules

    started = time.perf_counter()
    facts, read_s = extract(stream, label)
    rules_started = time.perf_counter()
    diagnosis = judge(facts, run_rules(facts, list(rules) if rules is not None else all_rules()))
    report = build_report(facts, diagnosis, started)
    report.timings["read"] = round(read_s, 4)
    report.timings["rules"] = round(time.perf_counter() - rules_started, 4)
    return report


def explain_text(text: str, label: str = "log", rules=None) -> Report:
    """The same, for a log already in memory."""
    return explain_stream(io.BytesIO(text.encode("utf-8", "surrogatepass")), label, rules)


def explain_file(path: str, rules=None) -> Report:
    """The same, for a file (``-`` is standard input). Raises :class:`ExplainError` when unreadable."""
    if path == "-":
        return explain_stream(sys.stdin.buffer, "stdin", rules)
    if os.path.isdir(path):
        raise ExplainError(f"{path}: is a directory")
    try:
        with open(path, "rb") as handle:
            return explain_stream(handle, os.path.basename(path) or path, rules)
    except FileNotFoundError:
        raise ExplainError(f"{path}: no such file") from None
    except OSError as exc:  # permission denied, an I/O error while reading
        raise ExplainError(f"{path}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------------------- text
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
        machine.append(", ".join(f"{d.name} (cc {d.cc_text})" if d.name != "name not in the log" else
                                 f"a GPU with compute capability {d.cc_text}" for d in gpu.devices)
                       + (f"; driver {gpu.driver_version}" if gpu.driver_version else "")
                       + (f" (CUDA {gpu.driver_cuda_version})" if gpu.driver_cuda_version else ""))
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
            parts.append(f"bitsandbytes {bnb.version or '(version not shown)'}{era}"
                         + (f" at {bnb.location}" if bnb.location else ""))
        elif bnb.error and "No module" in bnb.error:
            parts.append("bitsandbytes not installed")
        for name, version in python.packages.items():
            parts.append(f"{name} {version}")
        if parts:
            rows.append(("Python", ", ".join(parts)))
    if facts.native and facts.native.selection:
        sel = facts.native.selection
        rows.append(("Library", sel.expected_file + ("" if sel.exists else " (missing)")
                     + (f", BNB_CUDA_VERSION={sel.override}" if sel.override else "")))
    if facts.log and facts.log.exception:
        rows.append(("Raised", facts.log.exception))
    return rows


def render_explain_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """The explain report as text: what the log shows, then the findings, root cause first."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from bnbdoctor.rules.base import Severity

    style = {Severity.ERROR: ("✖", "bold red"), Severity.WARNING: ("▲", "bold yellow"), Severity.INFO: ("ℹ", "bold cyan")}

    def grid() -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True, min_width=6)
        table.add_column(overflow="fold")
        return table

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width or (None if color else 100),
                      highlight=False, emoji=False)
    facts = report.facts
    lines = facts.log.lines if facts.log else 0
    label = report.source.get("label", "log")
    console.print(Text(f"bnbdoctor {report.tool_version} explain — {label} ({lines} line{'s' if lines != 1 else ''})",
                       style="bold"))
    header = grid()
    for name, value in seen_lines(facts):
        header.add_row(name, Text(value))
    console.print(header)
    console.print()
    failures = [f for f in report.findings if f.severity is not Severity.INFO]
    if not failures:
        console.print(Text("✔ No known bitsandbytes failure found in this log.", style="bold green"))
        console.print()
    for finding in report.findings:
        icon, tone = style[finding.severity]
        head = Text()
        head.append(f"{finding.rank or ''}. ", style="bold")
        head.append(f"{icon} {finding.severity.value:<7} ", style=tone)
        head.append(f"{finding.rule_id}  ", style="bold")
        head.append(finding.title, style="bold")
        console.print(head)
        body = grid()
        where = f" (log line{'s' if len(finding.log_lines) != 1 else ''} {', '.join(map(str, finding.log_lines))})" \
            if finding.log_lines else ""
        sure = {"high": "high: the log shows the message this finding explains",
                "medium": "medium: inferred from facts or generic messages in the log",
                "low": "low: the log shows little about it"}.get(finding.confidence or "", "")
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
        if finding.confirm:
            console.print(Text("  check on the machine:", style="dim"))
            for command in finding.confirm[:4]:
                console.print(Text("       $ ", style="dim") + Text(command), soft_wrap=True)
        docs = grid()
        docs.add_row("  docs", Text(finding.doc, style="dim"))
        console.print(docs)
        console.print()
    matched = len(facts.log.matches) if facts.log else 0
    errors, warnings, info = report.summary.errors, report.summary.warnings, report.summary.info
    console.print(Text(
        f"Summary: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}, "
        f"{info} info; {matched} log line{'s' if matched != 1 else ''} recognised; {len(report.passed)} rules found "
        f"nothing, {report.summary.skipped} had too little in the log to judge.", style="bold"))
    if report.findings:
        console.print(Text("Facts from a log are partial: run the commands under 'check on the machine' there.",
                           style="dim"))
    text = buffer.getvalue()
    if not color:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def render(report: Report, fmt: OutputFormat, color: bool) -> str:
    if fmt is OutputFormat.JSON:
        from bnbdoctor.render.json import render_json

        return render_json(report)
    if fmt is OutputFormat.MARKDOWN:
        try:
            from bnbdoctor.render.markdown import render_markdown
        except ImportError:
            print("bnbdoctor: Markdown output is not available in this build; writing text instead", file=sys.stderr)
        else:
            return render_markdown(report)
    return render_explain_text(report, color=color)


def _write(text: str, output: str | None) -> None:
    write_output(text, output, ExplainError)


def run(args: argparse.Namespace) -> ExitCode:
    rules = _rules(args.rule)
    report = explain_file(args.file, rules)
    if getattr(args, "no_redact", False):
        print("bnbdoctor: redaction is off (--no-redact): the output may contain names from the log", file=sys.stderr)
    else:
        import json

        from bnbdoctor.redact import Redactor
        from bnbdoctor.report_io import redact_report
        from bnbdoctor.serde import to_jsonable

        report = redact_report(report, Redactor.for_text(json.dumps(to_jsonable(report.facts))))
    fmt = args.format or OutputFormat.TEXT
    color = use_color(fmt is OutputFormat.TEXT, args.output)
    _write(render(report, fmt, color), args.output)
    return report.exit_code(args.strict)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``bnbdoctor explain`` (see :data:`bnbdoctor.cli.SUBCOMMANDS`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else int(ExitCode.FAILURE)
    return guarded(lambda: run(args), (ExplainError,), args.debug)


if __name__ == "__main__":
    sys.exit(main())
