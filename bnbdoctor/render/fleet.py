"""The fleet report (``bnbdoctor fleet``) as text, JSON or Markdown, and the pieces the fleet app shows too.

Text and Markdown show the groups side by side (only the key facts that differ, and the
findings), largest first; a group with no findings is one line; then each group with findings,
its findings and its nodes. JSON is the whole :class:`~bnbdoctor.fleet_report.FleetReport` (docs/fleet.schema.json).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bnbdoctor.fleet_report import DuplicateNode, FleetReport, Group
from bnbdoctor.serde import to_jsonable

#: Groups shown side by side; the rest are listed below the table.
SIDE_BY_SIDE = 6
#: Node names shown per group in text and Markdown (JSON has them all).
NODES_SHOWN = 8


def _nodes(group: Group) -> str:
    shown = ", ".join(group.nodes[:NODES_SHOWN])
    more = group.count - NODES_SHOWN
    return f"{shown}, … (+{more} more)" if more > 0 else shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def headline(report: FleetReport) -> str:
    """``9 nodes in 3 groups, 1 unreadable``: the fleet in one line (text, Markdown, the app)."""
    line = f"{_plural(report.nodes, 'node')} in {_plural(len(report.groups), 'group')}"
    if report.unreadable:
        line += f", {len(report.unreadable)} unreadable"
    return line


def comparison_rows(report: FleetReport, groups: list[Group], numbers: Sequence[int] | None = None) -> list[list[str]]:
    """The side-by-side table: a header row, then nodes, status, one row per differing fact, findings.

    ``numbers`` are the groups' numbers in the report (default 1, 2, ...): the app compares one
    group with the largest. Text, Markdown and the app show these same rows.
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(groups) + 1))
    rows = [[""] + [f"group {number}" for number in numbers]]
    rows.append(["nodes"] + [str(g.count) for g in groups])
    rows.append(["status"] + [g.status for g in groups])
    shown_facts = [name for name in report.differs if name != "findings"] if len(groups) > 1 else []
    for name in shown_facts:
        rows.append([name] + [g.facts.get(name) or "-" for g in groups])
    rows.append(["findings"] + [" ".join(f.rule_id for f in g.findings) or "-" for g in groups])
    return rows


def same_facts(report: FleetReport) -> list[str]:
    """Key facts every group shares: shown once."""
    if not report.groups:
        return []
    first = report.groups[0].facts
    return [f"{name} {first.get(name)}" for name in first if name not in report.differs and first.get(name)]


def duplicate_line(duplicate: DuplicateNode) -> str:
    """``gpu1 is the name of 2 reports: gpu1 (rack1/gpu1.json), gpu1 (rack2/gpu1.json)``."""
    return f"{duplicate.node} is the name of {len(duplicate.shown_as)} reports: {', '.join(duplicate.shown_as)}"


def render_text(report: FleetReport) -> str:
    out = [f"bnbdoctor fleet: {headline(report)}", ""]
    if report.groups:
        same = same_facts(report)
        if same:
            out += ["same on every node: " + "; ".join(same), ""]
        groups = report.groups[:SIDE_BY_SIDE]
        rows = comparison_rows(report, groups)
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        out += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        out.append("")
    for number, group in enumerate(report.groups, start=1):
        if not group.findings:
            out.append(f"group {number}: {_plural(group.count, 'node')}, no findings: {_nodes(group)}")
            continue
        out.append(f"group {number}: {_plural(group.count, 'node')}, {group.status}: {_nodes(group)}")
        out += [f"  {f.severity.upper():<7} {f.rule_id}  {f.title}" for f in group.findings]
    for bad in report.unreadable:
        out.append(f"unreadable: {bad.node}: {bad.error}")
    for duplicate in report.duplicates:
        out.append(f"duplicate node name: {duplicate_line(duplicate)}")
    return "\n".join(out).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: FleetReport) -> str:
    out = ["## bnbdoctor fleet", "", f"**{headline(report)}**", ""]
    same = same_facts(report)
    if same:
        out += ["Same on every node: " + "; ".join(f"`{s}`" for s in same), ""]
    if report.groups:
        rows = comparison_rows(report, report.groups[:SIDE_BY_SIDE])
        out.append("| " + " | ".join(_cell(c) for c in rows[0]) + " |")
        out.append("|" + "---|" * len(rows[0]))
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[1:]]
        out.append("")
    for number, group in enumerate(report.groups, start=1):
        status = "no findings" if not group.findings else group.status
        out.append(f"- **group {number}** ({_plural(group.count, 'node')}, {status}): {_cell(_nodes(group))}")
        out += [f"  - `{f.rule_id}` {f.severity}: {_cell(f.title)}" for f in group.findings]
    if report.unreadable:
        out += ["", f"{len(report.unreadable)} unreadable: " + ", ".join(_cell(b.node) for b in report.unreadable)]
    if report.duplicates:
        out += ["", "Duplicate node names:"] + [f"- {_cell(duplicate_line(d))}" for d in report.duplicates]
    return "\n".join(out).rstrip() + "\n"


def render_json(report: FleetReport) -> str:
    return json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"
