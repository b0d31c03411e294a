"""DiagnosisScreen: the summary line, probe progress, and the Findings, Facts, Explain and Fit tabs.

The app owns the runs and the report; this screen shows them (``show_running``,
``probe_finished``, ``show_report``) and carries the keys that act on what is shown: copy, export,
toggle the passed checks, switch view, search the facts, run the Explain or Fit tab. The Explain
and Fit tabs (:mod:`~bnbdoctor.tui.widgets.explain`, :mod:`~bnbdoctor.tui.widgets.fit`) run their
own analyses; the summary line and the machine above the tabs are about the probes, so they are
hidden there (screen class ``-tool``). Like the widgets, the screen never imports the app: its
display choices come as a :class:`~bnbdoctor.tui.settings.UiSettings`, copying goes through
Textual's ``App`` API and exporting through the app's ``export`` action.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane, Tabs

from bnbdoctor.facts import ProbeRun
from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable
from bnbdoctor.tui.clipboard import copy_and_tell
from bnbdoctor.tui.settings import UiSettings
from bnbdoctor.tui.widgets.detail import FindingDetail
from bnbdoctor.tui.widgets.facts import FactsView
from bnbdoctor.tui.widgets.findings import Entry, FindingsList
from bnbdoctor.tui.widgets.progress import ProbeProgress
from bnbdoctor.tui.widgets.summary import SummaryBar

if TYPE_CHECKING:
    from bnbdoctor.tui.widgets.explain import ExplainView
    from bnbdoctor.tui.widgets.fit import FitView

#: The tabs, in order; ``v`` cycles through them.
VIEWS = ("findings", "facts", "explain", "fit")
#: The tabs that run their own analysis (Ctrl+R); the probes' summary and machine are hidden there.
TOOL_VIEWS = ("explain", "fit")


def machine_table(report: Report) -> Table:
    """What was examined (machine, GPU, Python, packages), as the text report's header shows it."""
    from bnbdoctor.render.text import machine_lines

    rows = machine_lines(report)
    grid = Table.grid(padding=(0, 1))
    # The labels keep their width (never "Ma…"); a long value wraps under itself.
    grid.add_column(style="bold", no_wrap=True, min_width=max((len(label) for label, _ in rows), default=0))
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, value)
    return grid


class DiagnosisScreen(Screen[None]):
    """The main screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "copy",
            "Copy",
            tooltip="Copy the first command of the selected finding (Fit: the highlighted remedy's code)",
        ),
        *[Binding(str(n), f"copy({n})", f"Copy command {n}", show=False) for n in range(1, 10)],
        Binding("e", "export", "Export", tooltip="Write the report to a file"),
        Binding("p", "toggle_checks", "Passed", tooltip="Show or hide passed and skipped checks"),
        Binding("v", "next_view", "View", tooltip="Switch between Findings, Facts, Explain and Fit"),
        Binding(
            "ctrl+r",
            "run_tool",
            "Run",
            key_display="^R",
            tooltip="Explain the log (Explain tab), run the fit (Fit tab)",
        ),
        Binding("slash", "search", "Search", key_display="/", tooltip="Search the facts"),
        Binding("escape", "leave_search", "Leave search", key_display="Esc"),
    ]

    def __init__(self, settings: UiSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or UiSettings()
        self.show_checks = True
        self.report: Report | None = None

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
            # Explain and Fit are mounted the first time they are shown (tool_view): the first
            # paint does not wait for them.
            yield TabPane("Explain", id="explain")
            yield TabPane("Fit", id="fit")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#progress", ProbeProgress).display = False
        # The tab bar takes no focus: Tab moves between the tab's own widgets (a tab's fields, the
        # list and the detail pane), and a focused tab bar would pass typed text on to the global
        # keys. v and clicks switch tabs.
        self.query_one("#views", TabbedContent).query_one(Tabs).can_focus = False
        self.query_one("#facts-search", Input).cursor_blink = self.settings.cursor_blink
        self.query_one(FindingsList).focus()

    # -- what the app tells us -----------------------------------------------------------------

    def show_running(self, heading: str, names: list[str]) -> None:
        progress = self.query_one("#progress", ProbeProgress)
        progress.start(heading, names, animate=self.settings.animate, show_timings=self.settings.show_timings)
        if self.report is None:
            self.query_one("#detail", FindingDetail).show(
                None, "Waiting for the probes…" if names else "Running the rules…"
            )

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
        self.query_one(SummaryBar).show_report(report, self.settings.show_timings)
        self.add_class("-summary", "-report")
        findings = self.query_one(FindingsList)
        previous = findings.selected
        findings.show(report, self.show_checks, keep=previous.key if previous else None)
        self.query_one(FactsView).load(to_jsonable(report.facts), show_timings=self.settings.show_timings)

    # -- events --------------------------------------------------------------------------------

    def on_findings_list_entry_highlighted(self, event: FindingsList.EntryHighlighted) -> None:
        empty = "No problems found." + ("" if self.show_checks else " Press p to show the checks that passed.")
        self.query_one("#detail", FindingDetail).show(event.entry, empty)

    # -- actions -------------------------------------------------------------------------------

    @property
    def active_view(self) -> str:
        return self.query_one("#views", TabbedContent).active

    def action_copy(self, number: int = 0) -> None:
        """``c`` (number 0): the first command, the fact's value, or the highlighted remedy's code;
        ``1``-``9``: the command or remedy with that number."""
        view = self.active_view
        if view == "facts":
            selected = self.query_one(FactsView).selected_text()
            if selected is None:
                self.notify("Move to a fact first.", severity="warning")
                return
            path, value = selected
            copy_and_tell(self, value, f"{path} = {value}" if len(value) < 60 else path)
            return
        if view == "fit":
            fit = self.fit_view
            if fit is not None:
                fit.copy_remedy(number)
            return
        if view == "explain":
            explain = self.explain_view
            entry = explain.findings.selected if explain is not None else None
        else:
            entry = self.query_one(FindingsList).selected
        self.copy_command(entry, number or 1)

    def copy_command(self, entry: Entry | None, number: int) -> None:
        if entry is None:
            self.notify("Nothing selected.", severity="warning")
            return
        commands = entry.commands
        if not commands:
            self.notify(f"{entry.rule_id} has no command to copy.", severity="warning")
            return
        if number > len(commands):
            self.notify(
                f"{entry.rule_id} has {len(commands)} command{'' if len(commands) == 1 else 's'}, not {number}.",
                severity="warning",
            )
            return
        copy_and_tell(self, commands[number - 1])

    def action_run_tool(self) -> None:
        view = self.active_view
        tool = self.explain_view if view == "explain" else self.fit_view if view == "fit" else None
        if tool is not None:  # None for a moment after the tab is first shown
            tool.run()

    async def action_export(self) -> None:
        """The app owns the report and the export dialog: its ``export`` action."""
        await self.app.run_action("export")

    def action_toggle_checks(self) -> None:
        self.show_checks = not self.show_checks
        findings = self.query_one(FindingsList)
        previous = findings.selected
        findings.show(self.report, self.show_checks, keep=previous.key if previous else None)
        self.notify(
            "Showing passed and skipped checks." if self.show_checks else "Hiding passed and skipped checks.", timeout=2
        )

    def action_next_view(self) -> None:
        views = self.query_one("#views", TabbedContent)
        self.show_view(VIEWS[(VIEWS.index(views.active) + 1) % len(VIEWS)] if views.active in VIEWS else VIEWS[0])

    def show_view(self, view: str) -> None:
        self.query_one("#views", TabbedContent).active = view
        self._focus_view(view)

    def _focus_view(self, view: str) -> None:
        if view == "findings":
            self.query_one(FindingsList).focus()
        elif view == "facts":
            self.query_one(FactsView).facts_tree.focus()
        elif view in TOOL_VIEWS:
            tool = self.explain_view if view == "explain" else self.fit_view
            if tool is not None:  # else the tab is being mounted: on_tabbed_content_tab_activated focuses it
                tool.focus_default()

    @property
    def explain_view(self) -> ExplainView | None:
        """The Explain tab's view, once the tab has been shown."""
        from bnbdoctor.tui.widgets.explain import ExplainView

        found = self.query(ExplainView)
        return found.first() if found else None

    @property
    def fit_view(self) -> FitView | None:
        """The Fit tab's view, once the tab has been shown."""
        from bnbdoctor.tui.widgets.fit import FitView

        found = self.query(FitView)
        return found.first() if found else None

    async def tool_view(self, view: str) -> ExplainView | FitView:
        """The Explain or Fit view, mounted into its tab the first time."""
        existing = self.explain_view if view == "explain" else self.fit_view
        if existing is not None:
            return existing
        if view == "explain":
            from bnbdoctor.tui.widgets.explain import ExplainView

            created: ExplainView | FitView = ExplainView(self.settings, id="explain-view")
        else:
            from bnbdoctor.tui.widgets.fit import FitView

            created = FitView(self.settings, id="fit-view")
        await self.query_one(f"#{view}", TabPane).mount(created)
        return created

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Any way of changing tabs (v, a click, the tab bar's keys): focus into the tab, and show
        only the keys that apply there."""
        if event.tabbed_content.id != "views" or event.pane.id is None:
            return
        view = event.pane.id
        self.set_class(view in TOOL_VIEWS, "-tool")
        if view in TOOL_VIEWS:
            await self.tool_view(view)
            if self.active_view != view:  # moved on while the tab was mounted: a later event focuses
                return
        focused = self.focused
        if focused is None or not any(node is event.pane for node in focused.ancestors):
            self._focus_view(view)
        self.refresh_bindings()

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
        try:
            if action == "leave_search":
                return self.query_one(FactsView).search_input.has_focus
            if action == "run_tool":
                return self.active_view in TOOL_VIEWS
            if action in ("toggle_checks", "export"):  # about the probes' report, not the tab's
                return self.active_view not in TOOL_VIEWS
        except NoMatches:  # not composed yet
            return True
        return True
