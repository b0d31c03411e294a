"""The Fit tab: will a bitsandbytes 4/8-bit ``from_pretrained`` place this model on the GPUs?

The form holds what ``bnbdoctor fit`` is asked (model folder or config.json, quantization, device
map, simulated GPUs or max_memory); ``Run`` (Ctrl+R, or Enter in a field) calls
:func:`bnbdoctor.fit.run_fit` in a thread worker, which takes a few seconds. The results: the
verdict and the exact ValueError text, the remedies that pass with their code (``c`` copies the
highlighted one, ``1``-``9`` the one with that number), the per-device budgets, the largest
unquantized tensors, the predicted device map (runs of layers collapsed), the BNB4xx findings and
the engine that computed it. Bad input (a missing folder, a malformed memory string) is a one-line
notification. :mod:`bnbdoctor.fit` is imported only when the tab is used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import (
    Button,
    DataTable,
    Input,
    Label,
    OptionList,
    Select,
    Static,
    Tree,
)
from textual.widgets.option_list import Option

from bnbdoctor.render.fit_lines import BUDGET_COLUMNS, budget_rows, device_label
from bnbdoctor.report import Report
from bnbdoctor.tui.clipboard import copy_and_tell
from bnbdoctor.tui.hostmem import free_ram_bytes
from bnbdoctor.tui.widgets.findings import SEVERITY_STYLE
from bnbdoctor.tui.widgets.tool import ToolStatus, ToolView, labelled_input

if TYPE_CHECKING:
    from bnbdoctor.facts import FitFacts, FitRemedy
    from bnbdoctor.fit.options import FitOptions

#: The choices of the form (``bnbdoctor.fit.options`` has the same; a test checks it).
QUANTS = ("4bit", "8bit")
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")
#: The last column wraps at this width (rows grow), so that the table fits 100 columns.
WHY_WIDTH = 26
IDLE = "Type a model folder (or its config.json) and GPUs or max memory, then press Ctrl+R."
HOW = (
    "Will from_pretrained(..., quantization_config=BitsAndBytesConfig(...), device_map=...) place this model "
    "on the GPUs? Fill in the form above (Tab moves to it): GPUs simulates free GPU memory (24GiB,24GiB or "
    "2x24GiB), max memory is the max_memory= you pass (0=24GiB,cpu=64GiB). Enter or Ctrl+R runs "
    "transformers' own placement, offline, in a few seconds."
)
#: The device map is shown open when it has at most this many rows.
OPEN_MAP_ROWS = 8


def cpu_hint(free: int | None) -> str:
    """The CPU RAM field's placeholder: the default a fit uses when the field is empty."""
    from bnbdoctor.units import human

    return f"this machine's: {human(free)} free" if free is not None else "this machine's free RAM"


def verdict_style(line: str) -> str:
    """Theme colours for a ``VERDICT_LINE`` text, by its icon."""
    return {"✔": "$text-success bold", "✖": "$text-error bold", "▲": "$text-warning bold"}.get(
        line[:1], "$text-warning bold"
    )


def passing(fit: FitFacts) -> list[FitRemedy]:
    """The remedies that pass, in the report's order (the ones a user can paste)."""
    return [r for r in fit.remedies if r.status == "passes"]


def fit_options(
    model: str, quant: str, device_map: str, gpus: str = "", cpu_memory: str = "", max_memory: str = ""
) -> FitOptions:
    """The form's fields as :class:`~bnbdoctor.fit.FitOptions` (empty fields left out)."""
    from bnbdoctor.fit.options import FitOptions

    return FitOptions(
        model=model.strip(),
        quant=quant,
        device_map=device_map,
        gpus=gpus.strip() or None,
        cpu_memory=cpu_memory.strip() or None,
        max_memory=max_memory.strip() or None,
    )


class FitView(ToolView):
    """The Fit tab."""

    TOOL = "Fit"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave_field", "Leave the field", show=False)]

    def compose(self) -> ComposeResult:
        with Horizontal(id="fit-row-model", classes="tool-row"):
            yield from labelled_input("Model", "fit-model", "a model folder or its config.json")
            yield Button("Run", id="fit-run", variant="primary", compact=True)
        with Horizontal(id="fit-row-choices", classes="tool-row"):
            yield Label("Quant", classes="tool-label")
            yield Select([(q, q) for q in QUANTS], value=QUANTS[0], allow_blank=False, id="fit-quant", compact=True)
            yield Label("Device map", classes="tool-label")
            yield Select(
                [(m, m) for m in DEVICE_MAPS],
                value=DEVICE_MAPS[0],
                allow_blank=False,
                id="fit-device-map",
                compact=True,
            )
        with Horizontal(id="fit-row-memory", classes="tool-row"):
            yield from labelled_input(
                "GPUs",
                "fit-gpus",
                "e.g. 24GiB,24GiB or 2x24GiB",
                "Free memory of simulated GPUs (max_memory=None): 24GiB,24GiB or 2x24GiB",
            )
            yield from labelled_input(
                "CPU RAM",
                "fit-cpu",
                cpu_hint(free_ram_bytes()),
                "Free CPU RAM with GPUs (empty: what this machine has free when the fit runs)",
            )
        with Horizontal(id="fit-row-max", classes="tool-row"):
            yield from labelled_input(
                "Max memory",
                "fit-max-memory",
                "e.g. 0=24GiB,cpu=64GiB (instead of GPUs)",
                "The max_memory= you pass (instead of GPUs)",
            )
        yield ToolStatus(IDLE, id="fit-status")
        with VerticalScroll(id="fit-results"):
            yield Static(id="fit-verdict")
            yield Static(id="fit-error")
            yield Static("Remedies that pass", id="fit-remedies-title", classes="fit-section")
            yield OptionList(id="fit-remedies")
            yield Static(id="fit-code")
            yield Static(id="fit-other")
            yield Static("Budgets and use", classes="fit-section fit-budgets")
            budgets: DataTable[str] = DataTable(
                id="fit-budgets", cursor_type="row", zebra_stripes=True, classes="fit-budgets"
            )
            yield budgets
            yield Static("Largest unquantized tensors", classes="fit-section fit-tensors")
            yield Static(id="fit-tensors", classes="fit-tensors")
            device_map: Tree[None] = Tree("Predicted device map", id="fit-map")
            device_map.guide_depth = 3
            yield device_map
            yield Static(id="fit-findings")
            yield Static(id="fit-engine")

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = self.settings.cursor_blink
        table = self.query_one("#fit-budgets", DataTable)
        table.add_columns(*BUDGET_COLUMNS[:-1])
        table.add_column(BUDGET_COLUMNS[-1], width=WHY_WIDTH)
        self.query_one("#fit-verdict", Static).update(Content.styled(HOW, "$text-muted italic"))
        for widget in self.query_one("#fit-results").children:
            widget.display = widget.id == "fit-verdict"

    # -- the form ----------------------------------------------------------------------------------

    def field(self, name: str) -> Input:
        return self.query_one(f"#fit-{name}", Input)

    def choice(self, name: str) -> str:
        return str(self.query_one(f"#fit-{name}", Select).value)

    def set_form(
        self,
        model: str = "",
        *,
        quant: str = "4bit",
        device_map: str = "auto",
        gpus: str = "",
        cpu_memory: str = "",
        max_memory: str = "",
    ) -> None:
        """Fill the form (for tests and callers that know the model)."""
        self.field("model").value = model
        self.query_one("#fit-quant", Select).value = quant
        self.query_one("#fit-device-map", Select).value = device_map
        self.field("gpus").value = gpus
        self.field("cpu").value = cpu_memory
        self.field("max-memory").value = max_memory

    @property
    def remedies_list(self) -> OptionList:
        return self.query_one("#fit-remedies", OptionList)

    def focus_default(self, scroll_visible: bool = True) -> None:
        """The remedies, else the results (not a text field, so that v keeps switching tabs)."""
        if self.report is not None and self.remedies_list.display and self.remedies_list.option_count:
            self.remedies_list.focus(scroll_visible)
        else:
            self.query_one("#fit-results", VerticalScroll).focus(scroll_visible)

    def bad_input(self) -> tuple[type[BaseException], ...]:
        from bnbdoctor.fit.options import FitInputError

        return (FitInputError,)

    def run(self) -> bool:
        return self.run_fit()

    def run_fit(self) -> bool:
        """Run the fit the form describes."""
        model = self.field("model").value.strip()
        if not model:
            self.notify("Type a model folder or its config.json first.", severity="warning")
            self.field("model").focus()
            return False
        fields = {
            "model": model,
            "quant": self.choice("quant"),
            "device_map": self.choice("device-map"),
            "gpus": self.field("gpus").value,
            "cpu_memory": self.field("cpu").value,
            "max_memory": self.field("max-memory").value,
        }

        def task(progress: Callable[[str], None]) -> Report:
            from bnbdoctor.fit.core import run_fit

            return run_fit(fit_options(**fields), progress=progress)

        return self.start(f"Fitting {model}", task)

    # -- the results -------------------------------------------------------------------------------

    def show_report(self, report: Report, elapsed: float) -> None:
        from bnbdoctor.render.fit_lines import VERDICT_LINE, request_line

        fit = report.facts.fit
        if fit is None:  # not a fit report: nothing run_fit returns
            self.status.stop(Content.styled("✖ no fit facts in the report", "$text-error"))
            return
        status: list[str | tuple[str, str]] = [("Simulated: ", "$text-muted"), request_line(fit)]
        if self.settings.show_timings:
            status.append((f"  ({elapsed:.1f} s)", "$text-muted"))
        self.status.stop(Content.assemble(*status))
        for widget in self.query_one("#fit-results").children:
            widget.display = True
        line, _ = VERDICT_LINE.get(fit.verdict, (fit.verdict, ""))
        self.query_one("#fit-verdict", Static).update(Content.styled(line, verdict_style(line)))
        error = self.query_one("#fit-error", Static)
        error.display = bool(fit.error_text)
        error.update(Content.styled(f"ValueError: {(fit.error_text or '').strip()}", "$text-error"))
        self._show_remedies(fit)
        self._show_budgets(fit)
        self._show_tensors(fit)
        self._show_map(fit)
        self._show_findings(report)
        self._show_engine(fit)
        if self.has_focus_within:  # not when the user has moved to another tab meanwhile
            self.focus_default(scroll_visible=False)
        results = self.query_one("#fit-results", VerticalScroll)
        results.scroll_home(animate=False)
        self.call_after_refresh(results.scroll_home, animate=False)

    def _show_remedies(self, fit: FitFacts) -> None:
        remedies = passing(fit)
        listing = self.remedies_list
        listing.set_options(
            [
                Option(Content.assemble((f"{n}. ", "bold"), remedy.title), id=f"remedy-{n}")
                for n, remedy in enumerate(remedies, 1)
            ]
        )
        listing.display = bool(remedies)
        self.query_one("#fit-code", Static).display = bool(remedies)
        self.query_one("#fit-remedies-title", Static).update(
            "Remedies that pass (each simulated with the same engine)" if remedies else "Remedies"
        )
        if remedies:
            listing.highlighted = 0
            self._show_code(remedies[0], 1, len(remedies))
        other: list[Content] = []
        if not remedies:
            other.append(
                Content.styled(
                    "Nothing to change."
                    if fit.verdict == "fits"
                    else "No simulated change passes."
                    if fit.remedies
                    else "No remedy was simulated.",
                    "$text-muted italic",
                )
            )
        other += [
            Content.styled(f"? {r.title}: {r.detail}", "$text-warning")
            for r in fit.remedies
            if r.status == "unverified"
        ]
        shown = self.query_one("#fit-other", Static)
        shown.display = bool(other)
        shown.update(Content("\n").join(other))

    def _show_code(self, remedy: FitRemedy, number: int, count: int) -> None:
        parts: list[Content] = []
        if remedy.detail:
            parts.append(Content.styled(remedy.detail, "$text-muted"))
        if remedy.code:
            parts.append(Content("\n").join(Content.styled(line, "$text-success") for line in remedy.code.splitlines()))
            parts.append(
                Content.styled(
                    "c copies this code"
                    + (f"; 1-{min(count, 9)} copy the remedy with that number" if count > 1 else ""),
                    "$text-muted italic",
                )
            )
        else:
            parts.append(Content.styled("(no code: a change of hardware)", "$text-muted italic"))
        self.query_one("#fit-code", Static).update(Content("\n").join(parts))

    def _show_budgets(self, fit: FitFacts) -> None:
        table = self.query_one("#fit-budgets", DataTable)
        table.clear()
        for row in budget_rows(fit.devices):
            table.add_row(*row[:-1], Text(row[-1], overflow="fold"), height=None)
        for widget in self.query(".fit-budgets"):
            widget.display = bool(fit.devices)

    def _show_tensors(self, fit: FitFacts) -> None:
        from bnbdoctor.units import human

        floor = max(1 << 20, int((fit.unquantized_bytes or 0) * 0.01))
        shown = [t for t in fit.largest_unquantized if t.bytes >= floor][:5] or fit.largest_unquantized[:1]
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_column(no_wrap=True, justify="right")
        for t in shown:
            grid.add_row(t.kind, Text(f"{t.name} {tuple(t.shape)} {t.dtype}"), human(t.bytes))
        self.query_one("#fit-tensors", Static).update(grid)
        for widget in self.query(".fit-tensors"):
            widget.display = bool(shown)

    def _show_map(self, fit: FitFacts) -> None:
        from bnbdoctor.render.fit_lines import device_map_lines

        rows = device_map_lines(fit.placement)
        tree = self.query_one("#fit-map", Tree)
        tree.display = bool(rows)
        counts: dict[str, int] = {}
        for _, device in rows:
            counts[device] = counts.get(device, 0) + 1
        where = ", ".join(f"{n} on {device_label(device)}" for device, n in counts.items())
        tree.clear()
        tree.root.set_label(
            Text.assemble(
                ("Predicted device map", "bold"), f": {len(rows)} entr{'y' if len(rows) == 1 else 'ies'} ({where})"
            )
        )
        width = max((len(name) for name, _ in rows), default=0)
        for name, device in rows:
            tree.root.add_leaf(
                Text.assemble(f"{name:<{width}}  ", (device_label(device), "bold" if device.isdigit() else "bold red"))
            )
        if len(rows) > OPEN_MAP_ROWS:
            tree.root.collapse()
        else:
            tree.root.expand()

    def _show_findings(self, report: Report) -> None:
        lines = [
            Content.assemble(
                (f"{SEVERITY_STYLE[f.severity][0]} ", SEVERITY_STYLE[f.severity][1]), (f.rule_id, "bold"), "  ", f.title
            )
            for f in report.findings
        ]
        findings = self.query_one("#fit-findings", Static)
        findings.display = bool(lines)
        findings.update(Content("\n").join([Content.styled("Findings", "bold underline $text-primary"), *lines]))

    def _show_engine(self, fit: FitFacts) -> None:
        from bnbdoctor.render.fit_lines import engine_line

        shown = fit if self.settings.show_timings else replace(fit, timings={})
        lines = [f"Engine: {engine_line(shown)}"]
        if fit.engine_note:
            lines.append(f"note: {fit.engine_note}")
        lines += [f"note: {note}" for note in fit.notes]
        self.query_one("#fit-engine", Static).update(Content.styled("\n".join(lines), "$text-muted"))

    # -- copying -----------------------------------------------------------------------------------

    def remedy(self, number: int = 0) -> tuple[int, FitRemedy] | None:
        """(number, remedy): the highlighted remedy (``number`` 0) or the one with that number."""
        if self.report is None or self.report.facts.fit is None:
            return None
        remedies = passing(self.report.facts.fit)
        if number == 0:
            index = self.remedies_list.highlighted
            number = (index if index is not None else 0) + 1
        if not 1 <= number <= len(remedies):
            return None
        return number, remedies[number - 1]

    def copy_remedy(self, number: int = 0) -> bool:
        """Copy a remedy's code to the clipboard and say so; a warning when there is none."""
        if self.report is None:
            self.notify("Run a fit first (Ctrl+R).", severity="warning")
            return False
        found = self.remedy(number)
        if found is None:
            count = len(passing(self.report.facts.fit)) if self.report.facts.fit else 0
            self.notify(
                "No remedy passes: nothing to copy."
                if not count
                else f"There {'is' if count == 1 else 'are'} {count} remed{'y' if count == 1 else 'ies'}, "
                f"not {number}.",
                severity="warning",
            )
            return False
        shown, remedy = found
        if not remedy.code:
            self.notify(f"Remedy {shown} is a change of hardware: no code to copy.", severity="warning")
            return False
        copy_and_tell(self, remedy.code, f"Remedy {shown}: {remedy.title}")
        return True

    # -- events ------------------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#fit-remedies")
    def _remedy_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.report is None or self.report.facts.fit is None:
            return
        remedies = passing(self.report.facts.fit)
        if 0 <= event.option_index < len(remedies):
            self._show_code(remedies[event.option_index], event.option_index + 1, len(remedies))

    @on(Button.Pressed, "#fit-run")
    def _run_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.run_fit()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.run_fit()

    def action_leave_field(self) -> None:
        """Escape in a field (or on a choice): to the remedies when there are some, else the results."""
        if isinstance(self.app.focused, self.FIELDS):
            self.focus_default()
