"""The output options of every bnbdoctor command, declared once, and writing what they ask for.

:func:`add_output_arguments` gives a parser the format flags its command offers (``--text``/``--json``/
``--markdown``; ``--tui`` for the doctor and the fleet, ``--sarif`` for lint) as one mutually exclusive group
storing an :class:`~bnbdoctor.render.OutputFormat` in ``args.format`` (None when none is given: each command
has its own default), and ``-o/--output FILE``. Which flags, and their help texts, are the one table
(:data:`bnbdoctor.render.formats.FORMATS`). :func:`emit` renders a document through the one dispatch and
writes it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Literal, overload

from bnbdoctor.contract import use_color, write_output
from bnbdoctor.render import OutputFormat, ReportKind, ReportKinds, renderer_for
from bnbdoctor.render.formats import FORMATS, offered

if TYPE_CHECKING:
    from bnbdoctor.fleet_report import FleetReport
    from bnbdoctor.merge_check_result import MergeCheck
    from bnbdoctor.report import Report

OUTPUT_HELP = "write the report to FILE instead of stdout (%%N in FILE: the node name, %%h: the host name)"


def add_output_arguments(parser: argparse.ArgumentParser, kind: ReportKind) -> None:
    """The format flags ``kind``'s command offers (:func:`bnbdoctor.render.formats.offered`, with their help
    texts), as one mutually exclusive group storing an :class:`~bnbdoctor.render.OutputFormat` in
    ``args.format``, and ``-o`` into ``args.output``."""
    group = parser.add_mutually_exclusive_group()
    for fmt, help_text in offered(kind).items():
        group.add_argument(f"--{fmt.value}", dest="format", action="store_const", const=fmt, help=help_text)
    parser.add_argument("-o", "--output", metavar="FILE", help=OUTPUT_HELP)


@overload
def emit(
    document: Report, fmt: OutputFormat, kind: ReportKinds, output: str | None, *, error: type[Exception]
) -> None: ...
@overload
def emit(
    document: FleetReport,
    fmt: OutputFormat,
    kind: Literal[ReportKind.FLEET],
    output: str | None,
    *,
    error: type[Exception],
) -> None: ...
@overload
def emit(
    document: MergeCheck,
    fmt: OutputFormat,
    kind: Literal[ReportKind.MERGE_CHECK],
    output: str | None,
    *,
    error: type[Exception],
) -> None: ...
def emit(document: object, fmt: OutputFormat, kind: ReportKind, output: str | None, *, error: type[Exception]) -> None:
    """Render ``document`` (the one ``kind``'s command makes) and write it to ``output`` (or stdout); a file that
    cannot be written raises ``error``.

    Colour only for a coloured format (text) on a terminal (:func:`bnbdoctor.contract.use_color`); a file is
    replaced whole or not at all (in UTF-8), and "report written to FILE" goes to stderr. On stdout the
    document is fitted to the stream's encoding (:mod:`bnbdoctor.charset`): cp1252, latin-1 or ASCII get
    ASCII symbols, JSON escapes, never a UnicodeEncodeError.
    """
    row = FORMATS[fmt]
    text = renderer_for(fmt, kind).render(document, color=use_color(row.coloured, output))
    write_output(text, output, error, json=row.json)
