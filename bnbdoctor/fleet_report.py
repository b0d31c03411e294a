"""The fleet report (``bnbdoctor fleet``): plain dataclasses, JSON round trip via :mod:`bnbdoctor.serde`.

``docs/fleet.schema.json`` is generated from these (``python -m bnbdoctor.fleet.schema``). They are data,
below the fleet's pipeline and the renderers (:mod:`bnbdoctor.render.fleet`), which both read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Versions the fleet report's layout (independent of the single report's schema version).
FLEET_SCHEMA_VERSION = 1
#: The key facts of a fingerprint, in the order they are shown.
KEY_FACTS = ("gpu", "driver", "cuda", "torch", "bitsandbytes", "glibc")


@dataclass(frozen=True)
class FindingKey:
    """One finding as a fleet shows it: its rule, severity and title."""

    rule_id: str
    severity: str
    title: str


@dataclass(frozen=True)
class NodeSummary:
    """What one node's report says, boiled down: the findings and the key facts (None: not known)."""

    findings: tuple[FindingKey, ...]
    facts: tuple[tuple[str, str | None], ...]  # (name, value) for each of KEY_FACTS, in that order

    def fingerprint(self) -> tuple[tuple[str, ...], tuple[tuple[str, str | None], ...]]:
        """Nodes alike: the same set of finding ids and the same key facts."""
        return tuple(sorted({f.rule_id for f in self.findings})), self.facts


@dataclass
class Group:
    """Nodes whose reports have the same fingerprint."""

    id: str  # a short stable hash of the fingerprint
    status: str  # "ok", "info", "warning" or "error": the worst finding
    count: int
    facts: dict[str, str | None]
    findings: list[FindingKey] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)


@dataclass
class Unreadable:
    """A report that could not be read; its node's state is unknown."""

    node: str
    source: str
    error: str


@dataclass
class DuplicateNode:
    """A node name more than one report gave (two folders' ``gpu1.json``, two JSON Lines with one
    ``SLURMD_NODENAME``): each of them is counted and shown as one of ``shown_as``."""

    node: str
    shown_as: list[str] = field(default_factory=list)


@dataclass
class FleetReport:
    """Nodes grouped by fingerprint, largest group first, and what differs between the groups."""

    tool: str
    kind: str  # "fleet"
    tool_version: str
    schema_version: int
    created: str
    nodes: int  # reports read (unreadable ones not counted)
    groups: list[Group] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)  # key facts (and "findings") that differ between groups
    unreadable: list[Unreadable] = field(default_factory=list)
    pseudonymized: bool = False
    duplicates: list[DuplicateNode] = field(default_factory=list)  # node names more than one report gave
