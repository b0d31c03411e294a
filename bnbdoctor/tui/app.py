"""DoctorApp: the interactive bnbdoctor, driving a :class:`~bnbdoctor.tui.session.Session`.

The app paints at once; the probes run in a thread worker that posts :class:`ProbeFinished` as each
probe ends and :class:`ReportReady` with the report. A re-run (``r``) probes again, or only
re-applies the rules when the session holds a saved report. The app keeps the last report:
:attr:`DoctorApp.exit_code` is the CLI's exit code for it.

``marks`` records ``perf_counter`` timestamps (``mounted``, ``first_paint``, ``report_ready``,
``findings_shown``) for ``bench/bench_tui.py``.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, get_current_worker

from bnbdoctor.doctor import Cancelled
from bnbdoctor.facts import ProbeRun
from bnbdoctor.render import OutputFormat, ReportKind
from bnbdoctor.render.formats import app_exports
from bnbdoctor.report import ExitCode, Report
from bnbdoctor.tui.export import ExportRequest, default_export_path, export_and_say, export_report
from bnbdoctor.tui.messages import DiagnosisFailed, ProbeFinished, ReportReady
from bnbdoctor.tui.screens.export import ExportScreen
from bnbdoctor.tui.screens.help import HelpScreen
from bnbdoctor.tui.screens.main import DiagnosisScreen
from bnbdoctor.tui.session import Session
from bnbdoctor.tui.settings import UiSettings


class DoctorApp(App[None]):
    """bnbdoctor's TUI."""

    CSS_PATH = "app.tcss"
    TITLE = "bnbdoctor"
    ENABLE_COMMAND_PALETTE = False
    # Screen classes used in app.tcss. Not annotated: Textual declares them `ClassVar[...] | None`,
    # which mypy reads as instance attributes that a ClassVar may not override.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 - see above
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # noqa: RUF012 - see above
    #: Tests and snapshots turn these off (an autouse fixture): no blinking cursor, no spinner.
    CURSOR_BLINK: ClassVar[bool] = True
    ANIMATE: ClassVar[bool] = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),  # at 2 a.m., Ctrl+C means quit
        Binding("r", "rerun", "Re-run", tooltip="Probe again (after fixing something elsewhere)"),
        Binding("t", "toggle_theme", "Theme", tooltip="Toggle light and dark theme"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
    ]

    def __init__(self, session: Session, *, show_timings: bool = True, export_dir: str | Path | None = None) -> None:
        super().__init__()
        self.marks: dict[str, float] = {"created": time.perf_counter()}
        self.session = session
        #: What the screens and tabs are told about how to show things (they never import the app).
        self.settings = UiSettings(cursor_blink=self.CURSOR_BLINK, animate=self.ANIMATE, show_timings=show_timings)
        self.export_dir = Path(export_dir) if export_dir is not None else Path.cwd()
        self.report: Report | None = session.report
        self.running = False
        self.failed: str | None = None
        self.runs = 0  # completed runs (reports received), for tests and the bench
        self._generation = 0
        self._worker: Worker[None] | None = None
        self.main = DiagnosisScreen(self.settings)
        if not self.ANIMATE:
            self.animation_level = "none"

    # -- lifecycle ---------------------------------------------------------------------------------

    async def on_mount(self) -> None:
        self.marks["mounted"] = time.perf_counter()
        self.sub_title = self.session.label
        await self.push_screen(self.main)
        if self.report is not None:
            self._show(self.report)
        else:
            self.start_run()

    def on_ready(self) -> None:
        self.marks["first_paint"] = time.perf_counter()

    @property
    def exit_code(self) -> ExitCode:
        """Exit code for the last report (FAILURE when bnbdoctor failed before producing one)."""
        if self.report is None and self.failed is not None:
            return ExitCode.FAILURE
        return self.session.exit_code(self.report)

    # -- runs ----------------------------------------------------------------------------------------

    def start_run(self) -> bool:
        """Start a run in a thread worker; False when one is already under way."""
        if self.running:
            return False
        self.running = True
        self._generation += 1
        heading = (
            f"Probing {self.session.label}…"
            if self.session.probes
            else f"Re-applying the rules to {self.session.label}…"
        )
        self.main.show_running(heading, self.session.probe_names)
        self._worker = self.run_worker(
            partial(self._diagnose, self._generation),
            name="diagnose",
            group="diagnose",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )
        return True

    def _diagnose(self, generation: int) -> None:
        """Runs in the worker thread: everything reaches the app as messages."""
        worker = get_current_worker()

        def progress(run: ProbeRun) -> None:
            self.post_message(ProbeFinished(run, generation))

        try:
            report = self.session.diagnose(progress, cancelled=lambda: worker.is_cancelled)
        except Cancelled:
            return
        except Exception as exc:  # noqa: BLE001 - shown in the app, never a traceback over the screen
            self.post_message(DiagnosisFailed(f"{type(exc).__name__}: {exc}", generation))
            return
        self.post_message(ReportReady(report, generation))

    def on_probe_finished(self, message: ProbeFinished) -> None:
        if message.generation == self._generation:
            self.main.probe_finished(message.run)

    def on_report_ready(self, message: ReportReady) -> None:
        if message.generation != self._generation:
            return
        self.marks.setdefault("report_ready", time.perf_counter())
        self.running = False
        self.failed = None
        self.report = message.report
        self.runs += 1
        self._show(message.report)

    def _show(self, report: Report) -> None:
        self.main.show_report(report)
        self.call_after_refresh(lambda: self.marks.setdefault("findings_shown", time.perf_counter()))

    def on_diagnosis_failed(self, message: DiagnosisFailed) -> None:
        if message.generation != self._generation:
            return
        self.running = False
        self.failed = message.error
        self.main.show_failure(message.error)
        self.notify(message.error, title="bnbdoctor failed", severity="error", timeout=10, markup=False)

    async def wait_for_report(self) -> Report | None:
        """Wait until the current run (if any) has delivered its report (for tests and the bench)."""
        while self.running:
            if self._worker is not None:
                await self.workers.wait_for_complete([self._worker])
            await self._idle()
        return self.report

    async def _idle(self) -> None:
        import asyncio

        await asyncio.sleep(0.01)

    # -- actions ----------------------------------------------------------------------------------

    def action_rerun(self) -> None:
        if not self.start_run():
            self.notify("A run is already under way.", severity="warning", timeout=2)

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_export(self) -> None:
        if self.report is None:
            self.notify("No report yet: wait for the probes.", severity="warning")
            return
        formats = app_exports(ReportKind.DOCTOR)
        chosen = next(iter(formats))
        self.push_screen(
            ExportScreen(
                default_export_path(self.report, chosen, self.export_dir),
                formats,
                chosen,
                cursor_blink=self.CURSOR_BLINK,
            ),
            self._export_chosen,
        )

    def _export_chosen(self, request: ExportRequest | None) -> None:
        if request is not None:
            self.export(request.path, request.format)

    def export(self, path: str | Path, fmt: OutputFormat | None = None) -> Path | None:
        """Write the last report to ``path`` (relative to the export folder) and say so."""
        if self.report is None:
            return None
        shared = self.session.shareable(self.report)
        return export_and_say(self.notify, self.export_dir, path, lambda to: export_report(shared, to, fmt), "Report")
