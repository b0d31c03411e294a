"""The TUI's Explain and Fit tabs: pilot tests and one SVG snapshot.

Conventions as in tests/test_tui.py: recorded machines only for the probes, cursor blink, spinner
and animations off (autouse fixture), durations hidden (``show_timings=False``), workers awaited
explicitly (``ToolView.wait``). The Fit tab runs the real ``bnbdoctor fit`` engine (transformers
and accelerate on the meta device, about 5 s a run) on the tiny Llama config of tests/data/fit.
Regenerate the snapshot with ``pytest tests/test_tui_tabs.py --snapshot-update`` after a deliberate
change of the UI or of the installed transformers (the ValueError text is transformers').
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from textual import events
from textual.widgets import (
    DataTable,
    Input,
    OptionList,
    Static,
    TabbedContent,
    TextArea,
    Tree,
)
from tui_support import SIZE, SMALL, Notes, _quiet_app, asynctest, make_app  # noqa: F401 - _quiet_app: autouse fixture

from bnbdoctor.render.fit_lines import device_map_lines
from bnbdoctor.tui.app import DoctorApp
from bnbdoctor.tui.screens.help import KEYS, VIEWS_TEXT
from bnbdoctor.tui.screens.main import VIEWS, DiagnosisScreen
from bnbdoctor.tui.widgets import fit as fit_widget
from bnbdoctor.tui.widgets.explain import EMPTY_LOG, NO_FAILURE, ExplainView
from bnbdoctor.tui.widgets.fit import FitView

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "real_logs"
#: The tiny Llama of the fit tests (tests/test_fit.py): with 4 GiB of CPU RAM, one GPU with 45 MiB
#: free fits it; 40 MiB raises the dispatch ValueError.
TINY = ROOT / "tests" / "data" / "fit" / "tiny-llama.json"


async def ready(app: DoctorApp, pilot: Any) -> None:
    await app.wait_for_report()
    await pilot.pause()


async def open_tab(app: DoctorApp, pilot: Any, view: str) -> None:
    """Press v until ``view`` shows, as a user would."""
    tabs = app.main.query_one("#views", TabbedContent)
    for _ in VIEWS:
        if tabs.active == view:
            break
        await pilot.press("v")
        await pilot.pause()
    assert tabs.active == view


def explain_view(app: DoctorApp) -> ExplainView:
    return app.main.query_one(ExplainView)


def fit_view(app: DoctorApp) -> FitView:
    return app.main.query_one(FitView)


async def finished(view: Any, pilot: Any) -> None:
    await view.wait()
    await pilot.pause()
    assert not view.running


def plain(widget: Static) -> str:
    """What a Static shows, as text (a Rich renderable or Content)."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    content = widget.content
    console.print(content if not hasattr(content, "plain") else content.plain)
    return buffer.getvalue()


def cxxabi_log() -> str:
    """The real log, without the first line (where the test data says it came from)."""
    text = (LOGS / "cxxabi_not_found.txt").read_text(encoding="utf-8")
    first, rest = text.split("\n", 1)
    assert first.startswith("# source:")
    return rest


# -- Explain --------------------------------------------------------------------------------------


@pytest.mark.slow
@asynctest
async def test_explain_a_pasted_log_ranks_the_root_cause_first(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await open_tab(app, pilot, "explain")
        view = explain_view(app)
        assert app.main.has_class("-tool")  # the probes' summary is not shown over this tab
        await pilot.click("#explain-log")
        assert view.log_area.has_focus
        app.post_message(events.Paste(cxxabi_log()))  # as a terminal's bracketed paste arrives
        await pilot.pause()
        assert view.log_area.text == cxxabi_log()
        await pilot.press("ctrl+r")
        await finished(view, pilot)
        entries = view.findings.entries
        assert [e.rule_id for e in entries][:1] == ["BNB306"]
        top = entries[0].finding
        assert top is not None and top.rank == 1 and top.confidence == "high"
        assert 8 in top.log_lines  # the CXXABI line of the pasted text
        # the list shows the confidence and the lines; the detail adds what to run on the machine
        prompt = str(view.findings.get_option_at_index(0).prompt)
        assert "BNB306" in prompt and "high confidence" in prompt and "log lines 8" in prompt
        assert view.findings.has_focus and view.findings.selected == entries[0]
        text = view.detail.plain
        assert "Confidence high" in text and "log lines 8" in text
        assert "Check on the machine" in text and "$ bnbdoctor --rule BNB306" in text
        # the log box selects the first line the finding rests on
        assert view.log_area.selection.end == (7, 0)
        assert "CXXABI_1.3.9" in view.log_area.selected_text
        status = str(view.status.render())
        assert "1 error" in status and "root cause first" in status and NO_FAILURE not in status
        # c copies the finding's first command, 2 the second
        notes = Notes(app, monkeypatch)
        await pilot.press("c")
        assert app.clipboard == top.remediation.commands[0]
        assert notes.last["title"] == "Copied to the clipboard"
        await pilot.press("2")
        assert app.clipboard == top.remediation.commands[1]


@pytest.mark.slow
@pytest.mark.parametrize("pasted", ["", "hello there\x00\x01\x02 \x1b[31mnot a log\x1b[0m\nlorem ipsum\n"])
def test_explain_without_a_known_failure_says_so(pasted: str) -> None:
    async def run() -> None:
        app = make_app()
        async with app.run_test(size=SMALL) as pilot:
            await ready(app, pilot)
            await open_tab(app, pilot, "explain")
            view = explain_view(app)
            if pasted:
                app.post_message(events.Paste(pasted))  # outside the log box: it becomes the log
                await pilot.pause()
                assert view.log_area.has_focus and view.log_area.text == pasted
            await pilot.press("ctrl+r")
            await finished(view, pilot)
            assert view.report is not None and view.error is None
            assert view.findings.entries == []
            # As the CLI says it: an empty log has nothing to explain; a log without an error is clean.
            answer = EMPTY_LOG if not pasted.strip() else NO_FAILURE
            assert answer in str(view.status.render())
            assert answer in str(view.findings.get_option_at_index(0).prompt)
            assert answer in view.detail.plain

    asyncio.run(run())


@pytest.mark.slow
@asynctest
async def test_explain_loads_a_log_file_and_a_missing_one_is_a_notification(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        notes = Notes(app, monkeypatch)
        await open_tab(app, pilot, "explain")
        view = explain_view(app)
        await pilot.click("#explain-path")
        view.path_input.value = str(LOGS / "cxxabi_not_found.txt")
        await pilot.press("enter")
        await finished(view, pilot)
        assert view.findings.entries[0].rule_id == "BNB306"
        assert view.log_area.text.startswith("# source:")  # the file, as it is: its lines keep their numbers
        first = view.findings.entries[0].finding
        assert first is not None and 9 in first.log_lines
        view.path_input.value = str(LOGS / "no-such-log.txt")
        await pilot.click("#explain-load")
        await finished(view, pilot)
        assert notes.last["severity"] == "warning" and "no such file" in notes.last["message"]
        assert "\n" not in notes.last["message"]
        assert view.findings.entries[0].rule_id == "BNB306"  # the last report stays
        assert app.is_running


# -- Fit -------------------------------------------------------------------------------------------


def test_fit_form_offers_what_bnbdoctor_fit_accepts() -> None:
    from bnbdoctor.fit.options import DEVICE_MAPS, QUANTS

    assert fit_widget.QUANTS == QUANTS and fit_widget.DEVICE_MAPS == DEVICE_MAPS
    options = fit_widget.fit_options(" m ", "8bit", "sequential", gpus="2x24GiB ", cpu_memory="", max_memory=" ")
    assert (options.model, options.quant, options.device_map, options.gpus) == ("m", "8bit", "sequential", "2x24GiB")
    assert options.cpu_memory is None and options.max_memory is None


@pytest.mark.slow
@asynctest
async def test_fit_shows_the_verdict_budgets_map_and_copies_a_remedy(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        notes = Notes(app, monkeypatch)
        await open_tab(app, pilot, "fit")
        view = fit_view(app)
        # a quick fit: typed into the form, Enter runs it
        await pilot.click("#fit-model")
        view.field("model").value = str(TINY)[:-4]
        await pilot.press(*"json")
        assert view.field("model").value == str(TINY)
        view.field("gpus").value = "45MiB"
        view.field("cpu").value = "4GiB"
        await pilot.press("enter")
        assert view.running
        await finished(view, pilot)
        assert view.error is None and view.report is not None
        fit = view.report.facts.fit
        assert fit is not None and fit.verdict == "fits"
        assert str(view.query_one("#fit-verdict").render()).startswith("✔ fits")
        assert not view.query_one("#fit-error").display
        assert not view.remedies_list.display
        assert view.query_one("#fit-budgets", DataTable).row_count == len(fit.devices) == 2
        # the same model on 40 MiB raises; Ctrl+R runs from anywhere in the tab
        view.field("gpus").value = "40MiB"
        await pilot.press("ctrl+r")
        await finished(view, pilot)
        fit = view.report.facts.fit
        assert fit is not None and fit.verdict == "raises" and view.runs == 2
        assert str(view.query_one("#fit-verdict").render()).startswith("✖ raises ValueError")
        error = str(view.query_one("#fit-error").render())
        assert error.startswith("ValueError: Some modules are dispatched on the CPU or the disk")
        assert fit.error_text is not None and error == f"ValueError: {fit.error_text.strip()}"
        budgets = view.query_one("#fit-budgets", DataTable)
        assert budgets.row_count == len(fit.devices)
        assert [str(budgets.get_row_at(i)[0]) for i in range(budgets.row_count)] == ["GPU 0", "cpu"]
        assert str(budgets.get_row_at(0)[-1]).startswith("model.layers.")  # why the packer left GPU 0
        device_map = view.query_one("#fit-map", Tree)
        rows = device_map_lines(fit.placement)
        assert len(device_map.root.children) == len(rows) and {device for _, device in rows} == {"0", "cpu"}
        assert str(device_map.root.label).startswith(f"Predicted device map: {len(rows)} entries (")
        assert device_map.root.is_expanded == (len(rows) <= fit_widget.OPEN_MAP_ROWS)
        assert "model.embed_tokens.weight" in plain(view.query_one("#fit-tensors", Static))
        # the remedies that pass, with their code; c copies the highlighted one, 2 the second
        remedies = [r for r in fit.remedies if r.status == "passes"]
        assert remedies and view.remedies_list.display and view.remedies_list.has_focus
        assert view.remedies_list.option_count == len(remedies)
        await pilot.press("c")
        assert app.clipboard == remedies[0].code and "from_pretrained(" in app.clipboard
        assert notes.last["title"] == "Copied to the clipboard"
        assert notes.last["message"] == f"Remedy 1: {remedies[0].title}"
        with_code = [n for n, r in enumerate(remedies, 1) if r.code and n > 1]
        if with_code:
            await pilot.press(str(with_code[0]))
            assert app.clipboard == remedies[with_code[0] - 1].code
        await pilot.press("down")
        await pilot.pause()
        assert remedies[1].title in str(view.remedies_list.get_option_at_index(1).prompt)
        assert remedies[1].detail.split(".")[0] in str(view.query_one("#fit-code").render())
        await pilot.press("9")  # no ninth remedy: a warning, the clipboard unchanged
        assert notes.last["severity"] == "warning"


@pytest.mark.slow
@asynctest
async def test_fit_bad_input_is_a_one_line_notification(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        notes = Notes(app, monkeypatch)
        await open_tab(app, pilot, "fit")
        view = fit_view(app)
        await pilot.press("ctrl+r")  # no model yet: said at once, nothing runs
        assert not view.running and "model folder" in notes.last["message"]
        view.set_form(str(ROOT / "no" / "such" / "model"), gpus="24GiB")
        await pilot.press("ctrl+r")
        await finished(view, pilot)
        assert notes.last["severity"] == "warning" and "no such file or folder" in notes.last["message"]
        assert "\n" not in notes.last["message"] and view.error == notes.last["message"]
        view.set_form(str(TINY), gpus="24 gigs")
        await pilot.press("ctrl+r")
        await finished(view, pilot)
        assert "--gpus" in notes.last["message"] and "not a memory size" in notes.last["message"]
        assert view.report is None and app.is_running
        await pilot.press("c")  # nothing to copy yet
        assert notes.last["severity"] == "warning"


@pytest.mark.slow
@asynctest
async def test_quitting_while_a_fit_runs_is_immediate() -> None:
    pytest.importorskip("transformers")
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await open_tab(app, pilot, "fit")
        fit_view(app).set_form(str(TINY), gpus="45MiB", cpu_memory="4GiB")
        await pilot.press("ctrl+r")
        await pilot.pause(0.2)
        view = fit_view(app)
        assert view.running
        # Timed from the key press, not from the app's start (which a loaded box stretches): quitting
        # must not wait for the fit's interpreter, which takes several seconds to answer.
        started = time.perf_counter()
        await pilot.press("q")
    assert time.perf_counter() - started < 4
    assert view.report is None  # the fit was abandoned, not waited for


# -- keys ------------------------------------------------------------------------------------------


@pytest.mark.slow
@asynctest
async def test_v_cycles_all_four_tabs_and_run_shows_only_where_it_applies() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        tabs = app.main.query_one("#views", TabbedContent)
        seen = []
        for _ in range(len(VIEWS)):
            seen.append(tabs.active)
            shown = {binding.binding.action for binding in app.active_bindings.values() if binding.enabled}
            assert ("run_tool" in shown) is (tabs.active in ("explain", "fit"))
            assert ("toggle_checks" in shown) is (tabs.active not in ("explain", "fit"))
            # the tab lands on a list, not a text field: v keeps switching
            assert not isinstance(app.focused, (Input, TextArea))
            await pilot.press("v")
            await pilot.pause()
        assert seen == list(VIEWS) and tabs.active == "findings"
        # Esc leaves the log box for the findings
        await open_tab(app, pilot, "explain")
        await pilot.click("#explain-log")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.focused, OptionList) and isinstance(app.screen, DiagnosisScreen)


def test_help_describes_the_explain_and_fit_tabs() -> None:
    groups = dict(KEYS)
    assert "Explain" in groups and "Fit" in groups
    assert any("Ctrl+R" in keys for keys, _ in groups["Explain"])
    assert any("remedy" in what for _, what in groups["Fit"])
    assert "Explain" in VIEWS_TEXT.plain and "Fit" in VIEWS_TEXT.plain


# -- snapshot -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_snapshot_fit_tab_after_a_run(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    monkeypatch.chdir(ROOT)  # a relative model path: the remedies' code is the same on every machine
    monkeypatch.setattr(fit_widget, "free_ram_bytes", lambda: 64 * 1024**3)  # the CPU RAM hint: not this machine's

    async def run_fit(pilot: Any) -> None:
        app = pilot.app
        await ready(app, pilot)
        await open_tab(app, pilot, "fit")
        view = fit_view(app)
        # max_memory with a cpu budget: nothing depends on this machine's RAM
        view.set_form("tests/data/fit/tiny-llama.json", max_memory="0=35MiB,cpu=4GiB")
        await pilot.press("ctrl+r")
        await finished(view, pilot)
        assert view.report is not None and view.report.facts.fit is not None
        assert view.report.facts.fit.verdict == "raises"

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_fit)
