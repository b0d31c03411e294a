"""``bnbdoctor lint PATH...``: the command line of the code check.

bnbdoctor's contract: stdout is data (``--json`` is one JSON document), messages on stderr, exit 0
without error findings, 1 with them (or with warnings under ``--strict``), 2 for bad input. A file
that cannot be parsed is one line in the report, whatever it holds (Python 2, 100,000 nested ``not``s,
NUL bytes, a notebook that is not JSON or nested too deeply, more than 2 MiB of code:
:mod:`bnbdoctor.lint.sources`); the other files are still linted, and the run exits 1 (:func:`exit_code`),
with or without ``--strict``: a pre-commit hook must not pass over code nobody checked. The examined
interpreter (``--python``, else as the doctor chooses it) is read only when a finding's severity
depends on its transformers or bitsandbytes (``--no-python`` skips it).
"""

from __future__ import annotations

import argparse

from bnbdoctor import __version__
from bnbdoctor.argparsing import Parser
from bnbdoctor.contract import guarded
from bnbdoctor.facts import Facts
from bnbdoctor.lint.sources import SourceError
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.options import add_output_arguments, emit
from bnbdoctor.report import ExitCode, Report
from bnbdoctor.report_io import add_redaction_arguments, redact_report, redacted_for_output, redactor_for_this_machine

#: Site kinds whose rules read installed versions.
VERSIONED_KINDS = frozenset({"kbit_kwarg", "move"})


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor lint",
        description="Find bitsandbytes mistakes in Python files, folders and notebooks before they run "
        "(static analysis: the code is never imported or run).",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a .py file, a .ipynb notebook or a folder")
    parser.add_argument("--python", metavar="PATH", help="the interpreter whose transformers/bitsandbytes to read")
    parser.add_argument("--no-python", action="store_true", help="do not read an interpreter's versions")
    add_output_arguments(parser, ReportKind.LINT)
    parser.add_argument("--strict", action="store_true", help="count warnings as errors in the exit code")
    add_redaction_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"bnbdoctor {__version__}")
    return parser


def _python_facts(facts: Facts, python: str | None) -> None:
    from bnbdoctor.hosts.live import LiveHost
    from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions, run_probes

    wanted = [probe for probe in PROBES if probe.name in ("env", "python")]
    gathered = run_probes(wanted, ProbeContext(LiveHost(), ProbeOptions(python=python, load=False)))
    facts.python, facts.probes = gathered.python, gathered.probes


def lint_report(paths: list[str], *, python: str | None = None, read_python: bool = True) -> Report:
    """Lint ``paths`` and judge them with the BNB6xx rules; raises SourceError when nothing can be read."""
    from bnbdoctor.doctor import diagnose_facts
    from bnbdoctor.lint.analyze import lint_facts
    from bnbdoctor.rules.engine import LINT

    facts = Facts(source={"kind": "lint", "label": "bnbdoctor lint " + " ".join(paths)})
    facts.lint = lint_facts(paths)
    if read_python and any(site.kind in VERSIONED_KINDS for site in facts.lint.sites):
        _python_facts(facts, python)
    return diagnose_facts(facts, pipeline=LINT)


def exit_code(report: Report, strict: bool) -> ExitCode:
    """The report's exit code, and 1 (:attr:`ExitCode.FINDINGS`) at least when a file was not linted."""
    code = report.exit_code(strict)
    if report.facts.lint is not None and report.facts.lint.unparsed:
        return max(code, ExitCode.FINDINGS)
    return code


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else int(ExitCode.FAILURE)
    fmt = args.format or OutputFormat.TEXT

    def body() -> int:
        report = lint_report(list(args.paths), python=args.python, read_python=not args.no_python)
        report = redacted_for_output(report, redactor_for_this_machine, redact_report, args)
        emit(report, fmt, ReportKind.LINT, args.output, error=SourceError)
        return int(exit_code(report, args.strict))

    return guarded(body, (SourceError,), args.debug)
