"""The one table of output formats: per format, which commands offer it, their ``--help`` text, its file suffix.

Everything that asks "which formats" reads :data:`FORMATS`: the output flags of every command
(:func:`bnbdoctor.render.options.add_output_arguments`, in table order), writing a document
(:func:`bnbdoctor.render.options.emit`: colour, how stdout is fitted to its encoding), the app's export
dialog and the format a file name's suffix implies (:mod:`bnbdoctor.tui.export`), and the message of a
pair no command offers. Adding a format is its row here, beside its :class:`~bnbdoctor.render.OutputFormat`
member, its renderer module and its branch of :func:`bnbdoctor.render.renderer_for`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bnbdoctor.render import OutputFormat, ReportKind

__all__ = ["FORMATS", "Format", "app_exports", "offered"]


@dataclass(frozen=True)
class Format:
    """One output format, as every command offers it."""

    #: The commands that offer it (its flag is in their ``--help``), each with its help text there.
    help: Mapping[ReportKind, str]
    #: Its file's suffix, for the app's exports and their file names; None: not a file (the app itself).
    suffix: str | None = None
    #: The commands whose app writes it from the export dialog (``e``), in this table's order.
    exported_by: frozenset[ReportKind] = frozenset()
    #: ANSI colour on a terminal (text only).
    coloured: bool = False
    #: JSON text: on a stdout whose encoding lacks a character, ``\\uXXXX`` escapes keep it valid JSON
    #: (other formats get ASCII stand-ins, :mod:`bnbdoctor.charset`).
    json: bool = False


#: Every output format, in the order the commands' ``--help`` and the app's export dialog list them.
FORMATS: Mapping[OutputFormat, Format] = {
    OutputFormat.TEXT: Format(
        help={
            ReportKind.DOCTOR: "plain text report (the default when stdout is not a terminal)",
            ReportKind.EXPLAIN: "plain text (default)",
            ReportKind.FIT: "text (default)",
            ReportKind.LINT: "file:line:col findings (default)",
            ReportKind.FLEET: "the groups side by side (default)",
            ReportKind.MERGE_CHECK: "text (default)",
        },
        suffix=".txt",
        exported_by=frozenset({ReportKind.FLEET}),
        coloured=True,
    ),
    OutputFormat.JSON: Format(
        help={
            ReportKind.DOCTOR: "one JSON document on stdout (for CI); logs go to stderr",
            ReportKind.EXPLAIN: "one JSON document: the doctor's report layout, with the matched log lines",
            ReportKind.FIT: "one JSON document on stdout",
            ReportKind.LINT: "one JSON document on stdout (for CI)",
            ReportKind.FLEET: "one JSON document (docs/fleet.schema.json)",
            ReportKind.MERGE_CHECK: "one JSON document",
        },
        suffix=".json",
        exported_by=frozenset({ReportKind.DOCTOR, ReportKind.FLEET}),
        json=True,
    ),
    OutputFormat.MARKDOWN: Format(
        help={
            ReportKind.DOCTOR: "a report to paste into a GitHub issue (redacted, replayable)",
            ReportKind.EXPLAIN: "Markdown to paste into an issue",
            ReportKind.FIT: "Markdown for a GitHub issue",
            ReportKind.LINT: "Markdown for a pull request or an issue",
            ReportKind.FLEET: "Markdown to paste into an issue",
            ReportKind.MERGE_CHECK: (
                "Markdown to paste into a GitHub issue (redacted: your home folder, user and host names)"
            ),
        },
        suffix=".md",
        exported_by=frozenset({ReportKind.DOCTOR, ReportKind.FLEET}),
    ),
    OutputFormat.TUI: Format(
        help={
            ReportKind.DOCTOR: "the interactive app (the default on a terminal)",
            ReportKind.FLEET: "the groups in the interactive app (same exit code; needs a terminal)",
        },
    ),
    OutputFormat.SARIF: Format(
        help={ReportKind.LINT: "one SARIF 2.1.0 log on stdout (GitHub code scanning, editors)"},
        suffix=".sarif",
        json=True,
    ),
}


def offered(kind: ReportKind) -> dict[OutputFormat, str]:
    """The formats ``kind``'s command offers, in ``--help`` order, with their help texts."""
    return {fmt: row.help[kind] for fmt, row in FORMATS.items() if kind in row.help}


def app_exports(kind: ReportKind) -> dict[OutputFormat, str]:
    """The formats ``kind``'s app exports, in menu order (the first is the default), with their file suffixes."""
    return {fmt: row.suffix for fmt, row in FORMATS.items() if kind in row.exported_by and row.suffix is not None}
