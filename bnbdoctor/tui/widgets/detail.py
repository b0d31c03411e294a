"""FindingDetail: everything about the highlighted entry, scrollable.

For a finding: the fix with numbered commands first (``c`` copies the first, ``1``-``9`` the one
with that number), so that it shows without scrolling; then why it breaks bitsandbytes (why it
matters, for an info finding), the evidence (facts with values and their dotted paths),
references and the rule's doc page. A finding from a log (the Explain tab) also says how
sure it is, which log lines it rests on, and what to run on the machine to confirm it. For a
check: what it verified, or why it could not run. :func:`detail_blocks` builds the content without
Textual widgets, so tests can read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from bnbdoctor.catalog import entry_url
from bnbdoctor.findings import CheckResult, Finding, Severity
from bnbdoctor.render.proof import proof_short
from bnbdoctor.tui.widgets.findings import PASSED_STYLE, SEVERITY_STYLE, SKIPPED_STYLE, Entry


@dataclass
class Block:
    """One piece of the detail pane: a CSS class (``head``, ``section``, ``command``...), what to
    show, and its plain text (for tests and copying)."""

    kind: str
    visual: Content | RenderableType
    plain: str


def _text(kind: str, text: str, style: str = "") -> Block:
    return Block(kind, Content.styled(text, style) if style else Content(text), text)


#: The heading of a finding's explanation: an info finding does not break anything.
WHY_HEADING = {
    Severity.ERROR: "Why it breaks bitsandbytes",
    Severity.WARNING: "Why it breaks bitsandbytes",
    Severity.INFO: "Why it matters",
}

#: How sure an explain finding is (``Finding.confidence``), as ``bnbdoctor explain`` words it.
CONFIDENCE = {
    "high": ("the log shows the message this finding explains", "$text-success bold"),
    "medium": ("inferred from facts or generic messages in the log", "$text-warning bold"),
    "low": ("the log shows little about it", "$text-muted bold"),
}


def log_lines_text(lines: list[int]) -> str:
    """``log line 8`` / ``log lines 8, 13``; empty without lines."""
    if not lines:
        return ""
    return f"log line{'s' if len(lines) != 1 else ''} {', '.join(map(str, lines))}"


def _confidence(finding: Finding) -> Block:
    level = finding.confidence or ""
    why, style = CONFIDENCE.get(level, ("", "bold"))
    where = log_lines_text(finding.log_lines)
    parts: list[str | tuple[str, str]] = [("Confidence ", "bold"), (level, style)]
    if why:
        parts.append(f": {why}")
    if where:
        parts += ["  ", (f"({where})", "$text-accent")]
    return Block(
        "sure",
        Content.assemble(*parts),
        f"Confidence {level}" + (f": {why}" if why else "") + (f" ({where})" if where else ""),
    )


def _evidence(finding: Finding) -> Block:
    """Label, value, and the fact's dotted path under the value (a Rich grid: values wrap under
    themselves, not under the labels)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    plain = []
    for item in finding.evidence:
        value = Text(item.value)
        if item.fact:
            value.append(f"\n{item.fact}", style="dim italic")
        grid.add_row(item.label, value)
        plain.append(f"{item.label}: {item.value}" + (f" ({item.fact})" if item.fact else ""))
    return Block("evidence", grid, "\n".join(plain))


def _fix_blocks(finding: Finding) -> list[Block]:
    """The fix and its numbered commands (with the copy hint)."""
    remediation = finding.remediation
    if not remediation.text and not remediation.commands:
        return []
    blocks = [_text("section", "Fix")]
    if remediation.text:
        blocks.append(_text("body", remediation.text))
    for number, command in enumerate(remediation.commands, 1):
        blocks.append(
            Block(
                "command",
                Content.assemble((f"{number} $ ", "dim"), (command, "$text-success bold")),
                f"{number} $ {command}",
            )
        )
    if remediation.proof is not None:
        blocks.append(_text("body", proof_short(remediation.proof)))
    if remediation.commands:
        count = len(remediation.commands)
        blocks.append(
            _text(
                "hint",
                "c copies the command"
                if count == 1
                else f"c copies command 1; 1-{min(count, 9)} copy the one with that number",
            )
        )
    return blocks


def _head(head: str, style: str, rule_id: str, rule_name: str) -> Block:
    """The first line of every entry's detail: its outcome (a finding's severity, passed, not checked), then
    the rule's id and name."""
    return Block(
        "head",
        Content.assemble((head, style), "  ", (rule_id, "bold"), (f"  {rule_name}", "dim")),
        f"{head}  {rule_id}  {rule_name}",
    )


def detail_blocks(entry: Entry) -> list[Block]:
    """The detail of one entry, top to bottom."""
    finding = entry.item
    if not isinstance(finding, Finding):
        return _check_blocks(entry, finding)
    icon, style, _ = SEVERITY_STYLE[finding.severity]
    blocks = [
        _head(f"{icon} {finding.severity.value.upper()}", style, finding.rule_id, finding.rule_name),
        _text("title", finding.title),
    ]
    if finding.confidence:
        blocks.append(_confidence(finding))
    blocks += _fix_blocks(finding)
    blocks += [_text("section", WHY_HEADING[finding.severity]), _text("body", finding.explanation)]
    if finding.evidence:
        blocks += [_text("section", "Evidence"), _evidence(finding)]
    if finding.confirm:
        blocks.append(_text("section", "Check on the machine"))
        blocks.extend(
            Block("confirm", Content.assemble(("$ ", "dim"), command), f"$ {command}") for command in finding.confirm
        )
    if finding.follows:
        blocks.append(_text("section", "Also seen, follows from this"))
        blocks.extend(_text("body", f"• {follow.rule_id}  {follow.title}") for follow in finding.follows)
    if finding.references:
        blocks.append(_text("section", "References"))
        blocks.extend(_text("body", f"• {ref}") for ref in finding.references)
    if finding.covers:
        blocks.append(_text("section", "Catalog"))
        blocks.extend(
            Block("body", Content.from_markup(f"• [link={entry_url(c)!r}]{c}[/link]"), f"• {c}  {entry_url(c)}")
            for c in finding.covers
        )
    blocks += [_text("section", "Docs"), _text("body", entry.doc)]
    return blocks


def _check_blocks(entry: Entry, check: CheckResult) -> list[Block]:
    if entry.kind == "passed":
        icon, style, label = PASSED_STYLE[0], PASSED_STYLE[1], "PASSED"
    else:
        icon, style, label = SKIPPED_STYLE[0], "bold $text-muted", "NOT CHECKED"
    blocks = [
        _head(f"{icon} {label}", style, check.rule_id, check.rule_name),
        _text("section", "Verified" if entry.kind == "passed" else "Would verify"),
        _text("body", check.summary),
    ]
    if entry.kind == "skipped":
        blocks += [_text("section", "Why it did not run"), _text("body", check.reason or "not applicable")]
    blocks += [_text("section", "Docs"), _text("body", entry.doc)]
    return blocks


class FindingDetail(VerticalScroll):
    """The detail pane; shows ``placeholder`` until an entry is chosen."""

    entry: reactive[Entry | None] = reactive(None, recompose=True, always_update=True)
    placeholder: reactive[str] = reactive("", recompose=True)

    def compose(self) -> ComposeResult:
        if self.entry is None:
            yield Static(self.placeholder, classes="placeholder")
            return
        for block in detail_blocks(self.entry):
            yield Static(block.visual, classes=f"detail-{block.kind}")

    @property
    def plain(self) -> str:
        """The pane as plain text."""
        if self.entry is None:
            return self.placeholder
        return "\n".join(block.plain for block in detail_blocks(self.entry))

    def show(self, entry: Entry | None, placeholder: str = "") -> None:
        self.placeholder = placeholder
        self.entry = entry
        self.scroll_home(animate=False)
