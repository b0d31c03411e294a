"""``bnbdoctor fleet --tui``: the fleet app on reports of recorded machines, and one SVG snapshot.

The reports are what ``bnbdoctor --json`` writes for recorded machines (as in tests/test_fleet.py),
one file per node in a tmp folder. Regenerate the snapshot with
``pytest tests/test_tui_fleet.py --snapshot-update`` after a deliberate change of the app or fixtures.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from textual.binding import Binding
from textual.widgets import DataTable, Static
from tui_support import SIZE, SMALL, _quiet_app, asynctest  # noqa: F401 - _quiet_app: the autouse fixture

from bnbdoctor import contract
from bnbdoctor.doctor import diagnose
from bnbdoctor.fleet import cli as fleet_cli
from bnbdoctor.fleet.aggregate import pseudonym
from bnbdoctor.fleet.inputs import resolve_paths
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.probes import ProbeOptions
from bnbdoctor.redact import Redactor
from bnbdoctor.render.json import render_json
from bnbdoctor.report_io import redact_report
from bnbdoctor.tui.fleet_app import FLEET_KEYS, FleetApp
from bnbdoctor.tui.fleet_session import FleetSession, farewell_lines
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.screens.help import HelpScreen

ROOT = Path(__file__).resolve().parents[1]
MACHINES = ("a100-healthy", "driver-cuda118-torch-cu124", "rtx4090-torch-cpu")


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    """Each machine's report as ``bnbdoctor --json`` writes it there (redacted)."""
    texts = {}
    for name in MACHINES:
        host = FixtureHost.named(name)
        report = diagnose(host, ProbeOptions(load=True))
        texts[name] = render_json(redact_report(report, Redactor.for_machine(host.os_info())))
    return texts


def cluster_folder(root: Path, reports: dict[str, str], broken: int = 0) -> Path:
    """gpu01-07 healthy, gpu08 with a driver too old for its torch, gpu09 with a CPU torch; ``broken`` cut-off files."""
    folder = root / "reports"
    folder.mkdir()
    layout = {f"gpu{i:02d}": "a100-healthy" for i in range(1, 8)}
    layout["gpu08"] = "driver-cuda118-torch-cu124"
    layout["gpu09"] = "rtx4090-torch-cpu"
    for node, machine in layout.items():
        (folder / f"{node}.json").write_text(reports[machine], encoding="utf-8")
    for n in range(broken):
        (folder / f"bad{n}.json").write_text(reports["a100-healthy"][:300], encoding="utf-8")
    return folder


def make_app(folder: Path, tmp_path: Path | None = None, **options: Any) -> FleetApp:
    session = FleetSession(tuple(resolve_paths([str(folder)])), name=folder.name, **options)
    return FleetApp(session, export_dir=tmp_path)


async def ready(app: FleetApp, pilot: Any) -> None:
    assert await app.wait_for_report() is not None
    await pilot.pause()


def table(app: FleetApp) -> DataTable[Any]:
    return app.main.query_one("#fleet-groups", DataTable)


def shown(app: FleetApp, widget: str) -> str:
    """The plain text of a Static on the current screen as the app renders it (Rich renderables included)."""
    import io

    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(app.screen.query_one(widget, Static).content)
    return console.export_text()


def row(app: FleetApp, index: int) -> list[str]:
    return [str(cell) for cell in table(app).get_row_at(index)]


@asynctest
async def test_the_groups_largest_first_and_a_group_beside_the_largest(tmp_path: Path, reports: dict[str, str]) -> None:
    app = make_app(cluster_folder(tmp_path, reports))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert table(app).row_count == 3  # the healthy majority is one row
        assert row(app, 0)[:3] == ["1", "7", "✔ ok"] and "no findings" in row(app, 0)[3]
        assert {row(app, 1)[3].split()[0], row(app, 2)[3].split()[0]} == {"BNB102", "BNB202"}
        summary = shown(app, "#fleet-summary")
        assert "9 nodes in 3 groups" in summary and "same on every node" in summary
        assert "The largest group" in shown(app, "#fleet-detail-body")
        second = app.report.groups[1] if app.report else None
        assert second is not None
        await pilot.press("down")
        await pilot.pause()
        detail = shown(app, "#fleet-detail-body")
        assert "What differs from group 1" in detail
        differing = [line for line in detail.splitlines() if "≠" in line]
        assert any("driver" in line for line in differing) and any("findings" in line for line in differing)
        assert second.nodes[0] in detail and str(second.facts["driver"]) in detail
        assert all(f.rule_id in detail and f.title[:30] in detail for f in second.findings)
        assert app.main.selected is second
        await pilot.press("q")
    assert app.exit_code == 1  # two nodes have error findings, as `bnbdoctor fleet` says
    assert farewell_lines(app.report)[0] == "bnbdoctor fleet: 9 nodes in 3 groups"


@asynctest
async def test_pseudonymized_nodes_and_strict_exit_code(tmp_path: Path, reports: dict[str, str]) -> None:
    folder = cluster_folder(tmp_path, reports)
    app = make_app(folder, pseudonymize=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        detail = shown(app, "#fleet-detail-body")
        assert pseudonym("gpu01") in detail and "gpu01" not in detail.replace(pseudonym("gpu01"), "")
        await pilot.press("down")
        await pilot.pause()
        assert app.report is not None
        (node,) = app.report.groups[1].nodes
        assert node in {pseudonym("gpu08"), pseudonym("gpu09")} and node in shown(app, "#fleet-detail-body")
        assert "gpu0" not in shown(app, "#fleet-detail-body").replace("node-", "")
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    (healthy / "a.json").write_text(reports["a100-healthy"], encoding="utf-8")
    for nagios in (False, True):
        app = make_app(healthy, nagios=nagios)
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
        assert app.exit_code == 0


@asynctest
async def test_unreadable_reports_are_a_count_and_the_first_errors(tmp_path: Path, reports: dict[str, str]) -> None:
    app = make_app(cluster_folder(tmp_path, reports, broken=5))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        summary = shown(app, "#fleet-summary")
        assert "5 unreadable reports" in summary and "bad0.json" in summary and "… and 2 more" in summary
        assert table(app).row_count == 3
    assert app.exit_code == 1


@asynctest
async def test_all_unreadable_is_a_clear_empty_state_and_exit_2(tmp_path: Path, reports: dict[str, str]) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "x.json").write_text("{", encoding="utf-8")
    app = make_app(folder)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.main.has_class("-empty") and not table(app).display
        detail = shown(app, "#fleet-detail-body")
        assert "No report could be read" in detail and "x.json" in detail
        await pilot.press("q")
    assert app.exit_code == 2


@asynctest
async def test_it_paints_before_the_reports_are_read(
    tmp_path: Path, reports: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    release = threading.Event()
    original = FleetSession.read

    def slow_read(self: FleetSession, *args: Any, **kwargs: Any) -> Any:
        release.wait(10)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FleetSession, "read", slow_read)
    app = make_app(cluster_folder(tmp_path, reports))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.reading and "Reading the reports in reports" in shown(app, "#fleet-summary")
        assert app.exit_code == 2  # nothing judged yet
        release.set()
        await ready(app, pilot)
        assert table(app).row_count == 3


@asynctest
async def test_help_and_export(tmp_path: Path, reports: dict[str, str]) -> None:
    app = make_app(cluster_folder(tmp_path, reports), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "export the fleet report" in shown(app, "#help-keys")
        described = {keys for _, rows in FLEET_KEYS for keys, _ in rows}
        for binding in FleetApp.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.show:  # every key in the footer is in the help
                assert any((binding.key_display or binding.key.split(",")[0]) in keys for keys in described), binding
        await pilot.press("escape", "e")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        await pilot.press("enter")  # the default: text, bnbdoctor-fleet.txt in the export folder
        await pilot.pause()
        written = (tmp_path / "bnbdoctor-fleet.txt").read_text(encoding="utf-8")
        assert written.startswith("bnbdoctor fleet: 9 nodes in 3 groups")
        assert app.export("fleet.md") == tmp_path / "fleet.md"
        assert (tmp_path / "fleet.md").read_text(encoding="utf-8").startswith("## bnbdoctor fleet")
        assert app.export("fleet.json") is not None and '"kind": "fleet"' in (tmp_path / "fleet.json").read_text()


# -- the command ---------------------------------------------------------------------------------


def test_the_command_opens_the_app_and_returns_its_exit_code(
    tmp_path: Path, reports: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bnbdoctor fleet DIR --tui`` runs the real app (headless here), q quits, the farewell is printed."""
    folder = cluster_folder(tmp_path, reports)
    seen: dict[str, Any] = {}

    def run_headless(self: FleetApp, **_: Any) -> None:
        async def quit_when_read(pilot: Any) -> None:
            await ready(self, pilot)
            seen["rows"] = table(self).row_count
            await pilot.press("q")

        asyncio.run(self.run_async(headless=True, size=SIZE, auto_pilot=quit_when_read))

    monkeypatch.setattr(FleetApp, "run", run_headless)
    monkeypatch.setattr(contract, "missing_terminal", list)  # as on a terminal: the app runs headless here
    assert fleet_cli.main([str(folder), "--tui", "--strict"]) == 1
    assert seen["rows"] == 3
    out = capsys.readouterr().out
    assert out.startswith("bnbdoctor fleet: 9 nodes in 3 groups") and "BNB102" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["EMPTY", "--tui"], "no reports"),
        (["EMPTY/nothing-*.json", "--tui"], "no file matches"),
        (["-", "--tui"], "cannot come on stdin"),
    ],
)
def test_what_the_app_cannot_show_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FleetApp, "run", lambda self, **_: pytest.fail("the app must not start"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert fleet_cli.main([a.replace("EMPTY", str(empty)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_without_textual_it_is_one_line_and_exit_2(
    tmp_path: Path, reports: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fleet_cli, "textual_installed", lambda: False)
    assert fleet_cli.main([str(cluster_folder(tmp_path, reports)), "--tui"]) == 2
    err = capsys.readouterr().err
    assert "needs Textual" in err and len(err.strip().splitlines()) == 1


def test_tui_with_output_writes_text_and_json_never_imports_textual(tmp_path: Path, reports: dict[str, str]) -> None:
    folder = cluster_folder(tmp_path, reports)
    out = tmp_path / "fleet.txt"
    assert fleet_cli.main([str(folder), "--tui", "-o", str(out)]) == 1  # -o: a report in a file, as the doctor's
    assert out.read_text(encoding="utf-8").startswith("bnbdoctor fleet: 9 nodes")
    code = (
        "import sys\n"
        "from bnbdoctor.fleet.cli import main\n"
        f"main([{str(folder)!r}, '--json'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich'}), file=sys.stderr)\n"
    )
    env = {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr


# -- snapshot ------------------------------------------------------------------------------------


def test_snapshot_fleet_with_a_group_selected(
    snap_compare: Any, tmp_path: Path, reports: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = cluster_folder(tmp_path, reports, broken=1)
    monkeypatch.chdir(tmp_path)
    app = FleetApp(FleetSession(tuple(resolve_paths(["reports"])), name="reports"))

    async def select_second(pilot: Any) -> None:
        await ready(app, pilot)
        await pilot.press("down")
        await pilot.pause()

    assert folder.exists()
    assert snap_compare(app, terminal_size=SIZE, run_before=select_second)


@pytest.mark.slow
def test_snapshot_fleet_at_80x24(
    snap_compare: Any, tmp_path: Path, reports: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster_folder(tmp_path, reports)
    monkeypatch.chdir(tmp_path)
    app = FleetApp(FleetSession(tuple(resolve_paths(["reports"])), name="reports"))

    async def wait(pilot: Any) -> None:
        await ready(app, pilot)

    assert snap_compare(app, terminal_size=SMALL, run_before=wait)


def test_a_large_group_shows_its_first_nodes_and_how_many_more() -> None:
    import io

    from rich.console import Console

    from bnbdoctor.fleet_report import FleetReport, Group
    from bnbdoctor.tui.screens.fleet import NODES_SHOWN, group_detail

    nodes = [f"n{i:05d}" for i in range(NODES_SHOWN + 42)]
    group = Group("a", "ok", len(nodes), {"driver": "550"}, [], nodes)
    report = FleetReport("bnbdoctor", "fleet", "0", 1, "", len(nodes), [group], [], [], False)
    console = Console(width=120, record=True, file=io.StringIO(), color_system=None)
    console.print(group_detail(report, 0))
    text = console.export_text()
    assert nodes[NODES_SHOWN - 1] in text and nodes[NODES_SHOWN] not in text and "… and 42 more" in text
