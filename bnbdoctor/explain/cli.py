"""``bnbdoctor explain FILE``: the doctor's diagnosis, from a console log instead of the machine.

Users usually have a log, not the broken machine. This command reads one (a traceback, the output
of ``python -m bitsandbytes`` of any release, a notebook cell, a transformers or PEFT error),
extracts the facts it reveals into the same records the probes fill (``bnbdoctor.logs``), runs
the same rules, and ranks the findings root cause first (``bnbdoctor.rules.log_judgement``).

Contract (docs/explain.md):

- ``FILE`` is a path or ``-`` for stdin. Any text is accepted: an empty file, a huge log, ANSI
  colours, CRLF, Markdown fences, UTF-16. What is not a known failure is reported as "no known
  bitsandbytes failure found". A file that is not text (binary data: :func:`~bnbdoctor.explain.pipeline.not_text`)
  is refused, exit 2.
- Exit codes are the doctor's (:class:`bnbdoctor.report.ExitCode`): 0 when the log was read and
  shows no error finding (including "no known failure"), 1 when it shows an error finding (or a
  warning, with ``--strict``), 2 when the file cannot be read, is not text, or the arguments are wrong (one line
  on stderr, never a traceback unless ``--debug``).
- stdout is data: ``--json`` prints one JSON document (the doctor's report layout; the matched
  log lines with their numbers are in ``facts.log.matches``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser
from bnbdoctor.contract import guarded, note
from bnbdoctor.explain.pipeline import ExplainError, explain_file
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit
from bnbdoctor.report import ExitCode
from bnbdoctor.report_io import add_redaction_arguments, redacted_for_output

if TYPE_CHECKING:
    from bnbdoctor.rules import Rule


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor explain",
        description="Explain a console log of a bitsandbytes failure: the facts it shows, the findings the doctor "
        "would report on that machine, root cause first, and what to run there to confirm.",
        epilog="Exit status: 0 the log shows no error (or no known failure), 1 it shows an error finding "
        "(a warning too with --strict), 2 the file cannot be read, is not text, or the arguments are wrong.",
    )
    parser.add_argument(
        "file", metavar="FILE", help="the log to explain, or - to read standard input (paste, then Ctrl-D)"
    )
    add_output_arguments(parser, ReportKind.EXPLAIN)
    parser.add_argument(
        "--rule", metavar="ID", action="append", default=[], help="run only this rule (repeatable), e.g. --rule BNB306"
    )
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    add_redaction_arguments(parser, "the home folder, user and host names the log shows")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def _rules(ids: list[str]) -> list[Rule]:
    from bnbdoctor.rules import all_rules, select_rules

    if not ids:
        return all_rules()
    try:
        return select_rules(ids)
    except KeyError as exc:
        raise ExplainError(exc.args[0]) from None


def run(args: argparse.Namespace) -> ExitCode:
    rules = _rules(args.rule)
    if args.file == "-" and sys.stdin.isatty():  # nothing piped in: the user is to paste the log
        note("paste the log, then Ctrl-D (Ctrl-Z Enter on Windows)")
    report = explain_file(args.file, rules)
    from bnbdoctor.report_io import redact_report, redactor_here

    report = redacted_for_output(report, lambda: redactor_here(report.facts), redact_report, args)
    emit(report, args.format or OutputFormat.TEXT, ReportKind.EXPLAIN, args.output, error=ExplainError)
    return report.exit_code(args.strict)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``bnbdoctor explain`` (see :data:`bnbdoctor.cli.COMMANDS`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, one line on stderr)
        return int(exc.code or 0) if isinstance(exc.code, int) else int(ExitCode.FAILURE)
    return guarded(lambda: run(args), (ExplainError,), args.debug)


if __name__ == "__main__":
    sys.exit(main())
