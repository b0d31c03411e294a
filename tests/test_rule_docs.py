"""Every registered rule has its one documentation page in docs/rules/, in the shared layout, generated
from the rule (``python -m bnbdoctor.ruledocs``) and current; the failure-catalog ids a rule claims to
cover exist in the packaged catalog."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from bnbdoctor.catalog import catalog_ids
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.base import Rule

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "rules"

#: The sections every rule page has, in this order (ruff/pylint style rule pages).
SECTIONS = ["What it detects", "Why it matters", "Example", "How to fix", "References"]

RULES = all_rules()


def _page(rule: Rule) -> str:
    path = DOCS / f"{rule.id}.md"
    assert path.is_file(), f"{rule.id} has no documentation page at {path.relative_to(ROOT)}"
    return path.read_text(encoding="utf-8")


def _headings(text: str) -> list[str]:
    """Level-2 headings, ignoring lines inside fenced code blocks."""
    headings: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("## "):
            headings.append(line[3:].strip())
    return headings


@lru_cache(maxsize=1)
def _catalog_ids() -> frozenset[str]:
    return frozenset(catalog_ids())


def test_rules_are_registered() -> None:
    assert RULES, "no rules registered"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_page_starts_with_id_and_name(rule: Rule) -> None:
    first = _page(rule).splitlines()[0]
    assert first == f"# {rule.id} — {rule.name}", first


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_page_has_the_sections_in_order(rule: Rule) -> None:
    assert _headings(_page(rule)) == SECTIONS


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_page_names_default_severity(rule: Rule) -> None:
    header = "\n".join(_page(rule).splitlines()[1:4])
    assert re.search(rf"\b{rule.severity.value}\b", header), f"{rule.id}: default severity missing under the title"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_page_mentions_every_covered_catalog_id(rule: Rule) -> None:
    text = _page(rule)
    missing = [entry for entry in rule.covers if entry not in text]
    assert not missing, f"{rule.id} page does not mention {missing}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_covered_ids_exist_in_failure_catalog(rule: Rule) -> None:
    unknown = sorted(set(rule.covers) - _catalog_ids())
    assert not unknown, f"{rule.id} covers ids that are not in the failure catalog: {unknown}"


def test_index_lists_every_rule() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"[{rule.id}]({rule.id}.md)" in index, f"docs/rules/README.md does not link {rule.id}"


def test_no_page_for_an_unregistered_rule() -> None:
    registered = {rule.id for rule in RULES}
    pages = {path.stem for path in DOCS.glob("BNB*.md")}
    assert pages <= registered, f"pages for rules that are not registered: {sorted(pages - registered)}"


def test_pages_are_generated_and_current() -> None:
    """docs/rules/ is what ``python -m bnbdoctor.ruledocs`` writes today: header, prose, the example
    produced by running the rule on its example case, references."""
    from bnbdoctor.ruledocs.pages import stale_pages

    assert [str(p.relative_to(ROOT)) for p in stale_pages()] == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_rule_has_an_example_case(rule: Rule) -> None:
    from bnbdoctor.ruledocs.pages import example_case

    assert example_case(rule) is not None, f'tests/rule_cases/{rule.id}/ has no case marked "example": true'
