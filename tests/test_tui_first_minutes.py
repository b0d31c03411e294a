"""Issue 13, as a new user met the app: the Fit tab's keys, and the answer the app leaves behind.

Each test replays what was seen (Pilot, recorded machines, no blink or animation) and checks what
users of such a tool expect instead:

- the first Tab in the Fit tab lands in the Model field, not on the tab bar; a character typed in a
  field (or on a choice) is the field's, never a global key (``e`` export, ``v`` view, ``q`` quit);
  Esc leaves the field, with or without a report; placeholders read as hints; the CPU RAM hint is
  what this machine has free;
- after ``q`` the verdict and the first fix command stay on the terminal; the top finding's fix and
  commands show without scrolling at 120x36 on every recorded machine; the header's labels never
  truncate; an info finding is not headed "Why it breaks bitsandbytes".
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Select, TabbedContent
from tui_support import SMALL, _quiet_app, asynctest, make_app, until  # noqa: F401 - _quiet_app: autouse fixture

from bnbdoctor.tui.app import DoctorApp
from bnbdoctor.tui.hostmem import meminfo_available
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.widgets import fit as fit_widget
from bnbdoctor.tui.widgets.fit import FitView


async def open_fit(app: DoctorApp, pilot: Any) -> FitView:
    await app.wait_for_report()
    await pilot.pause()
    tabs = app.main.query_one("#views", TabbedContent)
    while tabs.active != "fit":
        await pilot.press("v")
        await pilot.pause()
    assert await until(pilot, lambda: bool(app.main.query(FitView)) and app.focused is not None)
    return app.main.query_one(FitView)


# -- item 5: the Fit tab's keys --------------------------------------------------------------------


@pytest.mark.slow
@asynctest
async def test_first_tab_in_fit_lands_in_the_model_field_and_typing_stays_there() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        view = await open_fit(app, pilot)
        assert not isinstance(app.focused, Input)  # the tab lands on its results: v keeps switching
        await pilot.press("tab")
        assert app.focused is view.field("model")  # was: the tab bar, where typed text fired e, v, q
        await pilot.press(*"qevp19t?r")
        assert view.field("model").value == "qevp19t?r"
        assert app.is_running and not isinstance(app.screen, ExportScreen)
        assert app.main.query_one("#views", TabbedContent).active == "fit"
        assert not view.running  # r is a letter here, not a re-run (nor Ctrl+R)
        # every field and choice of the form keeps typed characters to itself
        for _ in range(8):
            await pilot.press("tab")
            if isinstance(app.focused, Select):
                break
        assert isinstance(app.focused, Select)
        await pilot.press("v", "e", "q")
        await pilot.pause()
        assert app.is_running and app.main.query_one("#views", TabbedContent).active == "fit"
        assert not isinstance(app.screen, ExportScreen)
        await pilot.press("space")  # a choice's own key still works: it opens
        await pilot.pause()
        assert app.focused is not None and app.focused.__class__.__name__ == "SelectOverlay"
        await pilot.press("escape")
        await pilot.pause()


@pytest.mark.slow
@asynctest
async def test_esc_leaves_a_fit_field_before_any_run() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        view = await open_fit(app, pilot)
        assert view.report is None
        await pilot.click("#fit-gpus")
        assert app.focused is view.field("gpus")
        await pilot.press("escape")  # was: nothing until a fit had run
        await pilot.pause()
        assert not isinstance(app.focused, (Input, Select))
        await pilot.press("v")  # out of the field, the global keys are back
        await pilot.pause()
        assert app.main.query_one("#views", TabbedContent).active == "findings"


@pytest.mark.slow
@asynctest
async def test_fit_placeholders_are_hints_and_cpu_ram_is_this_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fit_widget, "free_ram_bytes", lambda: 62 * 1024**3)
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        view = await open_fit(app, pilot)
        assert view.field("cpu").placeholder == "this machine's: 62.00 GiB free"
        for name in ("gpus", "max-memory"):
            assert view.field(name).placeholder.startswith("e.g. ")
        assert "folder" in view.field("model").placeholder
        style = view.field("gpus").get_component_rich_style("input--placeholder")
        assert style.italic


def test_cpu_hint_without_an_answer_still_says_what_the_default_is() -> None:
    assert fit_widget.cpu_hint(None) == "this machine's free RAM"
    text = "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8388608 kB\n"
    assert meminfo_available(text) == 8 * 1024**3
    assert meminfo_available("MemTotal: 1 kB\n") is None
