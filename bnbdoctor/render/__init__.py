"""Renderers: one interface, one module per format, and the one dispatch that picks a renderer.

- :class:`OutputFormat`: what the user asked for (``--text``, ``--json``, ``--markdown``; ``--tui``
  for the doctor, which runs the app instead of rendering a document; ``--sarif`` for lint);
- :class:`ReportKind`: which command made the report (the doctor, ``explain``, ``fit``): JSON is one
  layout for all of them, text and Markdown differ per kind;
- :class:`Renderer`: the interface every renderer implements, ``render(report, *, color) -> str``;
- :func:`renderer_for`: (format, kind) -> renderer, the only place that chooses one; :func:`render`
  does both steps.

Renderer modules are imported inside :func:`renderer_for`, only the one chosen, so ``--json`` never
imports ``rich``. The command-line flags and writing the result are in :mod:`bnbdoctor.render.options`.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, NoReturn, Protocol

if TYPE_CHECKING:
    from bnbdoctor.report import Report

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # Python 3.10 is bnbdoctor's floor; typing_extensions is not a dependency

    def assert_never(value: NoReturn, /) -> NoReturn:
        raise AssertionError(f"unhandled value: {value!r}")


__all__ = ["OutputFormat", "Renderer", "ReportKind", "render", "renderer_for"]


class OutputFormat(str, Enum):
    """The output a command was asked for."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    TUI = "tui"
    SARIF = "sarif"  # lint only: code scanning


class ReportKind(str, Enum):
    """The command a report comes from; text and Markdown are laid out per kind."""

    DOCTOR = "doctor"
    EXPLAIN = "explain"
    FIT = "fit"
    LINT = "lint"


class Renderer(Protocol):
    """Turns a report into one document. ``color``: ANSI styles, for text on a terminal only."""

    def render(self, report: Report, *, color: bool) -> str: ...


def renderer_for(fmt: OutputFormat, kind: ReportKind) -> Renderer:
    """The renderer for ``fmt`` and ``kind``; raises ImportError when its module is not in this build.

    Two fallbacks, each with a note on stderr: explain's Markdown becomes explain's text, and fit's
    Markdown keeps only its fit section when the shared Markdown renderer is missing.
    """
    if fmt is OutputFormat.JSON:
        from bnbdoctor.render.json import JsonRenderer

        return JsonRenderer()
    if fmt is OutputFormat.TEXT:
        return _text_renderer(kind)
    if fmt is OutputFormat.MARKDOWN:
        return _markdown_renderer(kind)
    if fmt is OutputFormat.TUI:
        raise ValueError("the app (--tui) is not a document: run it with bnbdoctor.tui.run")
    if fmt is OutputFormat.SARIF:
        if kind is not ReportKind.LINT:
            raise ValueError(f"SARIF is for lint findings (code locations), not a {kind.value} report")
        from bnbdoctor.render.lint_sarif import SarifRenderer

        return SarifRenderer()
    assert_never(fmt)


def _text_renderer(kind: ReportKind) -> Renderer:
    if kind is ReportKind.DOCTOR:
        from bnbdoctor.render.text import TextRenderer

        return TextRenderer()
    if kind is ReportKind.EXPLAIN:
        from bnbdoctor.render.explain_text import ExplainTextRenderer

        return ExplainTextRenderer()
    if kind is ReportKind.FIT:
        from bnbdoctor.render.fit_text import FitTextRenderer

        return FitTextRenderer()
    if kind is ReportKind.LINT:
        from bnbdoctor.render.lint_text import LintTextRenderer

        return LintTextRenderer()
    assert_never(kind)


def _markdown_renderer(kind: ReportKind) -> Renderer:
    from bnbdoctor.contract import note

    if kind is ReportKind.DOCTOR:
        from bnbdoctor.render.markdown import MarkdownRenderer

        return MarkdownRenderer()
    if kind in (ReportKind.EXPLAIN, ReportKind.LINT):
        try:
            from bnbdoctor.render.markdown import MarkdownRenderer
        except ImportError:
            note("Markdown output is not available in this build; writing text instead")
            return _text_renderer(kind)
        return MarkdownRenderer()
    if kind is ReportKind.FIT:
        from bnbdoctor.render.fit_markdown import FitMarkdownRenderer

        try:
            from bnbdoctor.render.markdown import MarkdownRenderer
        except ImportError:
            note(
                "--markdown: the Markdown renderer (bnbdoctor.render.markdown) is not in this build; "
                "printing the fit section only"
            )
            return FitMarkdownRenderer(then=None)
        return FitMarkdownRenderer(then=MarkdownRenderer())
    assert_never(kind)


def render(report: Report, fmt: OutputFormat, kind: ReportKind, *, color: bool = False) -> str:
    """``report`` as one document in ``fmt``, laid out for ``kind``."""
    return renderer_for(fmt, kind).render(report, color=color)
