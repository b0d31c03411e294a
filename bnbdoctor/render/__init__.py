"""Renderers: one interface, one module per format, and the one dispatch that picks a renderer for every command.

- :class:`OutputFormat`: what the user asked for (``--text``, ``--json``, ``--markdown``; ``--tui``
  for the doctor and the fleet, which runs the app instead of rendering a document; ``--sarif`` for lint);
- :class:`ReportKind`: which command made the document. The doctor, ``explain``, ``fit`` and ``lint`` make a
  :class:`~bnbdoctor.report.Report` (JSON is one layout for all four, text and Markdown differ per kind);
  ``fleet`` makes a :class:`~bnbdoctor.fleet_report.FleetReport`, ``merge-check`` a
  :class:`~bnbdoctor.merge_check_result.MergeCheck`;
- :class:`Renderer`: the interface every renderer implements, ``render(document, *, color) -> str``, generic
  over the document it reads;
- :func:`renderer_for`: (format, kind) -> renderer, the only place that chooses one; :func:`render` does both
  steps. A pair no command offers raises :class:`UnsupportedFormat`, never a document in another format.

Which formats each command offers, their ``--help`` texts and file suffixes are the one table in
:mod:`bnbdoctor.render.formats`. Renderer modules are imported inside :func:`renderer_for`, only the one
chosen, so ``--json`` never imports ``rich``. The command-line flags and writing the result are in
:mod:`bnbdoctor.render.options`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, Literal, NoReturn, Protocol, TypeVar, overload

if TYPE_CHECKING:
    from typing import TypeAlias

    from bnbdoctor.fleet_report import FleetReport
    from bnbdoctor.merge_check_result import MergeCheck
    from bnbdoctor.report import Report

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # Python 3.10 is bnbdoctor's floor; typing_extensions is not a dependency

    def assert_never(value: NoReturn, /) -> NoReturn:
        raise AssertionError(f"unhandled value: {value!r}")


__all__ = [
    "REPORT_KINDS",
    "OutputFormat",
    "PlainRenderer",
    "Renderer",
    "ReportKind",
    "ReportKinds",
    "UnsupportedFormat",
    "render",
    "renderer_for",
]


class OutputFormat(str, Enum):
    """The output a command was asked for."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    TUI = "tui"
    SARIF = "sarif"  # lint only: code scanning


class ReportKind(str, Enum):
    """The command a document comes from; text and Markdown are laid out per kind."""

    DOCTOR = "doctor"
    EXPLAIN = "explain"
    FIT = "fit"
    LINT = "lint"
    FLEET = "fleet"
    MERGE_CHECK = "merge-check"


#: The kinds whose document is a :class:`~bnbdoctor.report.Report`.
ReportKinds: TypeAlias = Literal[ReportKind.DOCTOR, ReportKind.EXPLAIN, ReportKind.FIT, ReportKind.LINT]
REPORT_KINDS: tuple[ReportKinds, ...] = (ReportKind.DOCTOR, ReportKind.EXPLAIN, ReportKind.FIT, ReportKind.LINT)

DocumentT = TypeVar("DocumentT")
DocumentT_contra = TypeVar("DocumentT_contra", contravariant=True)


class UnsupportedFormat(ValueError):
    """A (format, kind) pair no command offers: one line saying so, never a document in another format."""


class Renderer(Protocol[DocumentT_contra]):
    """Turns a document into text. ``color``: ANSI styles, for text on a terminal only."""

    def render(self, document: DocumentT_contra, *, color: bool) -> str: ...


@dataclass(frozen=True)
class PlainRenderer(Generic[DocumentT]):
    """A :class:`Renderer` made of a function of the document alone, for formats without colour (the
    fleet's and merge-check's documents are rendered by plain functions)."""

    function: Callable[[DocumentT], str]

    def render(self, document: DocumentT, *, color: bool = False) -> str:
        return self.function(document)


@overload
def renderer_for(fmt: OutputFormat, kind: ReportKinds) -> Renderer[Report]: ...
@overload
def renderer_for(fmt: OutputFormat, kind: Literal[ReportKind.FLEET]) -> Renderer[FleetReport]: ...
@overload
def renderer_for(fmt: OutputFormat, kind: Literal[ReportKind.MERGE_CHECK]) -> Renderer[MergeCheck]: ...
@overload
def renderer_for(fmt: OutputFormat, kind: ReportKind) -> Renderer[Any]: ...  # a kind known only at run time
def renderer_for(fmt: OutputFormat, kind: ReportKind) -> Renderer[Any]:
    """The renderer for ``fmt`` and ``kind``; :class:`UnsupportedFormat` when no command offers the pair (as
    :data:`bnbdoctor.render.formats.FORMATS` says) or ``fmt`` is the app. One branch per format."""
    if fmt is OutputFormat.TEXT or fmt is OutputFormat.JSON or fmt is OutputFormat.MARKDOWN:
        return _document_renderer(fmt, kind)
    if fmt is OutputFormat.SARIF:
        if kind is not ReportKind.LINT:
            raise _unsupported(fmt, kind)
        from bnbdoctor.render.lint_sarif import SarifRenderer

        return SarifRenderer()
    if fmt is OutputFormat.TUI:
        raise UnsupportedFormat("the app (--tui) is not a document: run it with bnbdoctor.tui.run")
    assert_never(fmt)


def _unsupported(fmt: OutputFormat, kind: ReportKind) -> UnsupportedFormat:
    from bnbdoctor.render.formats import offered

    flags = ", ".join(f"--{offer.value}" for offer in offered(kind))
    return UnsupportedFormat(f"bnbdoctor {kind.value} has no --{fmt.value} output (it offers {flags})")


#: The renderers of each kind of document in the formats every command offers (text, JSON, Markdown), as
#: "module:name" in ``bnbdoctor.render``: a class is the renderer, a function of the document alone is wrapped
#: in :class:`PlainRenderer`. A module is imported only when its renderer is chosen. JSON is one layout for
#: every Report.
_DOCUMENT_RENDERERS: dict[ReportKind, tuple[str, str, str]] = {
    ReportKind.DOCTOR: ("text:TextRenderer", "json:JsonRenderer", "markdown:MarkdownRenderer"),
    ReportKind.EXPLAIN: ("explain_text:ExplainTextRenderer", "json:JsonRenderer", "markdown:MarkdownRenderer"),
    ReportKind.FIT: ("fit_text:FitTextRenderer", "json:JsonRenderer", "fit_markdown:FitMarkdownRenderer"),
    ReportKind.LINT: ("lint_text:LintTextRenderer", "json:JsonRenderer", "markdown:MarkdownRenderer"),
    ReportKind.FLEET: ("fleet:render_text", "fleet:render_json", "fleet:render_markdown"),
    ReportKind.MERGE_CHECK: (
        "merge_check:render_text",
        "merge_check:render_json",
        "merge_check_markdown:render_markdown",
    ),
}
_DOCUMENT_FORMATS = (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN)


def _document_renderer(fmt: OutputFormat, kind: ReportKind) -> Renderer[Any]:
    module, name = _DOCUMENT_RENDERERS[kind][_DOCUMENT_FORMATS.index(fmt)].split(":")
    made = getattr(importlib.import_module(f"bnbdoctor.render.{module}"), name)
    return made() if isinstance(made, type) else PlainRenderer(made)


@overload
def render(document: Report, fmt: OutputFormat, kind: ReportKinds, *, color: bool = False) -> str: ...
@overload
def render(
    document: FleetReport, fmt: OutputFormat, kind: Literal[ReportKind.FLEET], *, color: bool = False
) -> str: ...
@overload
def render(
    document: MergeCheck, fmt: OutputFormat, kind: Literal[ReportKind.MERGE_CHECK], *, color: bool = False
) -> str: ...
def render(document: object, fmt: OutputFormat, kind: ReportKind, *, color: bool = False) -> str:
    """``document`` as one document in ``fmt``, laid out for ``kind`` (the document the kind makes)."""
    return renderer_for(fmt, kind).render(document, color=color)
