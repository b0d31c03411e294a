"""Per-rule cases (``tests/rule_cases/<ID>/*.json``, format in ``bnbdoctor/ruledocs/cases.py``):
facts that make each rule fire and facts that make it pass, all run by this one test."""

from __future__ import annotations

import json

import pytest

from bnbdoctor.ruledocs.cases import CASES, RuleCase, all_cases, check_case, snapshot_problems, with_snapshot
from bnbdoctor.rules import all_rules

CASE_LIST = all_cases()


@pytest.mark.parametrize("case", CASE_LIST, ids=lambda c: c.label)
def test_case_holds(case: RuleCase) -> None:
    assert check_case(case) == [], case.description
    assert snapshot_problems(case) == [], case.description


def test_a_snapshot_is_the_last_key_and_leaves_the_rest_as_written() -> None:
    text = '{\n  "base": {"fixture": "a100-healthy"},\n  "expect": {"fires": false}\n}\n'
    once = with_snapshot(text, {"passed": True})
    assert once == (
        '{\n  "base": {"fixture": "a100-healthy"},\n  "expect": {"fires": false},\n'
        '  "snapshot": {\n    "passed": true\n  }\n}\n'
    )
    again = with_snapshot(once, {"skipped": "not Windows"})
    assert json.loads(again)["snapshot"] == {"skipped": "not Windows"}
    assert again.startswith('{\n  "base": {"fixture": "a100-healthy"},\n  "expect": {"fires": false},\n  "snapshot"')


def test_every_case_folder_names_a_rule() -> None:
    registered = {rule.id for rule in all_rules()}
    folders = {path.name for path in CASES.iterdir() if path.is_dir()}
    assert folders <= registered, sorted(folders - registered)


def test_every_rule_has_a_firing_case() -> None:
    firing = {case.rule_id for case in CASE_LIST if case.expect.fires}
    missing = [rule.id for rule in all_rules() if rule.id not in firing]
    assert missing == [], f"rules without a case that makes them fire: {missing}"


def test_at_most_one_example_per_rule_and_it_fires() -> None:
    examples: dict[str, list[str]] = {}
    for case in CASE_LIST:
        if case.example:
            examples.setdefault(case.rule_id, []).append(case.name)
            assert case.expect.fires, f"{case.label}: an example case must fire"
    assert {k: v for k, v in examples.items() if len(v) > 1} == {}
