"""FindingsList: errors, warnings, info, then passed and skipped checks, one line each.

Each line is an :class:`Entry`; moving the highlight posts :class:`FindingsList.EntryHighlighted`
so the detail pane can follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from bnbdoctor.findings import CheckResult, Finding, Severity
from bnbdoctor.report import Report

#: Icon, style and group heading per severity (the text report uses the same icons). Styles use
#: the theme's text colours, so they read well on light and dark themes alike.
SEVERITY_STYLE: dict[Severity, tuple[str, str, str]] = {
    Severity.ERROR: ("✖", "$text-error bold", "Errors"),
    Severity.WARNING: ("▲", "$text-warning bold", "Warnings"),
    Severity.INFO: ("ℹ", "$text-accent bold", "Info"),
}
PASSED_STYLE = ("✔", "$text-success bold", "Passed")
SKIPPED_STYLE = ("·", "dim", "Not checked")


@dataclass(frozen=True)
class Entry:
    """One line of the list: a finding, or a check that passed or was skipped (exactly one of
    ``finding`` and ``check`` is set)."""

    kind: str  # "finding" | "passed" | "skipped"
    index: int  # 0 for a rule's first hit, 1 for its second...: keys stay stable across re-runs
    finding: Finding | None = None
    check: CheckResult | None = None

    def __post_init__(self) -> None:
        if (self.finding is None) == (self.check is None):
            raise ValueError("an Entry holds either a finding or a check")

    @property
    def item(self) -> Finding | CheckResult:
        """The finding, or the check, this line is about."""
        return self.finding if self.finding is not None else cast(CheckResult, self.check)  # see __post_init__

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.rule_id}-{self.index}"

    @property
    def rule_id(self) -> str:
        return self.item.rule_id

    @property
    def commands(self) -> list[str]:
        return list(self.finding.remediation.commands) if self.finding is not None else []

    @property
    def doc(self) -> str:
        if self.finding is not None and self.finding.doc:
            return self.finding.doc
        return f"bnbdoctor rule {self.rule_id}"


def entries(report: Report, include_checks: bool = True) -> list[tuple[str, str, list[Entry]]]:
    """(heading, style, entries) groups in display order; empty groups left out."""
    seen: dict[str, int] = {}
    findings = []
    for finding in report.findings:
        findings.append(Entry("finding", seen.get(finding.rule_id, 0), finding=finding))
        seen[finding.rule_id] = seen.get(finding.rule_id, 0) + 1
    groups = []
    for severity in sorted(Severity, key=lambda s: s.rank):
        chosen = [e for e in findings if e.finding is not None and e.finding.severity is severity]
        if chosen:
            groups.append((SEVERITY_STYLE[severity][2], SEVERITY_STYLE[severity][1], chosen))
    if include_checks:
        if report.passed:
            groups.append((PASSED_STYLE[2], PASSED_STYLE[1], [Entry("passed", 0, check=c) for c in report.passed]))
        if report.skipped:
            groups.append(
                (SKIPPED_STYLE[2], "bold $text-muted", [Entry("skipped", 0, check=c) for c in report.skipped])
            )
    return groups


def entry_prompt(entry: Entry) -> Content:
    """The label: icon, rule id, title (or what a check verified)."""
    item = entry.item
    if isinstance(item, Finding):
        icon, style, _ = SEVERITY_STYLE[item.severity]
        return Content.assemble((f"{icon} ", style), (entry.rule_id, "bold"), "  ", item.title)
    if entry.kind == "passed":
        return Content.assemble((f"{PASSED_STYLE[0]} ", PASSED_STYLE[1]), (entry.rule_id, "bold"), "  ", item.summary)
    return Content.assemble((f"{SKIPPED_STYLE[0]} {entry.rule_id}  {item.summary}", "$text-muted"))


class EntryList(OptionList):
    """An option list of :class:`Entry` rows that announces the highlighted entry. Subclasses
    fill it (``show``) and define their own ``EntryHighlighted`` so handlers stay per list."""

    @dataclass
    class EntryHighlighted(Message):
        """The highlight moved to ``entry`` (None: the list is empty)."""

        entry: Entry | None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._entries: dict[str, Entry] = {}

    @property
    def selected(self) -> Entry | None:
        """The highlighted entry, if any."""
        option = self.highlighted_option
        return self._entries.get(option.id or "") if option is not None else None

    @property
    def entry_keys(self) -> list[str]:
        """The keys of every entry, in display order."""
        return list(self._entries)

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def _fill(self, options: list[Option | None], entries: dict[str, Entry], keep: str | None = None) -> None:
        """Show ``options``; highlight ``keep`` when still there, else the first entry."""
        self._entries = entries
        self.set_options(options)
        target = keep if keep in entries else next(iter(entries), None)
        if target is None:
            self.post_message(self.EntryHighlighted(None))
        else:
            self.highlighted = self.get_option_index(target)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.post_message(self.EntryHighlighted(self._entries.get(event.option.id or "")))


class FindingsList(EntryList):
    """The findings and checks of one report, grouped under headings."""

    class EntryHighlighted(EntryList.EntryHighlighted):
        """The highlight moved to ``entry`` (None: the list is empty)."""

    def show(self, report: Report | None, include_checks: bool = True, keep: str | None = None) -> None:
        """Replace the list with ``report``'s entries; highlight ``keep`` when still there, else the first."""
        found: dict[str, Entry] = {}
        options: list[Option | None] = []
        if report is not None:
            if not report.findings:
                options.append(
                    Option(Content.styled("✔ No problems found", "$text-success bold"), id="head-ok", disabled=True)
                )
            for heading, style, group in entries(report, include_checks):
                if options:
                    options.append(None)
                options.append(
                    Option(Content.styled(f"{heading} ({len(group)})", style), id=f"head-{heading}", disabled=True)
                )
                for entry in group:
                    found[entry.key] = entry
                    options.append(Option(entry_prompt(entry), id=entry.key))
        self._fill(options, found, keep)

    def select_key(self, key: str) -> bool:
        """Highlight the entry with ``key``; False when it is not shown."""
        if key not in self._entries:
            return False
        self.highlighted = self.get_option_index(key)
        return True
