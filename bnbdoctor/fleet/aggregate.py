"""Nodes grouped by fingerprint: :func:`aggregate` reads reports one at a time into a :class:`FleetReport`.

Only a group's fingerprint, its findings and its node names are kept, so memory grows with the
number of nodes (their names), not with the reports' size. Groups are ordered largest first (ties:
the worse status first, then the first node's name), and :attr:`FleetReport.differs` names the
key facts whose values are not the same in every group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime, timezone

from bnbdoctor import __version__
from bnbdoctor.fleet.inputs import Item
from bnbdoctor.fleet_report import (
    FLEET_SCHEMA_VERSION,
    KEY_FACTS,
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

    def add(self, node: str, summary: NodeSummary) -> None:
        key = summary.fingerprint()
        group = self.groups.get(key)
        if group is None:
            findings = sorted(
                {FindingKey(f.rule_id, f.severity, self.redactor.text(f.title)) for f in summary.findings},
                key=lambda f: (_SEVERITY_ORDER.get(f.severity, 3), f.rule_id, f.title),
            )
            group = Group(_group_id(summary), _status(findings), 0, dict(summary.facts), findings)
            self.groups[key] = group
        group.nodes.append(node)


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
    nodes = 0
    for item in items:
        node = pseudonym(item.node) if pseudonymize else item.node
        source = node if pseudonymize else item.source
        if item.error is not None:
            unreadable.append(Unreadable(node, source, item.error if not pseudonymize else "unreadable report"))
            continue
        try:
            summary = summarize(item.text, item.source)
        except ReportError as exc:
            unreadable.append(Unreadable(node, source, str(exc) if not pseudonymize else "not a bnbdoctor report"))
            continue
        groups.add(node, summary)
        nodes += 1
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
    )
