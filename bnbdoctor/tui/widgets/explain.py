"""The Explain tab: paste a console log (or load a file) and see what it shows, root cause first.

The same pipeline as ``bnbdoctor explain`` (:func:`bnbdoctor.explain.explain_text` for pasted
text, :func:`~bnbdoctor.explain.explain_file` for a file) runs in a thread worker. The ranked
findings are listed with how sure each is and the log lines it rests on; the detail pane is the
Findings tab's, which adds the confidence and what to run on the machine for a finding from a log.
Highlighting a finding selects its first log line in the log.

Text enters the log box with ``\\n`` line ends whatever it came with (:func:`for_the_log_box`):
terminals turn the newlines of a paste into ``\\r`` (tmux, many emulators), and the box's rows
must be the lines ``bnbdoctor explain`` numbers, so that a finding selects its own line.
"""

from __future__ import annotations

import os
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.content import Content
from textual.widgets import Button, Input, TextArea
from textual.widgets.option_list import Option
from textual.widgets.text_area import Selection

from bnbdoctor.explain import ExplainError, explain_file, explain_text
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.logs.clean import normalize_newlines
from bnbdoctor.report import Report
from bnbdoctor.tui.settings import UiSettings
from bnbdoctor.tui.widgets.detail import CONFIDENCE, FindingDetail, log_lines_text
from bnbdoctor.tui.widgets.findings import SEVERITY_STYLE, Entry, EntryList, entry_prompt
from bnbdoctor.tui.widgets.tool import ToolStatus, ToolView, labelled_input

NO_FAILURE = "No error in this log: no known bitsandbytes failure found."
EMPTY_LOG = "Nothing to explain: the log is empty."


def nothing_found(report: Report) -> str:
    """The answer for a log without a failure, as the CLI says it: an empty log is not a clean one."""
    return EMPTY_LOG if report.source.get("empty") == "true" else NO_FAILURE


#: Logs larger than this are explained whole but shown only in part.
SHOW_AT_MOST = 2 * 1024 * 1024
IDLE = "Paste a log (or type the path of a log file) and press Ctrl+R."
HOW = (
    "Paste the console log of a bitsandbytes failure (a paste anywhere in this tab goes into the log "
    "box), or type the path of a log file and press Enter. Ctrl+R explains the log box. Tab moves between "
    "the fields and the results; Esc leaves a field."
)


#: Characters :meth:`str.splitlines` (and so the log box) breaks a line at, but the log reader does not.
_OTHER_LINE_BREAKS = str.maketrans(dict.fromkeys("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", " "))


def for_the_log_box(text: str) -> str:
    """``text`` as the log box holds it: ``\\r\\n`` and lone ``\\r`` made ``\\n``, and the other characters
    a text area breaks lines at made spaces, so that row N of the box is line N of the report."""
    return normalize_newlines(text).translate(_OTHER_LINE_BREAKS)


class LogArea(TextArea):
    """The log box: a text area whose pastes arrive with the line ends the log reader numbers."""

    async def _on_paste(self, event: events.Paste) -> None:
        # Textual calls each class's handler along the MRO, this one first: TextArea's own
        # _on_paste then inserts the text as fixed here (calling it from here would insert it twice).
        event.text = for_the_log_box(event.text)


def failures(report: Report) -> list[Entry]:
    """The findings of an explain report as entries, in rank order (the report's order)."""
    seen: dict[str, int] = {}
    out = []
    for finding in sorted(report.findings, key=lambda f: f.rank if f.rank is not None else 1 << 30):
        out.append(Entry("finding", seen.get(finding.rule_id, 0), finding=finding))
        seen[finding.rule_id] = seen.get(finding.rule_id, 0) + 1
    return out


def known_failure(report: Report) -> bool:
    """True when the log shows a failure (an error or warning finding), as ``bnbdoctor explain`` decides."""
    return any(f.severity is not Severity.INFO for f in report.findings)


def explain_prompt(entry: Entry) -> Content:
    """``1. ✖ BNB306  title`` and, under it, how sure and which log lines."""
    finding = entry.item
    if not isinstance(finding, Finding):  # an explain report's entries are all findings
        return entry_prompt(entry)
    icon, style, _ = SEVERITY_STYLE[finding.severity]
    rank = f"{finding.rank}." if finding.rank is not None else "•"
    _, sure_style = CONFIDENCE.get(finding.confidence or "", ("", "bold"))
    under: list[str | tuple[str, str]] = ["\n     "]
    if finding.confidence:
        under += [(finding.confidence, sure_style), (" confidence", "$text-muted")]
    where = log_lines_text(finding.log_lines)
    under.append((f"{' · ' if finding.confidence else ''}{where or 'no log line'}", "$text-muted"))
    return Content.assemble(
        (f"{rank:>3} ", "bold"), (f"{icon} ", style), (finding.rule_id, "bold"), "  ", finding.title, *under
    )


class ExplainList(EntryList):
    """The ranked findings of one explain report."""

    class EntryHighlighted(EntryList.EntryHighlighted):
        """The highlight moved to ``entry`` (None: nothing to show)."""

    def show(self, report: Report | None) -> None:
        found: dict[str, Entry] = {}
        options: list[Option | None] = []
        if report is not None:
            if not known_failure(report):
                options.append(
                    Option(
                        Content.styled(f"✔ {nothing_found(report)}", "$text-success bold"),
                        id="head-none",
                        disabled=True,
                    )
                )
            for entry in failures(report):
                found[entry.key] = entry
                options.append(Option(explain_prompt(entry), id=entry.key))
        self._fill(options, found)


class ExplainView(ToolView):
    """The Explain tab."""

    TOOL = "Explain"
    BAD_INPUT = (ExplainError, OSError)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave_field", "Leave the log", show=False),
        Binding("tab", "first_tab", "Next", show=False),
    ]

    def __init__(self, settings: UiSettings | None = None, *, id: str | None = None) -> None:
        super().__init__(settings, id=id)
        self.explained_text: str | None = None  # the text the last report is about (None: a file too large)
        self._loaded: dict[int, tuple[str, str]] = {}  # generation -> (label, text) of a file loaded
        self._first_tab = False  # the tab was just shown: the next Tab goes to the first field

    def compose(self) -> ComposeResult:
        with Horizontal(id="explain-bar", classes="tool-row"):
            yield from labelled_input("Log file", "explain-path", "path of a log file (Enter loads and explains it)")
            yield Button("Load", id="explain-load", compact=True)
            yield Button("Explain", id="explain-run", variant="primary", compact=True)
        yield LogArea(
            id="explain-log",
            show_line_numbers=True,
            soft_wrap=False,
            placeholder="Paste the console log of a bitsandbytes failure here: a traceback, the output "
            "of python -m bitsandbytes, a notebook cell...",
        )
        yield ToolStatus(IDLE, id="explain-status")
        with Container(id="explain-body"):
            yield ExplainList(id="explain-list")
            yield FindingDetail(id="explain-detail")

    def on_mount(self) -> None:
        self.path_input.cursor_blink = self.settings.cursor_blink
        self.log_area.cursor_blink = self.settings.cursor_blink
        self.detail.show(None, HOW)

    @property
    def log_area(self) -> TextArea:
        return self.query_one("#explain-log", TextArea)

    @property
    def path_input(self) -> Input:
        return self.query_one("#explain-path", Input)

    @property
    def findings(self) -> ExplainList:
        return self.query_one(ExplainList)

    @property
    def detail(self) -> FindingDetail:
        return self.query_one("#explain-detail", FindingDetail)

    def focus_default(self) -> None:
        """The findings (not a text field, so that v keeps switching tabs); the first Tab then goes to the first
        field, the log file's path, as in Fit (the findings come after the fields, so focus_next would skip them)."""
        self._first_tab = True
        self.findings.focus()

    def action_first_tab(self) -> None:
        if self._first_tab and self.findings.has_focus:
            self._first_tab = False
            self.path_input.focus()
            return
        self._first_tab = False
        self.screen.focus_next()

    # -- runs --------------------------------------------------------------------------------------

    def run(self) -> bool:
        return self.explain()

    def explain(self) -> bool:
        """Explain the text in the log area."""
        text = self.log_area.text
        self.explained_text = text
        return self.start("Explaining the pasted log", lambda progress: explain_text(text, "pasted log"))

    def load(self, path: str | None = None) -> bool:
        """Load a log file into the log area and explain it (the file, byte for byte)."""
        given = (path if path is not None else self.path_input.value).strip()
        if not given:
            self.notify("Type the path of a log file first.", severity="warning")
            return False
        target = os.path.expanduser(given)
        loaded = self._loaded
        generation = self.generation + 1

        def task(progress: object) -> Report:
            report = explain_file(target)  # ExplainError: no such file, a folder, unreadable
            with open(target, "rb") as handle:
                data = handle.read(SHOW_AT_MOST + 1)
            loaded[generation] = (os.path.basename(target) or target, for_the_log_box(data.decode("utf-8", "replace")))
            return report

        return self.start(f"Explaining {given}", task)

    def show_report(self, report: Report, elapsed: float) -> None:
        loaded = self._loaded.pop(self.generation, None)
        if loaded is not None:
            _, text = loaded
            if len(text) > SHOW_AT_MOST:
                self.explained_text = None
                self.log_area.load_text(text[:SHOW_AT_MOST])
                self.notify("The log is large: it is explained whole, but shown only in part.", timeout=4)
            else:
                self.explained_text = text
                self.log_area.load_text(text)
        self.status.stop(self.summary(report, elapsed))
        self.findings.show(report)
        if self.has_focus_within:  # not when the user has moved to another tab meanwhile
            self.findings.focus()

    def summary(self, report: Report, elapsed: float) -> Content:
        log = report.facts.log
        lines = log.lines if log else 0
        matched = len({m.line for m in log.matches}) if log else 0
        label = report.source.get("label", "log")
        parts: list[str | tuple[str, str]] = []
        if known_failure(report):
            s = report.summary
            counts = ", ".join(
                f"{n} {word}{'s' if n != 1 and word != 'info' else ''}"
                for n, word in ((s.errors, "error"), (s.warnings, "warning"), (s.info, "info"))
                if n
            )
            parts.append(
                (f"✖ {counts}" if s.errors else f"▲ {counts}", "$text-error bold" if s.errors else "$text-warning bold")
            )
            parts.append(", root cause first")
        else:
            parts.append((f"✔ {nothing_found(report)}", "$text-success bold"))
        parts.append((f"  {label}: {lines} line{'s' if lines != 1 else ''}, {matched} recognised", "$text-muted"))
        if self.settings.show_timings:
            parts.append((f" ({elapsed:.2f} s)", "$text-muted"))
        return Content.assemble(*parts)

    # -- events ------------------------------------------------------------------------------------

    @on(ExplainList.EntryHighlighted)
    def _highlighted(self, event: ExplainList.EntryHighlighted) -> None:
        event.stop()
        if self.report is None:
            self.detail.show(None, HOW)
            return
        self.detail.show(
            event.entry,
            nothing_found(self.report)
            + " Facts from a log are partial: run bnbdoctor on the machine itself to check it.",
        )
        finding = event.entry.finding if event.entry is not None else None
        if finding is not None and finding.log_lines and self.explained_text == self.log_area.text:
            row = finding.log_lines[0] - 1
            document = self.log_area.document
            if 0 <= row < document.line_count:  # the whole line selected, the cursor at its start
                self.log_area.selection = Selection((row, len(document.get_line(row))), (row, 0))
                self.log_area.scroll_cursor_visible(center=True, animate=False)

    @on(Button.Pressed, "#explain-run")
    def _run_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.explain()

    @on(Button.Pressed, "#explain-load")
    def _load_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.load()

    @on(Input.Submitted, "#explain-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.load()

    def on_paste(self, event: events.Paste) -> None:
        """A paste outside the log box (on the findings, a button) replaces the log with it."""
        if self.app.focused is self.log_area or isinstance(self.app.focused, Input):
            return  # the log box (or the path field) took it
        event.stop()
        self.log_area.load_text(for_the_log_box(event.text))
        self.log_area.focus()

    def action_leave_field(self) -> None:
        self.findings.focus()

    def selected_commands(self) -> tuple[str, list[str]] | None:
        """(rule id, commands) of the highlighted finding."""
        entry = self.findings.selected
        return (entry.rule_id, entry.commands) if entry is not None else None
