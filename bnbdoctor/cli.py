"""The command-line contract, owned by this one module.

- stdout is data: ``--json`` prints one JSON document and nothing else; logs go to stderr.
- Exit codes are :class:`bnbdoctor.report.ExitCode`: 0 no error findings, 1 error findings (or
  warnings with ``--strict``), 2 usage error or bnbdoctor itself failed.
- Bad input (unknown rule, missing fixture, a ``--python`` path that does not exist) is one line on
  stderr, exit 2, never a traceback (``--debug`` shows it).
- Commands: with none, the doctor examines this machine; ``explain``, ``fit``, ``help [COMMAND]`` and
  ``completion SHELL`` are listed in ``--help`` (:data:`COMMANDS`). A misspelt command or option is
  answered with the closest one (:class:`bnbdoctor.argparsing.Parser`).
- ``--python`` takes an interpreter, a venv or conda folder, or a command on PATH
  (:func:`bnbdoctor.probes.python_env.resolve_python`).
- An interpreter that exists but cannot be examined (it crashes, hangs, prints something else) is
  a finding, not bad input: the report says so (BNB001) and the exit code is 1, whether it was
  named by ``--python`` or chosen from ``VIRTUAL_ENV`` / ``CONDA_PREFIX``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser, closest
from bnbdoctor.contract import (
    ended_by_signals,
    guarded,
    interrupted,
    missing_terminal,
    note,
    require_terminal,
    write_output,
)
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit
from bnbdoctor.report import ExitCode, Report
from bnbdoctor.report_io import add_redaction_arguments, redacted_for_output

if TYPE_CHECKING:
    from bnbdoctor.hosts.base import Host
    from bnbdoctor.redact import Redactor
    from bnbdoctor.rules import Rule


class UsageError(Exception):
    """A problem with what the user asked for; printed as one line, exit 2."""


@dataclass(frozen=True)
class Command:
    """A subcommand: where its entry point is, what it takes, and its line in ``bnbdoctor --help``."""

    entry: str  # "module:function" taking argv, returning an exit code
    arguments: str
    summary: str


#: The subcommands, each owning its own arguments, in ``--help`` order.
COMMANDS: dict[str, Command] = {
    "explain": Command(
        "bnbdoctor.explain:main", "FILE", "explain a console log of a bitsandbytes failure (- reads standard input)"
    ),
    "fit": Command(
        "bnbdoctor.fit.cli:main", "MODEL", "predict whether from_pretrained places a bnb-quantized model on the GPUs"
    ),
    "fleet": Command("bnbdoctor.fleet.cli:main", "REPORTS...", "group many machines' --json reports by what differs"),
    "lint": Command("bnbdoctor.lint.cli:main", "PATH...", "check Python files and notebooks for bitsandbytes mistakes"),
    "merge-check": Command(
        "bnbdoctor.merge_check.cli:main", "ADAPTER", "measure how much of a LoRA adapter survives a merge into 4-bit"
    ),
    "rule": Command("bnbdoctor.rule_page:main", "ID", "print a rule's page: what it detects, why, how to fix"),
    "mcp": Command("bnbdoctor.mcp_server:main", "", "serve diagnose/explain/fit/rule to coding agents (MCP, stdio)"),
    "help": Command("bnbdoctor.cli:help_main", "[COMMAND]", "show this help, or the help of one command"),
    "completion": Command(
        "bnbdoctor.completion:main", "[SHELL]", "print tab completion for bash, zsh, fish, tcsh or powershell"
    ),
}


def commands_help() -> str:
    """The ``commands:`` block of ``bnbdoctor --help``: one line each."""
    rows = [(f"{name} {command.arguments}", command.summary) for name, command in COMMANDS.items()]
    width = max(len(left) for left, _ in rows)
    lines = [f"  {left:<{width}}  {summary}" for left, summary in rows]
    return "\n".join(
        [
            "commands (without one, bnbdoctor examines this machine):",
            *lines,
            "",
            "Run `bnbdoctor help COMMAND` (or `bnbdoctor COMMAND --help`) for the options of a command.",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor",
        usage="%(prog)s [COMMAND] [OPTIONS]",
        description="Find out why bitsandbytes does not work on this machine, and what to do about it.",
        epilog=commands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        commands=list(COMMANDS),
    )
    add_output_arguments(parser, ReportKind.DOCTOR)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--fixture", metavar="NAME_OR_PATH", help="diagnose a recorded machine from platform_fixtures/")
    source.add_argument(
        "--from",
        dest="from_report",
        metavar="REPORT",
        help="re-diagnose a machine's saved report (bnbdoctor --json or --markdown; a file, or - for stdin) with "
        "today's rules; explain, fit and lint reports are refused",
    )
    add_redaction_arguments(parser)
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter whose torch/bitsandbytes to examine: its path, a venv or conda folder, or a command "
        "on PATH (python3.11)",
    )
    parser.add_argument(
        "--rule", metavar="ID", action="append", default=[], help="run only this rule (repeatable), e.g. --rule BNB101"
    )
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    parser.add_argument("--no-load", action="store_true", help="skip the real dlopen check in a subprocess")
    parser.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    parser.add_argument("--list-fixtures", action="store_true", help="list the recorded machines and exit")
    parser.add_argument("--debug", action="store_true", help="log probe details and show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def _list_rules() -> str:
    from bnbdoctor.rules import all_rules

    rows = [f"{r.id}  {r.severity.value:<7}  {r.name:<42} {r.summary}" for r in all_rules()]
    return "\n".join(rows) + "\n"


def _list_fixtures() -> str:
    from bnbdoctor.hosts.fixture import fixtures_dir, list_fixtures

    fixtures = list_fixtures()
    if not fixtures:
        return f"no recorded machines in {fixtures_dir()}\n"
    width = max(len(name) for name, _ in fixtures)
    return "\n".join(f"{name:<{width}}  {description}" for name, description in fixtures) + "\n"


def _choose_format(args: argparse.Namespace) -> OutputFormat:
    chosen: OutputFormat | None = args.format
    if chosen is not None:
        return chosen
    # the app on a terminal (keys on stdin, drawn on stderr), the text report where stdout is not one
    return OutputFormat.TUI if sys.stdout.isatty() and not missing_terminal() else OutputFormat.TEXT


def _host(args: argparse.Namespace) -> Host:
    if args.fixture:
        from bnbdoctor.hosts.fixture import FixtureError, FixtureHost

        try:
            return FixtureHost.named(args.fixture)
        except FixtureError as exc:
            raise UsageError(str(exc)) from None
    from bnbdoctor.hosts.live import LiveHost

    host = LiveHost()
    if args.python:
        from bnbdoctor.probes.python_env import require_python

        args.python = require_python(host, args.python, UsageError)
    return host


def _rules(ids: list[str]) -> list[Rule] | None:
    if not ids:
        return None
    from bnbdoctor.rules import select_rules

    try:
        return select_rules(ids)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def _write(text: str, output: str | None) -> None:
    write_output(text, output, UsageError)


def run(args: argparse.Namespace) -> ExitCode:
    if args.list_rules:
        _write(_list_rules(), args.output)
        return ExitCode.OK
    if args.list_fixtures:
        _write(_list_fixtures(), args.output)
        return ExitCode.OK
    rules = _rules(args.rule)
    fmt = _choose_format(args)
    if fmt is OutputFormat.TUI and args.output:
        fmt = OutputFormat.TEXT  # -o FILE asks for a report in a file; the app is for the terminal
    if fmt is OutputFormat.TUI:  # only --tui itself: without it, off a terminal the format is text
        require_terminal(UsageError, "run without --tui for the plain report, or with --json for a document")
    if args.from_report:
        report, redactor = _replay(args.from_report, rules)
        if fmt is OutputFormat.TUI:
            from bnbdoctor.tui import run as run_tui

            return ExitCode(run_tui(None, None, rules, report=report, strict=args.strict, redact=not args.no_redact))
    else:
        host = _host(args)
        from bnbdoctor.doctor import diagnose
        from bnbdoctor.probes import ProbeOptions

        options = ProbeOptions(python=args.python, load=not args.no_load)
        if fmt is OutputFormat.TUI:
            from bnbdoctor.tui import run as run_tui

            return ExitCode(run_tui(host, options, rules, strict=args.strict, redact=not args.no_redact))
        from bnbdoctor.progress import probe_waits, status

        heading = "bnbdoctor: examining this machine"
        with status(heading) as update:  # on a terminal's stderr only
            report = diagnose(host, options, rules, probe_waits(update, heading, _probe_names()))
        from bnbdoctor.redact import Redactor

        redactor = Redactor.for_machine(host.os_info())
    report = _redact(report, redactor, args)
    emit(report, fmt, ReportKind.DOCTOR, args.output, error=UsageError)
    return report.exit_code(args.strict)


def _probe_names() -> list[str]:
    from bnbdoctor.probes import PROBES

    return [probe.name for probe in PROBES]


def _replay(source: str, rules: list[Rule] | None) -> tuple[Report, Redactor]:
    """Today's rules on the facts of a saved report."""
    from bnbdoctor.doctor import diagnose_facts
    from bnbdoctor.report_io import ReportError, load_facts

    try:
        facts, header = load_facts(source)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    report = diagnose_facts(facts, rules)
    report.source = {**{k: str(v) for k, v in facts.source.items()}, "label": f"report {source}"}
    report.replayed_from = str(header.get("created") or "")
    # The machine's identity was redacted where the report was made, unless it was made with
    # --no-redact: the names its paths show and this machine's are redacted here (a report is
    # most often replayed where it was made), and every secret-shaped value.
    from bnbdoctor.report_io import redactor_here

    return report, redactor_here(facts)


def _redact(report: Report, redactor: Redactor, args: argparse.Namespace) -> Report:
    from bnbdoctor.report_io import redact_report

    return redacted_for_output(report, redactor, redact_report, args)


def help_main(argv: list[str]) -> int:
    """``bnbdoctor help [COMMAND]``: the help of bnbdoctor, or of one command."""
    if not argv or argv[0] in ("help", "-h", "--help"):
        build_parser().print_help()
        return int(ExitCode.OK)
    name = argv[0]
    if name not in COMMANDS:
        return _unknown_command(name)
    return _subcommand(name, ["--help"])


def _unknown_command(word: str) -> int:
    hint = closest(word, COMMANDS)
    where = f"did you mean `bnbdoctor {hint}`? " if hint else ""
    note(f"error: unknown command '{word}' ({where}commands: {', '.join(COMMANDS)}; see bnbdoctor --help)")
    return int(ExitCode.FAILURE)


def _subcommand(name: str, argv: list[str]) -> int:
    import importlib

    module, _, function = COMMANDS[name].entry.partition(":")
    entry = getattr(importlib.import_module(module), function)
    return int(entry(argv))


def _kill_started() -> None:
    """Kill the commands bnbdoctor started that still run (none when it has run none)."""
    command = sys.modules.get("bnbdoctor.hosts.command")
    if command is not None:
        command.kill_started()


def entry() -> NoReturn:
    """The console script and ``python -m bnbdoctor``: :func:`main`, ended with its status. After Ctrl-C the
    process leaves at once once what it started is killed and its output flushed: interpreter shutdown (daemon
    probe threads, SIGINT's default action put back) could otherwise end it by the signal instead of exit 2."""
    code = main()
    if interrupted():
        _kill_started()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "mcp":  # the server owns its lifetime and its subprocesses
        return _subcommand(argv[0], argv[1:])
    with ended_by_signals(_kill_started):
        return _main(argv)


def _main(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        return _subcommand(argv[0], argv[1:])
    if argv and not argv[0].startswith("-"):  # the doctor takes no positional argument: a misspelt command
        return _unknown_command(argv[0])
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error, already one line on stderr
        return int(exc.code or 0) if isinstance(exc.code, int) else int(ExitCode.FAILURE)
    return guarded(lambda: run(args), (UsageError,), args.debug)
