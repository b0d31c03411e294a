"""DiagnosisScreen: the summary line, probe progress, and the Findings and Facts tabs.

The app owns the runs and the report; this screen shows them (``show_running``,
``probe_finished``, ``show_report``) and carries the keys that act on what is shown: copy, export,
toggle the passed checks, switch view, search the facts. More tabs (Explain, Fit) slot into the
``TabbedContent`` beside Findings and Facts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane

from bnbdoctor.facts import ProbeRun
from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable
from bnbdoctor.tui.widgets.detail import FindingDetail
from bnbdoctor.tui.widgets.facts import FactsView
from bnbdoctor.tui.widgets.findings import FindingsList
from bnbdoctor.tui.widgets.progress import ProbeProgress
from bnbdoctor.tui.widgets.summary import SummaryBar

if TYPE_CHECKING:
    from bnbdoctor.tui.app import DoctorApp

#: The tabs, in order; ``v`` cycles through them.
VIEWS = ("findings", "facts")


def machine_table(report: Report) -> Table:
    """What was examined (machine, GPU, Python, packages), as the text report's header shows it."""
    from bnbdoctor.render.text import machine_lines

    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="ellipsis", no_wrap=True)
    for label, value in machine_lines(report):
        grid.add_row(label, value)
    return grid


class DiagnosisScreen(Screen[None]):
    """The main screen."""

    BINDINGS = [
        Binding("c", "copy", "Copy", tooltip="Copy the first command of the selected finding"),
        *[Binding(str(n), f"copy({n})", f"Copy command {n}", show=False) for n in range(1, 10)],
        Binding("e", "export", "Export", tooltip="Write the report to a file"),
        Binding("p", "toggle_checks", "Passed", tooltip="Show or hide passed and skipped checks"),
        Binding("v", "next_view", "View", tooltip="Switch between Findings and Facts"),
        Binding("slash", "search", "Search", key_display="/", tooltip="Search the facts"),
        Binding("escape", "leave_search", "Leave search", key_display="Esc"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.show_checks = True
        self.report: Report | None = None

    @property
    def doctor(self) -> DoctorApp:
        from bnbdoctor.tui.app import DoctorApp

        assert isinstance(self.app, DoctorApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="machine")
        yield SummaryBar(id="summary")
        yield ProbeProgress(id="progress")
        with TabbedContent(id="views", initial="findings"):
            with TabPane("Findings", id="findings"), Container(id="findings-body"):
                yield FindingsList(id="findings-list")
                yield FindingDetail(id="detail")
            with TabPane("Facts", id="facts"):
                yield FactsView(id="facts-view")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#progress", ProbeProgress).display = False
        self.query_one("#facts-search", Input).cursor_blink = self.doctor.CURSOR_BLINK
        self.query_one(FindingsList).focus()

    # -- what the app tells us -----------------------------------------------------------------

    def show_running(self, heading: str, names: list[str]) -> None:
        progress = self.query_one("#progress", ProbeProgress)
        progress.start(heading, names, animate=self.doctor.ANIMATE, show_timings=self.doctor.show_timings)
        if self.report is None:
            self.query_one(FindingDetail).show(None, "Waiting for the probes…" if names else "Running the rules…")

    def probe_finished(self, run: ProbeRun) -> None:
        self.query_one("#progress", ProbeProgress).finish(run)

    def show_failure(self, error: str) -> None:
        self.query_one("#progress", ProbeProgress).stop()
        self.add_class("-summary")
        self.query_one(SummaryBar).show_message(f"✖ bnbdoctor failed: {error}  (r re-runs)", style="$text-error bold")

    def show_report(self, report: Report) -> None:
        self.report = report
        self.query_one("#progress", ProbeProgress).stop()
        self.query_one("#machine", Static).update(machine_table(report))
        self.query_one(SummaryBar).show_report(report, self.doctor.show_timings)
        self.add_class("-summary", "-report")
        findings = self.query_one(FindingsList)
        previous = findings.selected
        findings.show(report, self.show_checks, keep=previous.key if previous else None)
        self.query_one(FactsView).load(to_jsonable(report.facts), show_timings=self.doctor.show_timings)

    # -- events --------------------------------------------------------------------------------

    def on_findings_list_entry_highlighted(self, event: FindingsList.EntryHighlighted) -> None:
        empty = "No problems found." + ("" if self.show_checks else " Press p to show the checks that passed.")
        self.query_one(FindingDetail).show(event.entry, empty)

    # -- actions -------------------------------------------------------------------------------

    def action_copy(self, number: int = 1) -> None:
        views = self.query_one("#views", TabbedContent)
        if views.active == "facts":
            selected = self.query_one(FactsView).selected_text()
            if selected is None:
                self.notify("Move to a fact first.", severity="warning")
                return
            path, value = selected
            self.doctor.copy_and_tell(value, f"{path} = {value}" if len(value) < 60 else path)
            return
        entry = self.query_one(FindingsList).selected
        if entry is None:
            self.notify("Nothing selected.", severity="warning")
            return
        commands = entry.commands
        if not commands:
            self.notify(f"{entry.rule_id} has no command to copy.", severity="warning")
            return
        if number > len(commands):
            self.notify(f"{entry.rule_id} has {len(commands)} command{'' if len(commands) == 1 else 's'}, "
                        f"not {number}.", severity="warning")
            return
        self.doctor.copy_and_tell(commands[number - 1])

    def action_export(self) -> None:
        self.doctor.action_export()

    def action_toggle_checks(self) -> None:
        self.show_checks = not self.show_checks
        findings = self.query_one(FindingsList)
        previous = findings.selected
        findings.show(self.report, self.show_checks, keep=previous.key if previous else None)
        self.notify("Showing passed and skipped checks." if self.show_checks else "Hiding passed and skipped checks.",
                    timeout=2)

    def action_next_view(self) -> None:
        views = self.query_one("#views", TabbedContent)
        self.show_view(VIEWS[(VIEWS.index(views.active) + 1) % len(VIEWS)] if views.active in VIEWS else VIEWS[0])

    def show_view(self, view: str) -> None:
        self.query_one("#views", TabbedContent).active = view
        if view == "findings":
            self.query_one(FindingsList).focus()
        elif view == "facts":
            self.query_one(FactsView).facts_tree.focus()

    def action_search(self) -> None:
        self.query_one("#views", TabbedContent).active = "facts"
        self.query_one(FactsView).search_input.focus()

    def action_leave_search(self) -> None:
        facts = self.query_one(FactsView)
        if facts.search_input.has_focus:
            if facts.search_input.value:
                facts.clear_search()
            else:
                facts.facts_tree.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_search":
            return self.query_one(FactsView).search_input.has_focus
        return True
