"""FleetScreen: the fleet report in the app: the groups, largest first, and the selected group beside them.

The table has one row per group (the healthy majority is one row, however many nodes it holds):
its number, node count, status, and what sets it apart from the largest group. The pane beside it
shows the highlighted group: side by side with the largest group, the rows of ``bnbdoctor fleet``'s
own table (:func:`bnbdoctor.render.fleet.comparison_rows`, the differing ones marked), then its node
names and its findings. Above them: the headline, the key facts every node shares, and the
unreadable reports (a count and the first errors). The app reads the reports and calls
:meth:`FleetScreen.show_reading` and :meth:`FleetScreen.show_report`; the screen never imports it.
"""

from __future__ import annotations

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from bnbdoctor.fleet_report import FleetReport, Group
from bnbdoctor.render.fleet import comparison_rows, headline, same_facts

#: Unreadable reports whose errors are shown above the table (the count is always shown).
ERRORS_SHOWN = 3
#: Node names the pane shows for one group (a group of 10,000 would take most of a second to lay out
#: at each key press); the exports (``e``) name every node.
NODES_SHOWN = 500
#: A status's mark and style (Rich styles: this pane is Rich renderables).
STATUS_STYLE: dict[str, tuple[str, str]] = {
    "error": ("✖", "bold red"),
    "warning": ("▲", "bold yellow"),
    "info": ("ℹ", "bold cyan"),
    "ok": ("✔", "bold green"),
}


def status_text(status: str) -> Text:
    mark, style = STATUS_STYLE.get(status, ("?", ""))
    return Text(f"{mark} {status}", style=style)


def compared_rows(report: FleetReport, index: int) -> list[list[str]]:
    """Group ``index`` (0-based) beside the largest group, as the text report's table shows them."""
    if index == 0:
        return comparison_rows(report, [report.groups[0]])
    return comparison_rows(report, [report.groups[0], report.groups[index]], [1, index + 1])


def apart(report: FleetReport, index: int) -> str:
    """One line: the group's finding ids, and the names of the key facts in which it differs from the
    largest group (``BNB102 · ≠ driver, cuda, torch``); the pane beside the table shows their values."""
    rows = compared_rows(report, index)
    column = len(rows[0]) - 1
    findings = rows[-1][column]
    text = "no findings" if findings == "-" else findings
    if index == 0:
        return text
    facts = [row[0] for row in rows[3:-1] if row[1] != row[column]]
    return text + (" · ≠ " + ", ".join(facts) if facts else "")


def unreadable_text(report: FleetReport) -> Text | None:
    if not report.unreadable:
        return None
    count = len(report.unreadable)
    text = Text(f"{count} unreadable report{'' if count == 1 else 's'}", style="bold yellow")
    for bad in report.unreadable[:ERRORS_SHOWN]:
        text.append(f"\n  {bad.error}", style="")
    if count > ERRORS_SHOWN:
        text.append(f"\n  … and {count - ERRORS_SHOWN} more", style="dim")
    return text


def summary(report: FleetReport) -> RenderableType:
    """The lines above the table."""
    parts: list[RenderableType] = [Text(f"bnbdoctor fleet: {headline(report)}", style="bold")]
    same = same_facts(report)
    if same:
        parts.append(Text("same on every node: " + "; ".join(same), style="dim"))
    unreadable = unreadable_text(report)
    if unreadable is not None:
        parts.append(unreadable)
    return RichGroup(*parts)


def group_detail(report: FleetReport, index: int) -> RenderableType:
    """The pane for group ``index``: compared with the largest group, its nodes, its findings."""
    group = report.groups[index]
    title = Text.assemble(
        (f"group {index + 1}", "bold"),
        f" · {group.count} node{'' if group.count == 1 else 's'} · ",
        status_text(group.status),
        (f" · id {group.id}", "dim"),
    )
    parts: list[RenderableType] = [title, Text("")]
    rows = compared_rows(report, index)
    if index == 0:
        parts.append(Text("The largest group. Key facts:", style="bold underline"))
        facts = Table.grid(padding=(0, 2))
        facts.add_column(style="bold", no_wrap=True)
        facts.add_column(overflow="fold")
        for name, value in group.facts.items():
            facts.add_row(name, value or "-")
        parts.append(facts)
    else:
        parts.append(Text("What differs from group 1 (the largest)", style="bold underline"))
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
        table.add_column("")
        for header in rows[0][1:]:
            table.add_column(header, overflow="fold")
        for row in rows[1:]:
            differs = row[0] != "nodes" and row[1] != row[2]  # a smaller group is no difference
            table.add_row(
                Text(("≠ " if differs else "  ") + row[0], style="bold" if differs else "dim"),
                Text(row[1], style="" if differs else "dim"),
                Text(row[2], style="bold yellow" if differs else "dim"),
            )
        parts.append(table)
    parts += [Text(""), Text(f"Nodes ({group.count})", style="bold underline")]
    nodes = Text(", ".join(group.nodes[:NODES_SHOWN]) or "-")
    if len(group.nodes) > NODES_SHOWN:
        nodes.append(f", … and {len(group.nodes) - NODES_SHOWN} more (e exports them all)", style="dim")
    parts.append(nodes)
    parts += [Text(""), Text(f"Findings ({len(group.findings)})", style="bold underline")]
    if not group.findings:
        parts.append(Text("none", style="dim"))
    findings = Table.grid(padding=(0, 1))
    findings.add_column(no_wrap=True)
    findings.add_column(no_wrap=True, style="bold")
    findings.add_column(overflow="fold")
    for finding in group.findings:
        findings.add_row(status_text(finding.severity), finding.rule_id, finding.title)
    if group.findings:
        parts.append(findings)
    return RichGroup(*parts)


def empty_detail(report: FleetReport) -> RenderableType:
    """The pane when no report could be read (or none was found)."""
    parts: list[RenderableType] = [Text("No report could be read, so there is no group to show.", style="bold")]
    unreadable = unreadable_text(report)
    if unreadable is not None:
        parts += [Text(""), unreadable]
    parts += [Text(""), Text("Reports are what `bnbdoctor --json -o DIR/%N.json` writes on each node.", style="dim")]
    return RichGroup(*parts)


class FleetScreen(Screen[None]):
    """The fleet app's one screen."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label
        self.report: FleetReport | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="fleet-summary")
        with Container(id="fleet-body"):
            yield DataTable(id="fleet-groups", cursor_type="row", zebra_stripes=False)
            with VerticalScroll(id="fleet-detail"):
                yield Static(id="fleet-detail-body")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one("#fleet-groups", DataTable)
        self._columns(table, [])
        table.focus()

    @staticmethod
    def _columns(table: DataTable[Text | str], summaries: list[str]) -> None:
        """The columns, each as wide as its widest cell: set here, not measured by the table as rows
        arrive (which, at times, happens after the first paint)."""
        table.clear(columns=True)
        table.add_column("#", width=3)
        table.add_column("nodes", width=5)
        table.add_column("status", width=9)  # "▲ warning"
        header = "findings · ≠ group 1"
        table.add_column(header, width=max([len(header), *(len(s) for s in summaries)]))

    # -- what the app tells us -----------------------------------------------------------------

    def show_reading(self, count: int = 0) -> None:
        read = f" ({count} read)" if count else ""
        self.query_one("#fleet-summary", Static).update(Text(f"Reading the reports in {self.label}…{read}"))
        if self.report is None:
            self.query_one("#fleet-detail-body", Static).update(Text("Reading the reports…", style="dim italic"))

    def show_failure(self, error: str) -> None:
        self.query_one("#fleet-summary", Static).update(Text(f"✖ bnbdoctor fleet failed: {error}", style="bold red"))

    def show_report(self, report: FleetReport) -> None:
        self.report = report
        self.query_one("#fleet-summary", Static).update(summary(report))
        table = self.query_one("#fleet-groups", DataTable)
        summaries = [apart(report, index) for index in range(len(report.groups))]
        self._columns(table, summaries)
        for index, group in enumerate(report.groups):
            table.add_row(
                Text(str(index + 1), justify="right"),
                Text(str(group.count), justify="right"),
                status_text(group.status),
                summaries[index],
                key=str(index),
            )
        self.set_class(not report.groups, "-empty")
        if report.groups:
            table.move_cursor(row=0)
            self.show_group(0)
        else:
            self.query_one("#fleet-detail-body", Static).update(empty_detail(report))

    def show_group(self, index: int) -> None:
        if self.report is None or not 0 <= index < len(self.report.groups):
            return
        self.query_one("#fleet-detail-body", Static).update(group_detail(self.report, index))
        self.query_one("#fleet-detail", VerticalScroll).scroll_home(animate=False)

    @property
    def selected(self) -> Group | None:
        """The highlighted group."""
        if self.report is None or not self.report.groups:
            return None
        row = self.query_one("#fleet-groups", DataTable).cursor_row
        return self.report.groups[row] if 0 <= row < len(self.report.groups) else None

    # -- events --------------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show_group(int(event.row_key.value))
