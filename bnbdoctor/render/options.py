"""The output options of every bnbdoctor command, declared once, and writing what they ask for.

:func:`add_output_arguments` gives a parser ``--text``/``--json``/``--markdown`` (and ``--tui`` for the
doctor, ``--sarif`` for lint) as one mutually exclusive group storing an :class:`~bnbdoctor.render.OutputFormat` in
``args.format`` (None when none is given: each command has its own default), and ``-o/--output FILE``.
The flags are the same for the doctor, ``explain`` and ``fit``; only their help texts differ, in
:data:`FORMAT_HELP`. :func:`emit` renders a report through the one dispatch and writes it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from bnbdoctor.contract import use_color, write_output
from bnbdoctor.render import OutputFormat, ReportKind, render
from bnbdoctor.report import Report

#: Per command (report kind), the format flags it offers, in --help order, with their help texts.
FORMAT_HELP: Mapping[ReportKind, Mapping[OutputFormat, str]] = {
    ReportKind.DOCTOR: {
        OutputFormat.TEXT: "plain text report (the default when stdout is not a terminal)",
        OutputFormat.JSON: "one JSON document on stdout (for CI); logs go to stderr",
        OutputFormat.MARKDOWN: "a report to paste into a GitHub issue (redacted, replayable)",
        OutputFormat.TUI: "the interactive app (the default on a terminal)",
    },
    ReportKind.EXPLAIN: {
        OutputFormat.TEXT: "plain text (default)",
        OutputFormat.JSON: "one JSON document: the doctor's report layout, with the matched log lines",
        OutputFormat.MARKDOWN: "Markdown to paste into an issue",
    },
    ReportKind.FIT: {
        OutputFormat.TEXT: "text (default)",
        OutputFormat.JSON: "one JSON document on stdout",
        OutputFormat.MARKDOWN: "Markdown for a GitHub issue",
    },
    ReportKind.LINT: {
        OutputFormat.TEXT: "file:line:col findings (default)",
        OutputFormat.JSON: "one JSON document on stdout (for CI)",
        OutputFormat.MARKDOWN: "Markdown for a pull request or an issue",
        OutputFormat.SARIF: "one SARIF 2.1.0 log on stdout (GitHub code scanning, editors)",
    },
}
OUTPUT_HELP = "write the report to FILE instead of stdout (%%N in FILE: the node name, %%h: the host name)"


def add_output_arguments(parser: argparse.ArgumentParser, formats: ReportKind | Mapping[OutputFormat, str]) -> None:
    """``--text/--json/--markdown`` (``--tui`` too for the doctor) into ``args.format``, ``-o`` into ``args.output``:
    the flags of a report kind (:data:`FORMAT_HELP`), or of a command with a document of its own (fleet,
    merge-check), given as its own ``{format: help}``."""
    group = parser.add_mutually_exclusive_group()
    for fmt, help_text in (FORMAT_HELP[formats] if isinstance(formats, ReportKind) else formats).items():
        group.add_argument(f"--{fmt.value}", dest="format", action="store_const", const=fmt, help=help_text)
    parser.add_argument("-o", "--output", metavar="FILE", help=OUTPUT_HELP)


def emit(report: Report, fmt: OutputFormat, kind: ReportKind, output: str | None, *, error: type[Exception]) -> None:
    """Render ``report`` and write it to ``output`` (or stdout); a file that cannot be written raises ``error``.

    Colour only for text on a terminal (:func:`bnbdoctor.contract.use_color`); a file is replaced
    whole or not at all (in UTF-8), and "report written to FILE" goes to stderr. On stdout the report
    is fitted to the stream's encoding (:mod:`bnbdoctor.charset`): cp1252, latin-1 or ASCII get
    ASCII symbols, JSON escapes, never a UnicodeEncodeError.
    """
    color = use_color(fmt is OutputFormat.TEXT, output)
    text = render(report, fmt, kind, color=color)
    write_output(text, output, error, json=fmt in (OutputFormat.JSON, OutputFormat.SARIF))
