"""Progress for slow work (``fit``'s engine, the doctor waiting on the patient interpreter), on stderr.

A person at a terminal sees a rich status line (a spinner, what is being waited on, and for how
long) that disappears when the work is done; anything else (a pipe, a file, a test, ``--json``
with stderr redirected) sees nothing, and rich is not even imported. stdout is never touched.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.text import Text

    from bnbdoctor.facts import ProbeRun

#: Shows the next thing being waited on; what a ``progress=`` parameter takes.
Update = Callable[[str], None]
#: Seconds before the line starts counting them: quick work shows no number.
SHOW_SECONDS_AFTER = 2.0


def wanted(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (stderr by default) is a terminal that can show a status line."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
    return tty and os.environ.get("TERM") != "dumb"


def _ignore(_message: str) -> None:
    return None


class _Line:
    """The status text, rendered afresh at each refresh so that the seconds count while nothing reports; one line
    (cut with an ellipsis on a narrow terminal) so that the line rich clears is the line it drew."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.started = time.monotonic()

    def __rich__(self) -> Text:
        from rich.text import Text

        waited = time.monotonic() - self.started
        shown = f"{waited:.0f} s  {self.message}" if waited >= SHOW_SECONDS_AFTER else self.message
        return Text(shown, no_wrap=True, overflow="ellipsis")  # one line at any width, the seconds first


@contextlib.contextmanager
def status(message: str, stream: TextIO | None = None, force: bool = False) -> Iterator[Update]:
    """Show ``message`` with a spinner on ``stream`` (stderr) while the block runs; yield the updater.

    Shows nothing, and yields an updater that does nothing, unless the stream is a terminal (or ``force``)."""
    stream = stream if stream is not None else sys.stderr
    if not (force or wanted(stream)):
        yield _ignore
        return
    from rich.console import Console

    from bnbdoctor.contract import no_color

    line = _Line(message)
    console = Console(file=stream, force_terminal=force or None, no_color=no_color())
    with console.status(line, spinner="dots"):

        def update(text: str) -> None:
            line.message = text

        yield update


def probe_waits(update: Update, heading: str, names: Sequence[str]) -> Callable[[ProbeRun], None]:
    """A probe runner's progress callback that shows which probes are still running under ``heading``."""
    pending = list(names)
    lock = threading.Lock()

    def finished(run: ProbeRun) -> None:
        with lock:
            if run.name in pending:
                pending.remove(run.name)
            left = list(pending)
        update(f"{heading}: waiting on {', '.join(left)}" if left else heading)

    update(f"{heading}: waiting on {', '.join(pending)}" if pending else heading)
    return finished
