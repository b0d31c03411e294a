"""Every log family is read by a rule: a family no rule reads is recognised and then says nothing.

A family (a :class:`~bnbdoctor.knowledge.signatures.Signature`) is *read* when a rule module names its
constant (``S.CUDA_OUT_OF_MEMORY``), when a rule covers one of the catalog entries the family points
at (the log judgement ties the line to that rule's finding), or when the family declares the rules
that read it through the facts its lines fill (``read_by``). ``fact`` families only carry facts
(versions, paths, GPU names) and are exempt. The extension test (tests/test_extension.py) adds a
throwaway family and checks this test refuses it until a rule reads it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import bnbdoctor.rules
from bnbdoctor.knowledge.signatures import FACT, ROOT, SIGNATURES, Signature
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.base import Rule

RULES_DIR = Path(bnbdoctor.rules.__file__).parent


def named_families(rules_dir: Path) -> set[str]:
    """Family ids whose constant a module under ``rules_dir`` names (``S.NAME``)."""
    named: set[str] = set()
    for path in rules_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "S":
                named.add(node.attr.lower())
    return named


def unread_families(signatures: Iterable[Signature], rules: Iterable[Rule], named: set[str]) -> list[str]:
    """The ids of the families no rule reads (``fact`` families exempt), with what is missing."""
    rules = list(rules)
    covered = {entry for each in rules for entry in each.covers}
    ids = {each.id for each in rules}
    out: list[str] = []
    for sig in signatures:
        if sig.role == FACT or sig.id in named or set(sig.catalog) & covered:
            continue
        if sig.read_by and set(sig.read_by) <= ids:
            continue
        out.append(sig.id)
    return out


def test_every_log_family_is_read_by_a_rule() -> None:
    unread = unread_families(SIGNATURES.values(), all_rules(), named_families(RULES_DIR))
    assert not unread, (
        f"log families no rule reads (a log showing them would give no finding): {unread}; name the family's "
        "constant in a rule (bnbdoctor/rules/<family>/bnbNNN_*.py), or point it at a catalog entry a rule covers"
    )


def test_the_check_refuses_a_family_only_a_collector_knows() -> None:
    rules = all_rules()
    named = named_families(RULES_DIR)
    lonely = Signature("canary_message_seen", ROOT, "workflow", ("canary_catalog_entry",), "a canary")
    assert unread_families([lonely], rules, named) == ["canary_message_seen"]
    # Each way of being read clears it: named by a rule, a covered catalog entry, a declared reader.
    assert unread_families([lonely], rules, {*named, "canary_message_seen"}) == []
    some_entry = next(entry for each in rules for entry in each.covers)
    covered = Signature("canary_message_seen", ROOT, "workflow", (some_entry,), "a canary")
    assert unread_families([covered], rules, named) == []
    declared = Signature("canary_message_seen", ROOT, "loader", (), "a canary", read_by=("BNB316",))
    assert unread_families([declared], rules, named) == []
    # A reader that is not a rule does not count.
    assert unread_families([Signature("canary_message_seen", ROOT, "loader", read_by=("BNB999",))], rules, named)
    assert unread_families([Signature("canary_fact", FACT, "context")], rules, named) == []
