"""The TUI (bnbdoctor/tui): pilot tests on recorded machines, and SVG snapshots.

Only fixture data, never the live machine. Cursor blink, spinner and animations are off (autouse
fixture), workers are awaited explicitly (``DoctorApp.wait_for_report``), and durations are hidden
(``show_timings=False``) so snapshots do not change from run to run. Regenerate snapshots with
``pytest tests/test_tui.py --snapshot-update`` after a deliberate change of rules, fixtures or UI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input, Label, RadioButton, TabbedContent
from tui_support import (  # noqa: F401 - _quiet_app: the autouse fixture
    SIZE,
    SMALL,
    Notes,
    _quiet_app,
    asynctest,
    make_app,
    until,
)

from bnbdoctor.catalog import entry_url
from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.base import NvmlAnswer
from bnbdoctor.hosts.fixture import FixtureHost, resolve_fixture
from bnbdoctor.render import OutputFormat, ReportKind, render
from bnbdoctor.render.formats import app_exports
from bnbdoctor.report import ExitCode, Report
from bnbdoctor.serde import to_jsonable
from bnbdoctor.tui import export as export_mod
from bnbdoctor.tui import factstree
from bnbdoctor.tui.app import DoctorApp
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.screens.help import HelpScreen
from bnbdoctor.tui.screens.main import DiagnosisScreen
from bnbdoctor.tui.session import Session
from bnbdoctor.tui.widgets.detail import FindingDetail
from bnbdoctor.tui.widgets.facts import FactsView
from bnbdoctor.tui.widgets.findings import Entry, FindingsList
from bnbdoctor.tui.widgets.progress import ProbeProgress

ROOT = Path(__file__).resolve().parents[1]


async def ready(app: DoctorApp, pilot: Any) -> Report:
    report = await app.wait_for_report()
    await pilot.pause()
    assert report is not None
    return report


def findings_list(app: DoctorApp) -> FindingsList:
    return app.main.query_one(FindingsList)


def selected(app: DoctorApp) -> Entry:
    entry = findings_list(app).selected
    assert entry is not None, "nothing highlighted"
    return entry


def detail(app: DoctorApp) -> FindingDetail:
    return app.main.query_one(FindingDetail)


# -- the data layer: no Textual ----------------------------------------------------------------------


def test_data_layer_never_imports_textual() -> None:
    code = (
        "import sys\n"
        "import bnbdoctor.tui.session, bnbdoctor.tui.export, bnbdoctor.tui.factstree\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_facts_tree_search_keeps_matches_and_their_ancestors() -> None:
    report = diagnose(FixtureHost.named("kepler-k80"))
    root = factstree.build(to_jsonable(report.facts), show_timings=False)
    shown, count = factstree.search(root, "driver_version")
    assert count == 1
    [gpu] = shown.children
    assert gpu.key == "gpu" and [child.path for child in gpu.children] == ["gpu.driver_version"]
    assert factstree.search(root, "gpu.devices[1]")[1] == 1  # a dotted path finds the node, not its children
    assert factstree.search(root, "no such fact anywhere")[1] == 0
    durations = [node for node in root.walk() if node.key == "duration_s"]
    assert durations and all(node.value == "(hidden)" for node in durations)


def test_export_formats_come_from_the_one_table(tmp_path: Path) -> None:
    report = diagnose(FixtureHost.named("kepler-k80"))
    assert list(app_exports(ReportKind.DOCTOR)) == [OutputFormat.JSON, OutputFormat.MARKDOWN]
    doctor = ReportKind.DOCTOR
    assert export_mod.format_for_path("x.md", doctor) is OutputFormat.MARKDOWN
    assert export_mod.format_for_path("x.json", doctor) is OutputFormat.JSON
    assert export_mod.format_for_path("x.txt", doctor) is None  # the doctor's app writes no text
    written = export_mod.export_report(report, tmp_path / "r.txt")  # no format the app writes: JSON, the first
    assert json.loads(written.read_text())["summary"]["errors"] == report.summary.errors
    with pytest.raises(export_mod.ExportError, match=r"^the app does not export sarif \(it writes json, markdown\)$"):
        export_mod.export_report(report, tmp_path / "r.sarif", OutputFormat.SARIF)
    with pytest.raises(export_mod.ExportError, match="cannot write"):
        export_mod.export_report(report, tmp_path / "missing" / "r.json")
    assert not (tmp_path / "r.sarif").exists()
    assert (
        export_mod.default_export_path(report, OutputFormat.JSON, tmp_path).name == "bnbdoctor-fixture-kepler-k80.json"
    )


def test_session_exit_code_follows_the_last_report() -> None:
    session = Session(host=FixtureHost.named("driver-cuda118-torch-cu124"))
    assert session.exit_code(None) is ExitCode.OK
    report = session.diagnose()
    assert report.summary.errors and session.exit_code(report) is ExitCode.FINDINGS
    with pytest.raises(ValueError, match="a session needs a host"):
        Session()


# -- pilot tests ----------------------------------------------------------------------------------------


@asynctest
async def test_findings_come_first_then_checks_and_navigation_follows() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        assert isinstance(app.screen, DiagnosisScreen)
        keys = findings_list(app).entry_keys
        finding_ids = [f.rule_id for f in report.findings]
        assert [k.split("-")[1] for k in keys[: len(finding_ids)]] == finding_ids
        assert all(k.startswith("passed-") for k in keys[len(finding_ids) : len(finding_ids) + len(report.passed)])
        assert keys[-1].startswith("skipped-")
        # the first error is selected and shown
        assert selected(app).rule_id == report.findings[0].rule_id
        shown = detail(app).entry
        assert shown is not None and shown.rule_id == report.findings[0].rule_id
        # down skips the group heading and separator, and the detail follows
        await pilot.press("down")
        await pilot.pause()
        assert selected(app).rule_id == report.findings[1].rule_id
        assert report.findings[1].title in detail(app).plain
        await pilot.press("down")
        await pilot.pause()
        assert selected(app).kind == "passed"
        assert "PASSED" in detail(app).plain
        await pilot.press("end")
        await pilot.pause()
        assert selected(app).kind == "skipped"
        assert "Why it did not run" in detail(app).plain
        await pilot.press("home")
        await pilot.pause()
        assert selected(app).rule_id == report.findings[0].rule_id


@pytest.mark.slow
@asynctest
async def test_detail_pane_shows_why_evidence_fix_commands_and_doc() -> None:
    app = make_app("driver-cuda118-torch-cu124")
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        finding = next(f for f in report.findings if f.rule_id == "BNB102")
        assert findings_list(app).select_key("finding-BNB102-0")
        await pilot.pause()
        text = detail(app).plain
        assert "ERROR  BNB102" in text
        assert finding.title in text
        assert "Why it breaks bitsandbytes" in text and finding.explanation in text
        for item in finding.evidence:
            assert f"{item.label}: {item.value}" in text
        assert finding.remediation.text in text
        assert finding.remediation.commands
        for number, command in enumerate(finding.remediation.commands, 1):
            assert f"{number} $ {command}" in text
        assert finding.doc == "bnbdoctor rule BNB102" and finding.doc in text
        assert "Catalog" in text and finding.covers
        for entry_id in finding.covers:  # each id with the link to its entry in docs/catalog.md
            assert f"• {entry_id}  {entry_url(entry_id)}" in text
        # the pane renders the same blocks as widgets
        rendered = app.main.query_one("#detail").query(".detail-command")
        assert len(rendered) == len(finding.remediation.commands)


@pytest.mark.slow
@asynctest
async def test_detail_pane_for_kepler_names_the_compute_capability() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert selected(app).rule_id == "BNB103"
        text = detail(app).plain
        assert "Tesla K80" in text and "gpu.devices[0]" in text and "bnbdoctor rule BNB103" in text


@asynctest
async def test_copy_puts_the_command_on_the_clipboard_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app("driver-cuda118-torch-cu124")
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        notes = Notes(app, monkeypatch)
        commands = next(f for f in report.findings if f.rule_id == "BNB102").remediation.commands
        assert len(commands) >= 2
        findings_list(app).select_key("finding-BNB102-0")
        await pilot.pause()
        await pilot.press("c")
        assert app.clipboard == commands[0]
        assert notes.last["title"] == "Copied to the clipboard" and notes.last["message"] == commands[0]
        await pilot.press("2")
        assert app.clipboard == commands[1]
        await pilot.press("9")  # no ninth command: a warning, clipboard unchanged
        assert app.clipboard == commands[1]
        assert notes.last["severity"] == "warning"
        # a passed check has no command
        await pilot.press("end")
        await pilot.pause()
        await pilot.press("c")
        assert app.clipboard == commands[1] and "no command" in notes.last["message"]


@pytest.mark.slow
@asynctest
async def test_copy_uses_osc52(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app("driver-cuda118-torch-cu124")
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        findings_list(app).select_key("finding-BNB102-0")
        await pilot.pause()
        await pilot.press("c")
        assert copied == ["nvidia-smi"]


@pytest.mark.slow
@asynctest
async def test_export_writes_the_report_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app("kepler-k80", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        notes = Notes(app, monkeypatch)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        path_input = app.screen.query_one("#export-path", Input)
        assert path_input.value == str(tmp_path / "bnbdoctor-fixture-kepler-k80.json")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DiagnosisScreen)
        written = tmp_path / "bnbdoctor-fixture-kepler-k80.json"
        data = json.loads(written.read_text(encoding="utf-8"))
        assert data["summary"]["errors"] == report.summary.errors
        assert [f["rule_id"] for f in data["findings"]] == [f.rule_id for f in report.findings]
        assert notes.last["title"] == "Exported" and str(written) in notes.last["message"]
        # a relative name lands in the export folder; Escape cancels
        assert app.export("other.json") == tmp_path / "other.json" and (tmp_path / "other.json").is_file()
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DiagnosisScreen)
        # an unwritable path is a notification, not a crash
        assert app.export(tmp_path / "no" / "such" / "dir.json") is None
        assert notes.last["severity"] == "error"


@pytest.mark.slow
@asynctest
async def test_export_dialog_offers_every_format_the_app_writes(tmp_path: Path) -> None:
    app = make_app("kepler-k80", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        buttons = {button.name: button for button in screen.query(RadioButton)}
        assert list(buttons) == [fmt.value for fmt in app_exports(ReportKind.DOCTOR)]
        buttons["markdown"].value = True  # choosing a format changes the suffix
        await pilot.pause()
        assert screen.query_one("#export-path", Input).value.endswith("bnbdoctor-fixture-kepler-k80.md")
        await pilot.click("#export-ok")
        await pilot.pause()
        written = tmp_path / "bnbdoctor-fixture-kepler-k80.md"
        assert app.report is not None
        text = written.read_text(encoding="utf-8")
        # exports leave the machine: they are redacted like --markdown (the fixture's home folder is gone)
        assert text == render(app.session.shareable(app.report), OutputFormat.MARKDOWN, ReportKind.DOCTOR)
        assert "redacted)" in text and "/home/azureuser" not in text


@pytest.mark.slow
@asynctest
async def test_rerun_probes_again_and_keeps_the_selection() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        first = await ready(app, pilot)
        await pilot.press("down")
        await pilot.pause()
        chosen = selected(app)
        await pilot.press("r")
        second = await ready(app, pilot)
        assert app.runs == 2 and second is not first
        assert second.summary == first.summary
        assert selected(app).key == chosen.key
        assert not app.main.query_one(ProbeProgress).display


@pytest.mark.slow
@asynctest
async def test_a_ready_report_is_shown_without_probing_and_rerun_reapplies_rules() -> None:
    report = diagnose(FixtureHost.named("kepler-k80"))
    app = DoctorApp(Session(report=report), show_timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.report is report and app.runs == 0 and not app.running
        assert selected(app).rule_id == report.findings[0].rule_id
        assert app.sub_title == "fixture kepler-k80 (recorded)"
        await pilot.press("r")
        again = await ready(app, pilot)
        assert app.runs == 1 and again is not report and again.facts is report.facts
        assert [f.rule_id for f in again.findings] == [f.rule_id for f in report.findings]
        assert app.exit_code is ExitCode.FINDINGS


@pytest.mark.slow
@asynctest
async def test_help_screen_opens_and_closes() -> None:
    app = make_app("a100-healthy")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = str(app.screen.query_one("#help-keys").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DiagnosisScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")  # q closes the help, it does not quit
        await pilot.pause()
        assert isinstance(app.screen, DiagnosisScreen) and app.is_running
    from bnbdoctor.tui.screens.help import KEYS

    described = {keys for _, rows in KEYS for keys, _ in rows}
    for binding in [*DoctorApp.BINDINGS, *DiagnosisScreen.BINDINGS]:
        assert isinstance(binding, Binding)
        if binding.show:  # every key in the footer is in the help
            assert any(binding.key_display or binding.key.split(",")[0] in keys for keys in described), binding
    assert shown


@pytest.mark.slow
@asynctest
async def test_toggle_passed_checks() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        everything = len(report.findings) + len(report.passed) + len(report.skipped)
        assert len(findings_list(app).entry_keys) == everything
        await pilot.press("p")
        await pilot.pause()
        assert len(findings_list(app).entry_keys) == len(report.findings)
        await pilot.press("p")
        await pilot.pause()
        assert len(findings_list(app).entry_keys) == everything


@pytest.mark.slow
@asynctest
async def test_facts_search_filters_and_highlights() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        report = await ready(app, pilot)
        assert report.facts.gpu is not None
        driver_version = report.facts.gpu.driver_version
        await pilot.press("slash")
        await pilot.pause()
        views = app.main.query_one("#views", TabbedContent)
        facts = app.main.query_one(FactsView)
        assert views.active == "facts" and facts.search_input.has_focus
        await pilot.press(*"driver_version")
        await pilot.pause()
        expected = factstree.search(factstree.build(to_jsonable(report.facts)), "driver_version")[1]
        assert facts.match_count == expected == 1
        assert str(app.main.query_one("#facts-count", Label).render()) == "1 match"
        tree = facts.facts_tree
        leaves = [tree.get_node_at_line(i) for i in range(tree.last_line + 1)]
        labels = [str(node.label) for node in leaves if node is not None]
        assert labels == ["gpu {1}", f"driver_version: {driver_version}"]
        last = leaves[-1]
        assert last is not None and isinstance(last.label, Text)
        assert any("reverse" in str(span.style) for span in last.label.spans)
        await pilot.press("enter")  # to the first match
        await pilot.pause()
        assert tree.has_focus and tree.cursor_node is last
        await pilot.press("c")  # copies the fact's value
        assert app.clipboard == driver_version
        await pilot.press("slash", "escape")  # Escape clears the search
        await pilot.pause()
        assert facts.search_input.value == "" and facts.match_count == 0
        assert len(tree.root.children) == len(to_jsonable(report.facts))
        assert facts.search_input.has_focus
        await pilot.press("escape")  # Escape again leaves the search box
        await pilot.pause()
        assert tree.has_focus
        await pilot.press("v", "v", "v")  # on through Explain and Fit, back to the findings
        # The Explain and Fit tabs mount when first shown, and each focuses into itself once
        # mounted: wait for the last of those events, not for one pause.
        assert await until(pilot, lambda: views.active == "findings" and findings_list(app).has_focus), (
            views.active,
            app.focused,
        )


@pytest.mark.slow
@asynctest
async def test_theme_toggles_between_light_and_dark() -> None:
    app = make_app("a100-healthy")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        dark = app.current_theme.dark
        await pilot.press("t")
        assert app.current_theme.dark is not dark
        await pilot.press("t")
        assert app.current_theme.dark is dark


class GatedHost(FixtureHost):
    """A recorded machine whose NVML answer hangs until the test opens the gate."""

    def __init__(self, name: str) -> None:
        super().__init__(resolve_fixture(name))
        self.gate = threading.Event()

    def nvml(self, timeout: float = 5.0) -> NvmlAnswer:
        self.gate.wait(30)
        return super().nvml(timeout)


@pytest.mark.slow
@asynctest
async def test_a_slow_probe_never_freezes_the_screen() -> None:
    host = GatedHost("kepler-k80")
    app = DoctorApp(Session(host=host), show_timings=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            progress = app.main.query_one(ProbeProgress)
            deadline = time.monotonic() + 10
            while "platform" not in progress.runs and time.monotonic() < deadline:
                await pilot.pause(0.02)
            assert app.running and progress.display
            assert "gpu" not in progress.runs and "platform" in progress.runs  # shown as they complete
            await pilot.press("v")  # the app answers keys while NVML hangs
            await pilot.pause()
            assert app.main.query_one("#views", TabbedContent).active == "facts"
            await pilot.press("r")
            assert app.runs == 0  # a second run is refused while one is under way
            host.gate.set()
            report = await ready(app, pilot)
            assert app.runs == 1 and report.facts.gpu is not None and not progress.display
            assert [run.name for run in report.facts.probes if run.name in progress.runs]
    finally:
        host.gate.set()


@pytest.mark.slow
@asynctest
async def test_quitting_while_probes_hang_is_immediate() -> None:
    host = GatedHost("kepler-k80")
    app = DoctorApp(Session(host=host), show_timings=False)
    try:
        started = time.perf_counter()
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            assert app.running
            await pilot.press("q")
        assert time.perf_counter() - started < 5
        assert app.report is None and app.exit_code is ExitCode.OK
    finally:
        host.gate.set()


class BrokenSession(Session):
    def diagnose(self, progress: Any = None, cancelled: Any = None) -> Report:
        raise RuntimeError("boom")


@pytest.mark.slow
@asynctest
async def test_a_bnbdoctor_failure_is_shown_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    app = DoctorApp(BrokenSession(host=FixtureHost.named("kepler-k80")), show_timings=False)
    async with app.run_test(size=SIZE) as pilot:
        notes = Notes(app, monkeypatch)
        await app.wait_for_report()
        await pilot.pause()
        assert app.failed == "RuntimeError: boom"
        assert app.exit_code is ExitCode.FAILURE
        assert "boom" in str(app.main.query_one("#summary").render())
        assert notes.calls == [] or notes.last["severity"] == "error"


@pytest.mark.slow
@asynctest
async def test_exit_code_is_the_last_reports() -> None:
    app = make_app("kepler-k80")
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.exit_code is ExitCode.FINDINGS
    strict = make_app("a100-healthy", strict=True)
    async with strict.run_test(size=SIZE) as pilot:
        report = await ready(strict, pilot)
        expected = ExitCode.FINDINGS if report.summary.errors or report.summary.warnings else ExitCode.OK
        assert strict.exit_code is expected


# -- snapshots ---------------------------------------------------------------------------------------

#: Snapshots run the machine rules that exist today (driver/GPU, packages, native chain), so that a
#: rule added elsewhere (log, placement, workflow rules skip on a machine) does not change every SVG.
SNAPSHOT_RULES = [f"BNB{n}" for n in (*range(101, 109), *range(201, 209), *range(301, 317))]


def snapshot_app(fixture: str) -> DoctorApp:
    from bnbdoctor.rules import get_rule

    rules = [get_rule(rule_id) for rule_id in SNAPSHOT_RULES]
    assert all(rule is not None for rule in rules)
    return make_app(fixture, rules=rules)


async def _wait(pilot: Any) -> None:
    await ready(pilot.app, pilot)


def test_snapshot_healthy_machine(snap_compare: Any) -> None:
    assert snap_compare(snapshot_app("a100-healthy"), terminal_size=SIZE, run_before=_wait)


@pytest.mark.slow
def test_snapshot_error_heavy_machine(snap_compare: Any) -> None:
    assert snap_compare(snapshot_app("kepler-k80"), terminal_size=SIZE, run_before=_wait)


@pytest.mark.slow
def test_snapshot_error_heavy_machine_at_80x24(snap_compare: Any) -> None:
    assert snap_compare(snapshot_app("windows-bnb041"), terminal_size=SMALL, run_before=_wait)


@pytest.mark.slow
def test_snapshot_facts_view(snap_compare: Any) -> None:
    async def search(pilot: Any) -> None:
        await _wait(pilot)
        await pilot.press("slash", *"cuda")
        await pilot.pause()

    assert snap_compare(snapshot_app("kepler-k80"), terminal_size=SIZE, run_before=search)


@pytest.mark.slow
def test_snapshot_help_at_80x24(snap_compare: Any) -> None:
    async def open_help(pilot: Any) -> None:
        await _wait(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(snapshot_app("a100-healthy"), terminal_size=SMALL, run_before=open_help)
