"""ToolView: a tab that runs one analysis at a time in a thread worker (the Explain and Fit tabs).

The analysis itself runs in a daemon thread (:func:`~bnbdoctor.tui.session.call_abandonable`), so
quitting never waits for a fit's engine subprocess. It reports back with messages
(:class:`~bnbdoctor.tui.messages.ToolProgress`, ``ToolReady``, ``ToolFailed``), numbered by
generation like the diagnosis worker's. Bad input (``BAD_INPUT`` exceptions) becomes a one-line
notification; anything else is shown as a failure, never a traceback over the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import ClassVar

from textual import events
from textual.containers import Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Label, Select, TextArea
from textual.worker import Worker, get_current_worker

from bnbdoctor.doctor import Cancelled
from bnbdoctor.report import Report
from bnbdoctor.tui.messages import ToolFailed, ToolProgress, ToolReady
from bnbdoctor.tui.session import call_abandonable
from bnbdoctor.tui.settings import UiSettings
from bnbdoctor.tui.widgets.progress import SPINNER

Task = Callable[[Callable[[str], None]], Report]


def labelled_input(label: str, input_id: str, placeholder: str, tooltip: str | None = None) -> Iterator[Widget]:
    """One field of a tab's form (a log's path, a model, a memory size): its label, then a compact one-line
    input, as the Explain and Fit tabs lay them out in their rows."""
    yield Label(label, classes="tool-label")
    yield Input(placeholder=placeholder, id=input_id, compact=True, tooltip=tooltip)


class ToolStatus(Widget):
    """One line: what is running (spinner, elapsed time), or the outcome of the last run."""

    def __init__(self, idle: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.message: Content = Content.styled(idle, "$text-muted italic") if idle else Content("")
        self.heading = ""
        self.detail = ""
        self.running = False
        self.show_timings = True
        self._started = 0.0
        self._frame = 0
        self._timer: Timer | None = None

    def start(self, heading: str, *, animate: bool = True, show_timings: bool = True) -> None:
        self.heading, self.detail, self.running = heading, "", True
        self.show_timings = show_timings
        self._started = time.perf_counter()
        self._frame = 0
        if animate and self._timer is None:
            self._timer = self.set_interval(0.1, self._tick)
        self.refresh(layout=True)

    def progress(self, detail: str) -> None:
        self.detail = detail
        self.refresh(layout=True)

    def stop(self, message: Content | str = "") -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.running = False
        self.message = message if isinstance(message, Content) else Content(message)
        self.refresh(layout=True)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def _tick(self) -> None:
        self._frame += 1
        self.refresh()

    def render(self) -> Content:
        if not self.running:
            return self.message
        spinner = SPINNER[self._frame % len(SPINNER)] if self._timer is not None else "…"
        parts: list[str | tuple[str, str]] = [(f"{spinner} ", "$text-accent"), (self.heading, "bold")]
        if self.detail:
            parts.append((f": {self.detail}", "$text-muted"))
        if self.show_timings:
            parts.append((f"  {self.elapsed:.1f} s", "$text-muted"))
        return Content.assemble(*parts)


class ToolView(Vertical):
    """Base of the Explain and Fit tabs: :meth:`start` runs a task; subclasses show its report.
    ``settings`` are the app's display choices (cursor blink, animation, durations)."""

    #: Exceptions that mean bad input: a one-line warning notification, not a failure.
    BAD_INPUT: ClassVar[tuple[type[BaseException], ...]] = ()
    #: Title of the notifications.
    TOOL: ClassVar[str] = ""
    #: The form's fields: while one has focus, a typed character is the field's, never a global key.
    FIELDS: ClassVar[tuple[type[Widget], ...]] = (Input, Select, TextArea)

    def __init__(self, settings: UiSettings | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.settings = settings or UiSettings()
        self.running = False
        self.report: Report | None = None
        self.error: str | None = None  # the last run's failure (or bad input), None after a report
        self.runs = 0  # completed runs, for tests
        self.generation = 0
        self._worker: Worker[None] | None = None

    @property
    def status(self) -> ToolStatus:
        return self.query_one(ToolStatus)

    def start(self, heading: str, task: Task) -> bool:
        """Run ``task(progress)`` in a thread worker; False (and a warning) when one is running."""
        if self.running:
            self.notify(f"{self.TOOL} is already running.", severity="warning", timeout=2)
            return False
        self.running = True
        self.generation += 1
        self.status.start(heading, animate=self.settings.animate, show_timings=self.settings.show_timings)
        generation = self.generation
        self._worker = self.run_worker(
            lambda: self._work(task, generation),
            name=self.TOOL.lower(),
            group=self.TOOL.lower(),
            thread=True,
            exit_on_error=False,
        )
        return True

    def _work(self, task: Task, generation: int) -> None:
        """Runs in the worker thread: everything reaches the tab as messages."""
        worker = get_current_worker()

        def progress(text: str) -> None:  # called from the task's thread, maybe after the app has quit
            with contextlib.suppress(RuntimeError):  # the event loop is closed
                self.post_message(ToolProgress(text, generation))

        try:
            report = call_abandonable(
                lambda: task(progress), lambda: worker.is_cancelled, name=f"bnbdoctor-{self.TOOL.lower()}"
            )
        except Cancelled:
            return
        except self.bad_input() as exc:
            self.post_message(ToolFailed(" ".join(str(exc).split()) or type(exc).__name__, generation, True))
        except Exception as exc:  # noqa: BLE001 - shown in the tab, never a traceback over the screen
            self.post_message(ToolFailed(f"{type(exc).__name__}: {exc}", generation))
        else:
            self.post_message(ToolReady(report, generation))

    def on_tool_progress(self, message: ToolProgress) -> None:
        message.stop()
        if message.generation == self.generation:
            self.status.progress(message.text)

    def on_tool_ready(self, message: ToolReady) -> None:
        message.stop()
        if message.generation != self.generation:
            return
        elapsed = self.status.elapsed
        self.running = False
        self.error = None
        self.report = message.report
        self.runs += 1
        self.show_report(message.report, elapsed)

    def on_tool_failed(self, message: ToolFailed) -> None:
        message.stop()
        if message.generation != self.generation:
            return
        self.running = False
        self.error = message.error
        self.status.stop(Content.styled(f"✖ {message.error}", "$text-error"))
        if message.bad_input:
            self.notify(
                message.error, title=f"{self.TOOL}: check the input", severity="warning", timeout=8, markup=False
            )
        else:
            self.notify(message.error, title=f"{self.TOOL} failed", severity="error", timeout=10, markup=False)

    def on_key(self, event: events.Key) -> None:
        """A character typed while one of the tab's fields has focus goes no further than the field:
        ``e``, ``v``, ``q`` and the digits are global keys elsewhere, never here. (An Input keeps its
        characters anyway; a closed Select would pass them on.) Keys the field binds itself, such as
        a Select's space, still reach it."""
        focused = self.screen.focused
        if not event.is_printable or not isinstance(focused, self.FIELDS) or self not in focused.ancestors:
            return
        bound = self.screen.active_bindings.get(event.key)
        if bound is None or bound.node is not focused:
            event.stop()
            event.prevent_default()

    def run(self) -> bool:
        """What Ctrl+R does in this tab."""
        raise NotImplementedError

    def focus_default(self) -> None:
        """Focus what the tab shows first."""
        raise NotImplementedError

    def bad_input(self) -> tuple[type[BaseException], ...]:
        """The exceptions that mean bad input (a subclass may import them lazily)."""
        return self.BAD_INPUT

    def show_report(self, report: Report, elapsed: float) -> None:
        raise NotImplementedError

    async def wait(self, timeout: float = 120.0) -> Report | None:
        """Wait until the current run (if any) has ended (for tests)."""
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return self.report
