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

from bnbdoctor.tui.export import EXPORT_FORMATS, ExportRequest


class ExportScreen(ModalScreen["ExportRequest | None"]):
    """Dismisses with an :class:`ExportRequest`, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        path: Path,
        formats: list[str],
        chosen: str,
        *,
        cursor_blink: bool = True,
        suffixes: Mapping[str, str] | None = None,
        title: str = "Export the report",
    ) -> None:
        super().__init__()
        self.path = path
        #: Each format's file suffix (default: the doctor's formats, :data:`EXPORT_FORMATS`).
        self.suffixes = dict(suffixes) if suffixes is not None else {n: f.suffix for n, f in EXPORT_FORMATS.items()}
        self.title = title
        self.formats = formats
        self.chosen = chosen
        self.cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Label("Format")
            with RadioSet(id="export-format"):
                for name in self.formats:
                    yield RadioButton(
                        name.upper() if len(name) <= 4 else name.capitalize(), value=name == self.chosen, name=name
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
        name = event.pressed.name or self.chosen
        self.chosen = name
        path_input = self.query_one("#export-path", Input)
        path_input.value = str(Path(path_input.value).with_suffix(self.suffixes[name]))

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
