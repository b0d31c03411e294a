"""``bnbdoctor fleet PATH...``: the command, under the shared command-line contract (bnbdoctor.contract).

Exit codes: :mod:`.status` (bnbdoctor's 0/1/2, or with ``--nagios`` a plugin's 0/1/2/3 and its one
status line on stdout). ``--tui`` shows the same report in the app (:func:`bnbdoctor.tui.run_fleet`,
imported only then), with the same exit code; without Textual it is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bnbdoctor.argparsing import Parser
from bnbdoctor.contract import guarded, note, require_terminal
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit


class UsageError(Exception):
    """A path that names nothing, or a file that cannot be written: one line, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor fleet",
        description="Group many nodes' reports (bnbdoctor --json -o DIR/%N.json) by what they found; "
        "show what differs between the groups.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="report files, folders, globs, or - for JSON Lines on stdin"
    )
    add_output_arguments(parser, ReportKind.FLEET)
    parser.add_argument(
        "--nagios", action="store_true", help="exit 0 OK / 1 WARNING / 2 CRITICAL / 3 UNKNOWN, a status line on stdout"
    )
    parser.add_argument("--pseudonymize-nodes", action="store_true", help="replace node names by stable hashes")
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def run(args: argparse.Namespace) -> int:
    from bnbdoctor.fleet.aggregate import aggregate
    from bnbdoctor.fleet.inputs import InputError, iter_reports
    from bnbdoctor.fleet.status import exit_code, nagios_line, nagios_state

    fmt: OutputFormat = args.format or OutputFormat.TEXT
    if fmt is OutputFormat.TUI and args.output:
        fmt = OutputFormat.TEXT  # -o FILE asks for a report in a file; the app is for the terminal (as the doctor's)
    if fmt is OutputFormat.TUI:
        return _run_app(args)
    try:
        report = aggregate(iter_reports(args.paths), pseudonymize=args.pseudonymize_nodes)
    except InputError as exc:
        if args.nagios:
            sys.stdout.write(f"BNBDOCTOR UNKNOWN - {exc}\n")
            return 3
        raise UsageError(str(exc)) from None
    for bad in report.unreadable[:20]:
        note(f"unreadable: {bad.error}")
    if len(report.unreadable) > 20:
        note(f"... and {len(report.unreadable) - 20} more unreadable reports")
    if report.duplicates:
        from bnbdoctor.render.fleet import duplicate_line

        for duplicate in report.duplicates[:20]:
            note(f"duplicate node name: {duplicate_line(duplicate)}")
    if args.nagios and args.format is None and not args.output:
        sys.stdout.write(nagios_line(report))
        return int(nagios_state(report))
    emit(report, fmt, ReportKind.FLEET, args.output, error=UsageError)  # fitted to stdout's encoding
    if args.nagios:
        return int(nagios_state(report))
    return int(exit_code(report, args.strict))


def textual_installed() -> bool:
    """Whether the app can run (Textual is found); it is not imported here."""
    import importlib.util

    return importlib.util.find_spec("textual") is not None


def _run_app(args: argparse.Namespace) -> int:
    """``--tui``: the paths resolved here (a mistyped path, an empty folder: one line, no app), the app reads them."""
    from bnbdoctor.fleet.inputs import InputError, resolve_paths

    if "-" in args.paths:
        raise UsageError(
            "--tui reads its keys from the terminal, so reports cannot come on stdin: save them to a "
            ".jsonl file and name it"
        )
    try:
        paths = resolve_paths(args.paths)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if not paths:
        raise UsageError(f"no reports (*.json, *.jsonl, *.ndjson) in {', '.join(args.paths)}")
    if not textual_installed():
        raise UsageError(
            "--tui needs Textual, which is not installed (pip install textual); "
            "--text, --json and --markdown work without it"
        )
    require_terminal(UsageError, "run without --tui for the plain report, or with --json for a document")
    from bnbdoctor.tui import run_fleet

    return run_fleet(
        paths, label=" ".join(args.paths), pseudonymize=args.pseudonymize_nodes, strict=args.strict, nagios=args.nagios
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return guarded(lambda: run(args), (UsageError,), args.debug)
