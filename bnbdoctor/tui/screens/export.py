"""ExportScreen: where to write the report (the doctor's or the fleet's), and in which format."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet

from bnbdoctor.render import OutputFormat
from bnbdoctor.tui.export import ExportRequest


class ExportScreen(ModalScreen["ExportRequest | None"]):
    """Dismisses with an :class:`ExportRequest`, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        path: Path,
        formats: Mapping[OutputFormat, str],
        chosen: OutputFormat,
        *,
        cursor_blink: bool = True,
        title: str = "Export the report",
    ) -> None:
        super().__init__()
        self.path = path
        #: The formats offered, in menu order, each with its file suffix
        #: (:func:`bnbdoctor.render.formats.app_exports`).
        self.formats = dict(formats)
        self.title = title
        self.chosen = chosen
        self.cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Label("Format")
            with RadioSet(id="export-format"):
                for fmt in self.formats:
                    name = fmt.value
                    yield RadioButton(
                        name.upper() if len(name) <= 4 else name.capitalize(), value=fmt is self.chosen, name=name
                    )
            yield Label("File")
            path_input = Input(str(self.path), id="export-path")
            path_input.cursor_blink = self.cursor_blink
            yield path_input
            with Horizontal(id="export-buttons"):
                yield Button("Write", variant="primary", id="export-ok")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-dialog").border_title = self.title
        self.query_one("#export-path", Input).focus()

    @on(RadioSet.Changed, "#export-format")
    def _format_changed(self, event: RadioSet.Changed) -> None:
        if event.pressed.name:
            self.chosen = OutputFormat(event.pressed.name)
        path_input = self.query_one("#export-path", Input)
        path_input.value = str(Path(path_input.value).with_suffix(self.formats[self.chosen]))

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export-ok")
    def _accept(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        if not value:
            self.notify("Type a file name.", severity="warning")
            return
        self.dismiss(ExportRequest(Path(value), self.chosen))

    @on(Button.Pressed, "#export-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
