"""``bnbdoctor fit --text``: verdict, sizes, budgets, device map, remedies, then the findings.

The findings are printed with the doctor's finding layout (:func:`bnbdoctor.render.text.print_finding`);
the fit section before them is specific to the placement (the doctor's report has no device map).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from bnbdoctor.facts import FitDevice
from bnbdoctor.render.fit_lines import (
    BUDGET_COLUMNS,
    VERDICT_LINE,
    budget_rows,
    device_map_lines,
    engine_line,
    request_line,
    size_line,
)
from bnbdoctor.render.text import chosen_by, finished_text, label_grid, print_finding, report_console
from bnbdoctor.report import Report
from bnbdoctor.units import human

_MAX_MAP_ROWS = 40


def _budget_table(devices: list[FitDevice]) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for name in BUDGET_COLUMNS:
        table.add_column(name, no_wrap=name != BUDGET_COLUMNS[-1], overflow="fold")
    for row in budget_rows(devices):
        table.add_row(*row)
    return table


def render_fit_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """The fit report as text (``width`` None: the terminal's, 100 when not a terminal)."""
    fit = report.facts.fit
    console, buffer = report_console(color, width)
    console.print(Text(f"bnbdoctor fit {report.tool_version}", style="bold"))
    if fit is None:
        console.print("no fit facts in this report")
        return buffer.getvalue()
    head = label_grid(9)
    head.add_row(
        "Model", f"{fit.model} ({fit.model_class or fit.architecture}, {fit.model_type}, {fit.dtype or 'dtype auto'})"
    )
    head.add_row("Request", request_line(fit))
    head.add_row("Engine", engine_line(fit))
    head.add_row("Python", f"{fit.python} ({chosen_by(fit.python_selected_by)})")
    console.print(head)
    console.print()
    line, style = VERDICT_LINE.get(fit.verdict, (fit.verdict, "bold"))
    console.print(Text(line, style=style))
    if fit.error_text:
        console.print(Text(f"  ValueError: {fit.error_text.strip()}", style="red"), soft_wrap=False)
    console.print()
    sizes = label_grid(9)
    sizes.add_row("Size", size_line(fit))
    if fit.quant_state_bytes:
        sizes.add_row(
            "Not counted", f"quantization state {human(fit.quant_state_bytes)}, CUDA context, activations, KV cache"
        )
    if fit.biggest_leaf_bytes:
        sizes.add_row(
            "Largest",
            f"leaf {fit.biggest_leaf} {human(fit.biggest_leaf_bytes)}; no-split block "
            f"{fit.biggest_no_split} {human(fit.biggest_no_split_bytes)}",
        )
    console.print(sizes)
    console.print()
    if fit.devices:
        console.print(Text("Budgets and use", style="bold"))
        console.print(_budget_table(fit.devices))
        console.print()
    if fit.placement:
        console.print(Text("Predicted device map (collapsed)", style="bold"))
        rows = device_map_lines(fit.placement)
        grid = label_grid(9)
        for name, device in rows[:_MAX_MAP_ROWS]:
            grid.add_row(f"  {name}", device)
        if len(rows) > _MAX_MAP_ROWS:
            grid.add_row("  ...", f"{len(rows) - _MAX_MAP_ROWS} more entries (see --json)")
        console.print(grid)
        console.print()
    if fit.largest_unquantized:
        console.print(Text("Largest unquantized tensors", style="bold"))
        grid = label_grid(9)
        floor = max(1 << 20, int((fit.unquantized_bytes or 0) * 0.01))
        shown = [t for t in fit.largest_unquantized if t.bytes >= floor][:5] or fit.largest_unquantized[:1]
        for t in shown:
            grid.add_row(f"  {t.kind}", f"{t.name} {tuple(t.shape)} {t.dtype} {human(t.bytes)}")
        console.print(grid)
        console.print()
    passing = [r for r in fit.remedies if r.status == "passes"]
    if passing:
        console.print(Text("Remedies that pass (each simulated with the same engine)", style="bold"))
        for number, remedy in enumerate(passing, 1):
            console.print(Text(f"  {number}. {remedy.title}", style="green"))
            if remedy.detail:
                console.print(Text(f"     {remedy.detail}", style="dim"))
            for code_line in remedy.code.splitlines():
                console.print(Text(f"       {code_line}"), soft_wrap=True)
        console.print()
    unverified = [r for r in fit.remedies if r.status == "unverified"]
    for remedy in unverified:
        console.print(Text(f"  ? {remedy.title}: {remedy.detail}", style="yellow"))
        console.print()
    for note in fit.notes:
        console.print(Text(f"note: {note}", style="dim"))
    if fit.notes:
        console.print()
    for finding in report.findings:
        print_finding(console, finding)
    console.print(Text(f"Summary: {report.summary.line()}", style="bold"))
    return finished_text(buffer.getvalue(), color)


class FitTextRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``bnbdoctor fit --text``."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return render_fit_text(report, color=color)
