"""Copying text to the terminal's clipboard and saying what was copied, from any widget.

Through Textual's ``App.copy_to_clipboard`` (OSC 52, so it works over SSH in most terminals), so
that a widget does not need bnbdoctor's app to copy.
"""

from __future__ import annotations

from textual.widget import Widget


def copy_and_tell(widget: Widget, text: str, shown: str | None = None) -> None:
    """Copy ``text`` and notify ``shown`` (``text`` itself by default)."""
    widget.app.copy_to_clipboard(text)
    widget.notify(shown or text, title="Copied to the clipboard", markup=False)
