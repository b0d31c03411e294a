"""HelpScreen: every key of the app, and what each view shows."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: (keys, what they do), grouped; docs/tui.md repeats this table.
KEYS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Findings",
        [
            ("↑ ↓  PgUp PgDn  Home End", "move through findings and checks"),
            ("Tab / Shift+Tab", "move between the list and the detail pane (scroll it with ↑ ↓)"),
            ("c", "copy the first command of the selected finding (OSC 52 clipboard)"),
            ("1 … 9", "copy the command with that number"),
            ("p", "show or hide the passed and skipped checks"),
        ],
    ),
    (
        "Facts",
        [
            ("/", "search the facts (name, value, or dotted path such as gpu.devices[0])"),
            ("Enter (in search)", "go to the first match"),
            ("Esc (in search)", "clear the search; again to leave it"),
            ("Enter / Space", "open or close a section"),
            ("c", "copy the value of the fact under the cursor"),
        ],
    ),
    (
        "Explain",
        [
            ("Ctrl+R", "explain the log in the log box"),
            ("a paste", "goes into the log box (outside it, it replaces the log)"),
            ("Enter (in Log file)", "load that file into the log box and explain it"),
            ("c / 1 … 9", "copy a command of the selected finding"),
            ("Tab / Esc", "move to the fields and buttons / leave the log box"),
        ],
    ),
    (
        "Fit",
        [
            ("Ctrl+R", "run the fit, as Enter in a field does (a few seconds)"),
            ("c", "copy the code of the highlighted remedy (OSC 52 clipboard)"),
            ("1 … 9", "copy the code of the remedy with that number"),
            ("Tab / Esc", "move to the fields / leave a field"),
        ],
    ),
    (
        "Everywhere",
        [
            ("v", "switch view: Findings, Facts, Explain, Fit"),
            ("r", "re-run: probe again (or re-apply the rules to a saved report)"),
            ("e", "export the report to a file (JSON; Findings and Facts)"),
            ("t", "toggle light and dark theme"),
            ("? / F1", "this help"),
            ("q / Ctrl+C / Ctrl+Q", "quit (the exit code is the last report's, as with --text)"),
        ],
    ),
]


VIEWS_TEXT = Text.assemble(
    ("Findings", "bold"),
    ": errors, then warnings, info, passed and skipped checks; the pane beside the list says "
    "why, shows the evidence and what to type.\n",
    ("Facts", "bold"),
    ": everything the probes found, as a tree.\n",
    ("Explain", "bold"),
    ": paste a console log; its findings, root cause first, with how sure each is and the log lines it rests on.\n",
    ("Fit", "bold"),
    ": will a 4/8-bit from_pretrained place a model on the GPUs? The verdict, the exact "
    "ValueError, budgets, device map, and the remedies that pass with their code.\n",
)


def help_table(groups: list[tuple[str, list[tuple[str, str]]]] | None = None) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for group, rows in KEYS if groups is None else groups:
        table.add_row(Text.assemble((group, "bold underline")), "")
        for keys, what in rows:
            table.add_row(keys, what)
        table.add_row("", "")
    table.add_row(Text.assemble(("Esc, q or ? closes this help.", "dim")), "")
    return table


class HelpScreen(ModalScreen[None]):
    """A modal list of keys: the doctor app's (:data:`KEYS`, :data:`VIEWS_TEXT`) unless told others."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", key_display="Esc"),
    ]

    def __init__(
        self,
        keys: list[tuple[str, list[tuple[str, str]]]] | None = None,
        views: Text | None = None,
        title: str = "bnbdoctor: keys",
    ) -> None:
        super().__init__()
        self.keys = keys
        self.views = views if views is not None else VIEWS_TEXT
        self.title = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(self.views, id="help-views")
            yield Static(help_table(self.keys), id="help-keys")

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = self.title
