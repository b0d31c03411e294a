"""UiSettings: how the app shows things, handed down to its screens and tabs.

Widgets and screens never import the app (:mod:`bnbdoctor.tui.app`): what they need to know about
it is this small frozen object, given to them when they are created, and what they need the app
to do they ask by a message or through Textual's own ``App`` API.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UiSettings:
    """The app's display choices. Tests and snapshots turn the motion off (no blinking cursor, no
    spinner) and hide durations, so that each run paints the same."""

    cursor_blink: bool = True  # blinking cursors in inputs and text areas
    animate: bool = True  # spinners and Textual's animations
    show_timings: bool = True  # durations in the status lines and the facts
