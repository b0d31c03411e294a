"""Renderers: one module per output format, each turning a Report into text.

Import them lazily (``importlib``) so that ``--json`` never pays for ``rich``.
"""

from __future__ import annotations

from enum import Enum


class OutputFormat(str, Enum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    TUI = "tui"
