"""FactsView: every fact the probes gathered, as a tree, with a search box.

Typing in the search box keeps the facts whose name, value or dotted path (``gpu.devices[0]``)
contains the text, with their ancestors, expanded, and highlights the match; Enter moves to the
tree, Escape clears the search.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Tree
from textual.widgets.tree import TreeNode

from bnbdoctor.tui.factstree import FactNode, build, search, value_text


def _value_style(value: Any) -> str:
    """Tree labels are Rich text (no theme variables): only styles that read on any theme."""
    if value is None or value == "(hidden)":
        return "dim italic"
    if isinstance(value, (bool, int, float)):
        return "italic"
    return ""


def node_label(node: FactNode, query: str = "") -> Text:
    """``key: value`` for a leaf, ``key {n}`` / ``key [n]`` for a container."""
    label = Text()
    label.append(node.key, style="bold")
    if node.is_leaf:
        label.append(": ")
        label.append(value_text(node.value), style=_value_style(node.value))
    else:
        count = len(node.children)
        label.append(f" {{{count}}}" if node.kind == "dict" else f" [{count}]", style="dim")
    if query:
        label.highlight_regex(re.compile(re.escape(query), re.IGNORECASE), style="bold reverse")
    return label


class FactsView(Vertical):
    """The facts tree and its search box."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.root_node: FactNode = FactNode("", "", "dict")
        self.query_text = ""
        self.match_count = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="facts-bar"):
            yield Input(placeholder="Search facts: name, value or path (gpu.devices[0])", id="facts-search")
            yield Label("", id="facts-count")
        tree: Tree[FactNode] = Tree("facts", id="facts-tree")
        tree.show_root = False
        yield tree

    @property
    def facts_tree(self) -> Tree[FactNode]:
        return self.query_one("#facts-tree", Tree)

    @property
    def search_input(self) -> Input:
        return self.query_one("#facts-search", Input)

    def load(self, facts_json: dict[str, Any], *, show_timings: bool = True) -> None:
        """Show new facts, keeping the current search."""
        self.root_node = build(facts_json, show_timings=show_timings)
        self.apply_search(self.search_input.value)

    def apply_search(self, query: str) -> None:
        self.query_text = query.strip()
        shown, self.match_count = search(self.root_node, self.query_text)
        tree = self.facts_tree
        tree.clear()
        self._add(tree.root, shown, expand=bool(self.query_text))
        tree.root.expand()
        count = self.query_one("#facts-count", Label)
        if not self.query_text:
            count.update(f"{len(self.root_node.walk()) - 1} facts")
        else:
            count.update(f"{self.match_count} match{'' if self.match_count == 1 else 'es'}")
        count.set_class(bool(self.query_text) and not self.match_count, "-none")

    def _add(self, parent: TreeNode[FactNode], node: FactNode, expand: bool) -> None:
        for child in node.children:
            label = node_label(child, self.query_text)
            if child.is_leaf or not child.children:
                parent.add_leaf(label, data=child)
            else:
                self._add(parent.add(label, data=child, expand=expand), child, expand)

    def selected_text(self) -> tuple[str, str] | None:
        """(path, value as text) of the node under the tree's cursor."""
        node = self.facts_tree.cursor_node
        if node is None or node.data is None:
            return None
        fact = node.data
        if fact.is_leaf:
            return fact.path, value_text(fact.value)
        return fact.path, json.dumps(_plain(fact), ensure_ascii=False)

    @on(Input.Changed, "#facts-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.apply_search(event.value)

    @on(Input.Submitted, "#facts-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        tree = self.facts_tree
        tree.focus()
        if self.query_text:
            needle = self.query_text.casefold()
            for line in range(tree.last_line + 1):
                node = tree.get_node_at_line(line)
                if node is not None and node.data is not None and needle in str(node.label).casefold():
                    tree.move_cursor(node)
                    break

    def clear_search(self) -> None:
        self.search_input.value = ""
        self.apply_search("")


def _plain(node: FactNode) -> Any:
    """A tree node back to its JSON value (for copying a whole section)."""
    if node.is_leaf:
        return node.value
    if node.kind == "list":
        return [_plain(child) for child in node.children]
    return {child.key: _plain(child) for child in node.children}
