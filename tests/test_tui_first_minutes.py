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

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from pinned_rules import pinned_rules
from textual.widgets import Input, Select, Static, TabbedContent
from tui_support import SMALL, _quiet_app, asynctest, make_app, until  # noqa: F401 - _quiet_app: autouse fixture

from bnbdoctor.findings import Finding, Severity
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.render.text import machine_lines
from bnbdoctor.report import Report
from bnbdoctor.rules.base import Rule
from bnbdoctor.tui.app import DoctorApp
from bnbdoctor.tui.farewell import farewell_lines, top_findings
from bnbdoctor.tui.hostmem import meminfo_available
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.session import Session
from bnbdoctor.tui.widgets import fit as fit_widget
from bnbdoctor.tui.widgets.detail import FindingDetail, detail_blocks
from bnbdoctor.tui.widgets.findings import Entry
from bnbdoctor.tui.widgets.fit import FitView

ROOT = Path(__file__).resolve().parents[1]


def plain(widget: Static) -> str:
    content = widget.content
    return str(getattr(content, "plain", content))


def focused(app: DoctorApp) -> Any:
    """The focused widget, as the test's steps change it (not narrowed by an earlier assert)."""
    return app.focused


async def open_fit(app: DoctorApp, pilot: Any) -> FitView:
    await app.wait_for_report()
    await pilot.pause()
    tabs = app.main.query_one("#views", TabbedContent)
    while tabs.active != "fit":
        await pilot.press("v")
        await pilot.pause()
    assert await until(pilot, lambda: bool(app.main.query(FitView)) and app.focused is not None)
    return app.main.query_one(FitView)


@pytest.mark.slow
@asynctest
async def test_first_tab_in_explain_lands_in_the_log_file_field_and_typing_stays_there() -> None:
    """Issue 25 item 7: the first Tab reached the detail pane, so a typed file name fired global keys (q quit)."""
    from bnbdoctor.tui.widgets.explain import ExplainView

    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await app.wait_for_report()
        await pilot.pause()
        tabs = app.main.query_one("#views", TabbedContent)
        while tabs.active != "explain":
            await pilot.press("v")
            await pilot.pause()
        assert await until(pilot, lambda: bool(app.main.query(ExplainView)) and app.focused is not None)
        view = app.main.query_one(ExplainView)
        assert not isinstance(app.focused, Input)  # the tab lands on its results: v keeps switching
        await pilot.press("tab")
        assert app.focused is view.path_input
        await pilot.press(*"quiet.log")
        assert view.path_input.value == "quiet.log" and app.is_running
        await pilot.press("tab")
        assert app.focused is not view.path_input  # later Tabs move on as before


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
            if isinstance(focused(app), Select):
                break
        assert isinstance(focused(app), Select)
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
        assert focused(app) is view.field("gpus")
        await pilot.press("escape")  # was: nothing until a fit had run
        await pilot.pause()
        assert not isinstance(focused(app), (Input, Select))
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


# -- item 9: the answer stays, and shows without scrolling -------------------------------------------

FIXTURES = sorted(p.name for p in (ROOT / "platform_fixtures").iterdir() if (p / "machine.json").is_file())


def fix_laid_out(app: DoctorApp) -> bool:
    return all(w.region.height for w in fix_widgets(app))


def fix_widgets(app: DoctorApp) -> list[Static]:
    """The detail pane's Fix section: its heading, its text, its commands and the copy hint."""
    statics = list(app.main.query_one("#detail", FindingDetail).query(Static))
    start = next((i for i, s in enumerate(statics) if s.has_class("detail-section") and plain(s) == "Fix"), None)
    if start is None:
        return []
    shown = [statics[start]]
    for widget in statics[start + 1 :]:
        if widget.has_class("detail-section"):
            break
        shown.append(widget)
    return shown


@pytest.mark.slow
@asynctest
async def test_the_top_findings_fix_shows_without_scrolling_at_120x36_on_every_recorded_machine() -> None:
    hidden: dict[str, list[str]] = {}
    checked = 0
    for fixture in FIXTURES:
        app = make_app(fixture)
        async with app.run_test(size=(120, 36)) as pilot:
            report = await app.wait_for_report()
            await pilot.pause()
            assert report is not None
            if not report.findings:
                continue
            pane = app.main.query_one("#detail", FindingDetail)
            assert pane.entry is not None and pane.entry.finding is report_top(report)
            widgets = fix_widgets(app)
            if not report_top(report).remediation.commands and not widgets:
                continue
            assert widgets, fixture
            checked += 1
            await until(pilot, partial(fix_laid_out, app), timeout=5)
            widgets = fix_widgets(app)
            visible = pane.content_region
            out = [plain(w) for w in widgets if not visible.contains_region(w.region) or w.region.height == 0]
            if out or pane.scroll_y:
                hidden[fixture] = out
    assert checked > 20 and not hidden


def report_top(report: Report) -> Finding:
    return top_findings(report)[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fixture", "width"), [("mixed-gt1030-a6000-bnb042", 100), ("windows-bnb041", 100), ("windows-bnb041", 120)]
)
def test_header_labels_never_truncate_values_wrap(fixture: str, width: int) -> None:
    async def run() -> None:
        app = make_app(fixture)
        async with app.run_test(size=(width, 40)) as pilot:
            report = await app.wait_for_report()
            await pilot.pause()
            assert report is not None
            machine = app.main.query_one("#machine", Static)
            assert machine.display
            shown = [line.rstrip() for line in machine_text(machine, width)]
            for label, value in machine_lines(report):
                assert any(line.lstrip().startswith(f"{label} ") for line in shown), (label, shown)
                assert value.split()[-1].rstrip(",;") in " ".join(shown)  # the end of the value shows
            assert not any("…" in line for line in shown)

    asyncio.run(run())


def machine_text(machine: Static, width: int) -> list[str]:
    """What the machine header shows, line by line, at its width on the screen."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=machine.content_region.width, color_system=None).print(machine.content)
    return buffer.getvalue().splitlines()


def test_an_info_finding_is_not_headed_why_it_breaks_bitsandbytes() -> None:
    info = Finding(rule_id="BNB999", rule_name="just-so", severity=Severity.INFO, title="t", explanation="x")
    text = "\n".join(b.plain for b in detail_blocks(Entry("finding", 0, finding=info)))
    assert "Why it breaks bitsandbytes" not in text and "Why it matters" in text
    error = Finding(rule_id="BNB998", rule_name="bad", severity=Severity.ERROR, title="t", explanation="x")
    assert "Why it breaks bitsandbytes" in "\n".join(b.plain for b in detail_blocks(Entry("finding", 0, finding=error)))


def test_farewell_leaves_the_verdict_and_the_first_fix_command() -> None:
    report = diagnose_fixture("transformers5-bnb0455", pinned_rules())  # the counts below are of the pinned rules
    lines = farewell_lines(report, "fixture transformers5-bnb0455")
    top = report_top(report)
    assert lines[0] == "bnbdoctor (fixture transformers5-bnb0455): ✖ 1 error, 0 warnings, 33 checks passed, 7 skipped"
    assert lines[1] == f"✖ {top.rule_id}  {top.title}"
    assert lines[2] == f"  $ {top.remediation.commands[0]}" and "bitsandbytes>=" in lines[2]
    # a top finding without a command: its fix in words, never another finding's command
    kepler = diagnose_fixture("kepler-k80")
    top = report_top(kepler)
    assert not top.remediation.commands
    assert farewell_lines(kepler, "k")[2] == f"  fix: {' '.join(top.remediation.text.split())}"
    healthy = farewell_lines(diagnose_fixture("a100-healthy"), "fixture a100-healthy")
    assert healthy[0].startswith("bnbdoctor (fixture a100-healthy): ✔ 0 errors")
    assert farewell_lines(None, "this machine") == ["bnbdoctor (this machine): quit before the report was ready."]
    assert farewell_lines(None, "this machine", "OSError: x") == ["bnbdoctor (this machine) failed: OSError: x"]


def diagnose_fixture(name: str, rules: list[Rule] | None = None) -> Report:
    return Session(host=FixtureHost.named(name), rules=rules).diagnose()


@pytest.mark.slow
def test_after_q_the_terminal_keeps_the_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bnbdoctor.tui.run as the CLI calls it, headless, quit with q once the report shows."""
    from bnbdoctor import tui

    original = DoctorApp.run

    def run_headless(self: DoctorApp, **kwargs: Any) -> Any:
        async def press_q(pilot: Any) -> None:
            await self.wait_for_report()
            await pilot.pause()
            await pilot.press("q")

        return original(self, headless=True, size=(120, 36), auto_pilot=press_q)

    monkeypatch.setattr(DoctorApp, "run", run_headless)
    code = tui.run(FixtureHost.named("transformers5-bnb0455"))
    out = capsys.readouterr().out
    report = diagnose_fixture("transformers5-bnb0455")
    assert code == 1
    top = report_top(report)
    assert "✖" in out and f"{top.rule_id}  {top.title}" in out
    assert f"$ {top.remediation.commands[0]}" in out
