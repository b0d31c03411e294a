"""The facts as a searchable tree of plain nodes, without Textual.

:func:`build` walks ``to_jsonable(report.facts)`` into :class:`FactNode` objects whose ``path``
uses the same dotted form as :attr:`bnbdoctor.rules.base.Evidence.fact`
(``gpu.devices[0].compute_capability``); :func:`search` keeps the nodes that match a query and
their ancestors. The facts widget renders the result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: Keys whose values change from run to run (hidden when the app shows no timings, as in snapshots).
TIMING_KEYS = frozenset({"duration_s"})


@dataclass
class FactNode:
    key: str  # "gpu", "[0]", "compute_capability"; "" for the root
    path: str  # "gpu.devices[0].compute_capability"; "" for the root
    kind: str  # "dict" | "list" | "value"
    value: Any = None  # the JSON value of a leaf (None for containers)
    children: list[FactNode] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return self.kind == "value"

    def walk(self) -> list[FactNode]:
        """This node and every descendant, depth first."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes


def value_text(value: Any) -> str:
    """A leaf value as shown: strings bare, everything else as JSON (``null``, ``true``, ``[8, 0]``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _child_path(parent: str, key: str, in_list: bool) -> str:
    if in_list:
        return f"{parent}{key}"
    return f"{parent}.{key}" if parent else key


def build(data: Any, *, show_timings: bool = True, key: str = "", path: str = "") -> FactNode:
    """The tree of a JSON-ready value. Lists of scalars (a compute capability ``[8, 0]``, a list
    of file names) stay leaves only when short; longer ones get a node per item."""
    if isinstance(data, dict):
        node = FactNode(key, path, "dict")
        for raw_name, raw_value in data.items():
            name = str(raw_name)
            value = "(hidden)" if not show_timings and name in TIMING_KEYS else raw_value
            node.children.append(build(value, show_timings=show_timings, key=name, path=_child_path(path, name, False)))
        return node
    if isinstance(data, list):
        if all(not isinstance(item, (dict, list)) for item in data) and len(value_text(data)) <= 40:
            return FactNode(key, path, "value", data)
        node = FactNode(key, path, "list")
        for index, value in enumerate(data):
            name = f"[{index}]"
            node.children.append(build(value, show_timings=show_timings, key=name, path=_child_path(path, name, True)))
        return node
    return FactNode(key, path, "value", data)


def matches(node: FactNode, query: str, parent_path: str = "") -> bool:
    """Whether a node's key or (leaf) value contains ``query``, ignoring case. A dotted query
    (``gpu.driver``) also matches the shallowest node whose path contains it."""
    needle = query.strip().casefold()
    if not needle:
        return True
    if needle in node.key.casefold():
        return True
    if node.is_leaf and needle in value_text(node.value).casefold():
        return True
    if "." in needle or "[" in needle:
        return needle in node.path.casefold() and needle not in parent_path.casefold()
    return False


def search(root: FactNode, query: str) -> tuple[FactNode, int]:
    """A copy of the tree holding only nodes that match and their ancestors, and the number of
    matching nodes. A container that matches keeps all its children."""
    query = query.strip()
    if not query:
        return root, 0
    count = 0

    def keep(node: FactNode, parent_path: str) -> FactNode | None:
        nonlocal count
        own = bool(node.key) and matches(node, query, parent_path)
        count += own
        if own and not node.is_leaf:
            return node  # "gpu" shows the whole gpu section
        children = [kept for kept in (keep(child, node.path) for child in node.children) if kept is not None]
        if own or children or not node.key:
            return FactNode(node.key, node.path, node.kind, node.value, children)
        return None

    kept = keep(root, "")  # never None for the root of build() (its key is empty)
    return (kept if kept is not None else FactNode(root.key, root.path, root.kind, root.value, [])), count
