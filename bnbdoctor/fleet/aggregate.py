"""Nodes grouped by fingerprint: :func:`aggregate` reads reports one at a time into a :class:`FleetReport`.

Only a group's fingerprint, its findings and its node names are kept, so memory grows with the
number of nodes (their names), not with the reports' size. Groups are ordered largest first (ties:
the worse status first, then the first node's name), and :attr:`FleetReport.differs` names the
key facts whose values are not the same in every group.

What a report says is not trusted to be printable: node names (from a file name or a report's env),
sources, titles and facts have their control and format characters (terminal escape sequences, a
newline that would forge a line of the report, bidirectional overrides) shown as escapes, and a node
name is cut to :data:`MAX_NODE_NAME` characters. Two reports naming one node are both kept, each shown
with where it came from (``gpu1 (rack2/gpu1.json)``), and listed in :attr:`FleetReport.duplicates`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import datetime, timezone

from bnbdoctor import __version__
from bnbdoctor.fleet.inputs import Item
from bnbdoctor.fleet_report import (
    FLEET_SCHEMA_VERSION,
    KEY_FACTS,
    DuplicateNode,
    FindingKey,
    FleetReport,
    Group,
    NodeSummary,
    Unreadable,
)
from bnbdoctor.redact import Redactor
from bnbdoctor.report_io import ReportError

#: Statuses from best to worst; a group's status is its worst finding's severity.
STATUS_ORDER = ("ok", "info", "warning", "error")
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
#: The longest node name shown; a longer one is cut, with "…".
MAX_NODE_NAME = 200
#: Characters never printed raw: C0 and C1 controls (ESC starts a terminal escape sequence, a newline
#: starts a line of the report), DEL, zero-width and bidirectional format characters, line and paragraph
#: separators, the BOM, and lone surrogates (not text).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u206f\ufeff\ud800-\udfff]")


def printable(text: str, limit: int | None = None) -> str:
    """``text`` safe to print on a terminal and in a one-line cell: each unprintable character as its escape
    (``\\x1b``, ``\\n``), cut to ``limit`` characters when given."""
    if _UNPRINTABLE.search(text):
        text = _UNPRINTABLE.sub(lambda m: ascii(m.group(0))[1:-1], text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _printable_facts(facts: Iterable[tuple[str, str | None]]) -> dict[str, str | None]:
    return {name: printable(value) if value is not None else None for name, value in facts}


def pseudonym(node: str) -> str:
    """A stable stand-in for a node name: the same name always gives the same pseudonym.

    An unsalted hash: it hides names from a reader, not from someone who can guess them.
    """
    return "node-" + hashlib.sha256(node.encode("utf-8", errors="replace")).hexdigest()[:12]


def _status(findings: Iterable[FindingKey]) -> str:
    worst = 0
    for finding in findings:
        if finding.severity in STATUS_ORDER:
            worst = max(worst, STATUS_ORDER.index(finding.severity))
    return STATUS_ORDER[worst]


def _group_id(summary: NodeSummary) -> str:
    ids, facts = summary.fingerprint()
    text = "|".join(ids) + "||" + "|".join(f"{k}={v}" for k, v in facts)
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:10]


class _Groups:
    """The groups seen so far, keyed by fingerprint."""

    def __init__(self, redactor: Redactor) -> None:
        self.groups: dict[object, Group] = {}
        self.redactor = redactor

    def add(self, node: str, summary: NodeSummary) -> Group:
        key = summary.fingerprint()
        group = self.groups.get(key)
        if group is None:
            findings = sorted(
                {
                    FindingKey(printable(f.rule_id), printable(f.severity), printable(self.redactor.text(f.title)))
                    for f in summary.findings
                },
                key=lambda f: (_SEVERITY_ORDER.get(f.severity, 3), f.rule_id, f.title),
            )
            group = Group(_group_id(summary), _status(findings), 0, _printable_facts(summary.facts), findings)
            self.groups[key] = group
        group.nodes.append(node)
        return group


def _differs(groups: list[Group]) -> list[str]:
    names = [name for name in KEY_FACTS if len({g.facts.get(name) for g in groups}) > 1]
    if len({tuple(f.rule_id for f in g.findings) for g in groups}) > 1:
        names.append("findings")
    return names


def aggregate(items: Iterable[Item], *, pseudonymize: bool = False) -> FleetReport:
    """Read each report in turn and group its node; unreadable reports are listed apart."""
    from bnbdoctor.fleet.extract import summarize

    groups = _Groups(Redactor())
    unreadable: list[Unreadable] = []
    placed: list[tuple[Group, int, str]] = []  # (group, index in its nodes, source) of each node read
    nodes = 0
    for item in items:
        node = pseudonym(item.node) if pseudonymize else printable(item.node, MAX_NODE_NAME)
        source = node if pseudonymize else printable(item.source)
        if item.error is not None:
            unreadable.append(
                Unreadable(node, source, printable(item.error) if not pseudonymize else "unreadable report")
            )
            continue
        try:
            summary = summarize(item.text, item.source)
        except ReportError as exc:
            unreadable.append(
                Unreadable(node, source, printable(str(exc)) if not pseudonymize else "not a bnbdoctor report")
            )
            continue
        group = groups.add(node, summary)
        placed.append((group, len(group.nodes) - 1, source))
        nodes += 1
    duplicates = _tell_apart(placed, pseudonymize)
    for group in groups.groups.values():
        group.count = len(group.nodes)
    # ties: the group whose first report was read first (a group exists once it has a node)
    ordered = sorted(groups.groups.values(), key=lambda g: (-g.count, -STATUS_ORDER.index(g.status), g.nodes[0]))
    for group in ordered:
        group.nodes.sort()
    return FleetReport(
        tool="bnbdoctor",
        kind="fleet",
        tool_version=__version__,
        schema_version=FLEET_SCHEMA_VERSION,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        nodes=nodes,
        groups=ordered,
        differs=_differs(ordered),
        unreadable=unreadable,
        pseudonymized=pseudonymize,
        duplicates=duplicates,
    )


def _tell_apart(placed: list[tuple[Group, int, str]], pseudonymized: bool) -> list[DuplicateNode]:
    """Nodes named by more than one report: each is renamed ``NAME (SOURCE)`` (``NAME #2`` when pseudonymized,
    where a source would name the node), so that "which gpu1 is broken?" has an answer; returns them."""
    by_name: dict[str, list[tuple[Group, int, str]]] = {}
    for entry in placed:
        group, index, _ = entry
        by_name.setdefault(group.nodes[index], []).append(entry)
    duplicates = []
    for name, entries in by_name.items():
        if len(entries) < 2:
            continue
        shown = []
        for number, (group, index, source) in enumerate(entries, start=1):
            group.nodes[index] = f"{name} #{number}" if pseudonymized else f"{name} ({source})"
            shown.append(group.nodes[index])
        duplicates.append(DuplicateNode(name, shown))
    return duplicates
