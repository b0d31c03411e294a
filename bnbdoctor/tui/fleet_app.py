"""FleetApp: ``bnbdoctor fleet PATH... --tui``, the fleet report in the app.

Like :class:`~bnbdoctor.tui.app.DoctorApp` it paints at once: a thread worker streams the reports
through :meth:`~bnbdoctor.tui.fleet_session.FleetSession.read` and posts :class:`FleetProgress` as
it goes and :class:`FleetReady` with the report; quitting while it reads stops it between two
reports. The keys are the doctor app's where they mean the same: ``q`` quits, ``?`` helps, ``e``
exports (the fleet report as text, JSON or Markdown, as ``bnbdoctor fleet`` writes them), ``t``
toggles the theme. :attr:`FleetApp.exit_code` is the fleet command's exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, get_current_worker

from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.formats import app_exports
from bnbdoctor.tui.export import ExportRequest, export_and_say, export_fleet
from bnbdoctor.tui.fleet_session import FleetSession, ReadCancelled
from bnbdoctor.tui.messages import FleetFailed, FleetProgress, FleetReady
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.screens.fleet import FleetScreen
from bnbdoctor.tui.screens.help import HelpScreen

#: (keys, what they do) for the help screen; docs/fleet.md ("In the app") says the same in prose.
FLEET_KEYS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Groups",
        [
            ("↑ ↓  PgUp PgDn  Home End", "move through the groups; the pane shows the highlighted one"),
            ("Tab / Shift+Tab", "move between the groups and the pane (scroll it with ↑ ↓)"),
        ],
    ),
    (
        "Everywhere",
        [
            ("e", "export the fleet report (text, JSON or Markdown, as bnbdoctor fleet writes them)"),
            ("t", "toggle light and dark theme"),
            ("? / F1", "this help"),
            ("q / Ctrl+C / Ctrl+Q", "quit (the exit code is bnbdoctor fleet's)"),
        ],
    ),
]
FLEET_VIEWS_TEXT = Text.assemble(
    ("Groups", "bold"),
    ": nodes whose reports found the same rules with the same key facts, largest first. "
    "The pane beside them compares the highlighted group with the largest one (≠ marks what differs), "
    "then lists its nodes and its findings.\n",
)


class FleetApp(App[None]):
    """The fleet report, interactive."""

    CSS_PATH = "app.tcss"
    TITLE = "bnbdoctor fleet"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 - see DoctorApp
    #: Tests and snapshots turn these off (an autouse fixture), as for the doctor app.
    CURSOR_BLINK: ClassVar[bool] = True
    ANIMATE: ClassVar[bool] = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("e", "export", "Export", tooltip="Write the fleet report to a file"),
        Binding("t", "toggle_theme", "Theme", tooltip="Toggle light and dark theme"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
    ]

    def __init__(self, session: FleetSession, *, export_dir: str | Path | None = None) -> None:
        super().__init__()
        self.session = session
        self.export_dir = Path(export_dir) if export_dir is not None else Path.cwd()
        self.report: FleetReport | None = None
        self.failed: str | None = None
        self.reading = False
        self._worker: Worker[None] | None = None
        self.main = FleetScreen(session.label)
        if not self.ANIMATE:
            self.animation_level = "none"

    async def on_mount(self) -> None:
        self.sub_title = self.session.label
        await self.push_screen(self.main)
        self.reading = True
        self.main.show_reading()
        self._worker = self.run_worker(self._read, name="fleet", group="fleet", thread=True, exit_on_error=False)

    @property
    def exit_code(self) -> int:
        """The fleet command's exit code for what was read (FAILURE before the groups were ready)."""
        return self.session.exit_code(self.report)

    # -- reading -----------------------------------------------------------------------------------

    def _read(self) -> None:
        """Runs in the worker thread: everything reaches the app as messages."""
        worker = get_current_worker()

        def progress(count: int) -> None:
            self.post_message(FleetProgress(count))

        try:
            report = self.session.read(progress, cancelled=lambda: worker.is_cancelled)
        except ReadCancelled:
            return
        except Exception as exc:  # noqa: BLE001 - shown in the app, never a traceback over the screen
            self.post_message(FleetFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(FleetReady(report))

    def on_fleet_progress(self, message: FleetProgress) -> None:
        if self.reading:
            self.main.show_reading(message.count)

    def on_fleet_ready(self, message: FleetReady) -> None:
        self.reading = False
        self.report = message.report
        self.main.show_report(message.report)

    def on_fleet_failed(self, message: FleetFailed) -> None:
        self.reading = False
        self.failed = message.error
        self.main.show_failure(message.error)
        self.notify(message.error, title="bnbdoctor fleet failed", severity="error", timeout=10, markup=False)

    async def wait_for_report(self) -> FleetReport | None:
        """Wait until the reports are read (for tests)."""
        if self._worker is not None:
            await self.workers.wait_for_complete([self._worker])
        import asyncio

        while self.reading:
            await asyncio.sleep(0.01)
        return self.report

    # -- actions ----------------------------------------------------------------------------------

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(FLEET_KEYS, FLEET_VIEWS_TEXT, "bnbdoctor fleet: keys"))

    def action_export(self) -> None:
        if self.report is None:
            self.notify("No fleet report yet: wait for the reports to be read.", severity="warning")
            return
        formats = app_exports(ReportKind.FLEET)
        chosen = next(iter(formats))
        self.push_screen(
            ExportScreen(
                self.export_dir / f"bnbdoctor-fleet{formats[chosen]}",
                formats,
                chosen,
                cursor_blink=self.CURSOR_BLINK,
                title="Export the fleet report",
            ),
            self._export_chosen,
        )

    def _export_chosen(self, request: ExportRequest | None) -> None:
        if request is not None:
            self.export(request.path, request.format)

    def export(self, path: str | Path, fmt: OutputFormat | None = None) -> Path | None:
        """Write the fleet report to ``path`` (relative to the export folder) and say so."""
        report = self.report
        if report is None:
            return None
        return export_and_say(
            self.notify, self.export_dir, path, lambda to: export_fleet(report, to, fmt), "Fleet report"
        )
