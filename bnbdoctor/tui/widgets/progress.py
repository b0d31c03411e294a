"""ProbeProgress: each probe's state and time while a run is under way.

Probes are listed in report order (not finishing order), so the line reads the same every run; a
spinner and the elapsed time tick while they run, showing that the app is alive during a slow NVML
query or dlopen.
"""

from __future__ import annotations

import time

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from bnbdoctor.facts import ProbeRun

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class ProbeProgress(Widget):
    """Shown while a run is under way, hidden otherwise."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.names: list[str] = []
        self.runs: dict[str, ProbeRun] = {}
        self.heading = ""
        self.show_timings = True
        self._started = 0.0
        self._frame = 0
        self._timer: Timer | None = None

    def start(self, heading: str, names: list[str], *, animate: bool = True, show_timings: bool = True) -> None:
        self.heading, self.names, self.runs = heading, list(names), {}
        self.show_timings = show_timings
        self._started = time.perf_counter()
        self._frame = 0
        self.display = True
        if animate and self._timer is None:
            self._timer = self.set_interval(0.1, self._tick)
        self.refresh(layout=True)

    def finish(self, run: ProbeRun) -> None:
        self.runs[run.name] = run
        self.refresh(layout=True)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.display = False

    def _tick(self) -> None:
        self._frame += 1
        self.refresh()

    def render(self) -> Content:
        parts: list[str | tuple[str, str]] = [(self.heading, "bold")]
        if self.show_timings:
            parts.append((f" {time.perf_counter() - self._started:.1f} s", "$text-muted"))
        spinner = SPINNER[self._frame % len(SPINNER)] if self._timer is not None else "…"
        for name in self.names:
            run = self.runs.get(name)
            parts.append("   ")
            if run is None:
                parts.append((f"{spinner} {name}", "$text-muted"))
            elif run.ok:
                parts += [("✔ ", "$text-success"), name]
            elif run.skipped:
                parts.append((f"· {name}", "$text-muted"))
            else:
                parts.append((f"✖ {name}", "$text-error"))
            if run is not None and self.show_timings and not run.skipped:
                parts.append((f" {run.duration_s:.2f}s", "$text-muted"))
        return Content.assemble(*parts)
