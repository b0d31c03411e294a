"""Shared helpers for the TUI tests: a quiet app (no blink or animation), an app on a recorded
machine, a recorder of notifications, and waiting for a state the app reaches in several steps."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.tui.app import DoctorApp
from bnbdoctor.tui.fleet_app import FleetApp
from bnbdoctor.tui.session import Session

SIZE = (100, 34)
SMALL = (80, 24)


def asynctest(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test in its own event loop (no pytest async plugin needed)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


@pytest.fixture(autouse=True)
def _quiet_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """No blinking cursor, spinner or animation: pilot runs and snapshots stay deterministic."""
    for app in (DoctorApp, FleetApp):
        monkeypatch.setattr(app, "CURSOR_BLINK", False)
        monkeypatch.setattr(app, "ANIMATE", False)


async def until(pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Pause until ``condition()`` holds (True), or ``timeout`` seconds pass (False). For a state the
    app reaches through several events, such as a tab mounted, then focused: one ``pilot.pause()``
    waits for the messages queued so far, not for the ones those messages post in turn."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.02)
    return True


def make_app(fixture: str = "a100-healthy", tmp_path: Path | None = None, **session: Any) -> DoctorApp:
    return DoctorApp(Session(host=FixtureHost.named(fixture), **session), show_timings=False, export_dir=tmp_path)


class Notes:
    """Records the app's notifications (the toasts themselves are off under run_test)."""

    def __init__(self, app: DoctorApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[dict[str, Any]] = []
        original = app.notify

        def notify(message: str, **kwargs: Any) -> None:
            self.calls.append({"message": message, **kwargs})
            original(message, **kwargs)

        monkeypatch.setattr(app, "notify", notify)

    @property
    def last(self) -> dict[str, Any]:
        assert self.calls, "no notification"
        return self.calls[-1]
