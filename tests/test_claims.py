"""Claims match the text: every finding names only catalog ids its rule declares, and names some.

A finding's ``covers`` says which failure families it diagnoses; ``explain`` ranks by it and renderers
print it as the "Catalog:" line. These tests run the doctor on every recorded machine
(``platform_fixtures/``) and ``explain`` on every test log, and check each finding against its rule's
declared ``covers``; they also check that a rule declares no id that none of its cases, machines or
logs ever shows (the declaration is the union of what its branches claim).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.explain import explain_file
from bnbdoctor.findings import Finding
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.ruledocs.cases import all_cases, run_case
from bnbdoctor.rules import all_rules, get_rule

LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.txt")) + sorted(
    (ROOT / "tests" / "data" / "synthetic_logs").glob("*.txt")
)

#: Branches that diagnose no catalog family on purpose, so their findings name no id although the
#: rule declares some: an override that has no effect or fits (BNB302, info), a damaged file or one
#: for another CPU on Linux (BNB313: the catalog's family is a Linux file on a Mac), unquantized
#: tensors of a dense model (BNB405, info: no imbalance diagnosed), a missing system or oneAPI runtime
#: (BNB316: only its SYCL-runtime-of-another-major branch is a catalog family).
#: (BNB318: 0.40.1's unpack crash was found by running the release, tools/oracle_bnb.py, not in a catalogued thread).
MAY_NAME_NONE = {"BNB302", "BNB313", "BNB316", "BNB318", "BNB405"}


def _problems(findings: list[Finding]) -> list[str]:
    out = []
    for finding in findings:
        rule = get_rule(finding.rule_id)
        assert rule is not None, finding.rule_id
        extra = sorted(set(finding.covers) - set(rule.covers))
        if extra:
            out.append(f"{finding.rule_id} ({finding.title}) names undeclared {extra}")
        if not finding.covers and rule.covers and finding.rule_id not in MAY_NAME_NONE:
            out.append(f"{finding.rule_id} ({finding.title}) names no catalog id; the rule declares {rule.covers}")
        if len(set(finding.covers)) != len(finding.covers):
            out.append(f"{finding.rule_id} ({finding.title}) names an id twice: {finding.covers}")
    return out


@pytest.mark.parametrize("name", fixture_names())
def test_machine_findings_claim_only_declared_ids(name: str) -> None:
    assert _problems(diagnose(FixtureHost.named(name)).findings) == []


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_log_findings_claim_only_declared_ids(path: Path) -> None:
    assert _problems(explain_file(str(path)).findings) == []


def test_rule_cases_claim_only_declared_ids() -> None:
    problems = []
    for case in all_cases():
        problems += [f"{case.label}: {p}" for p in _problems(run_case(case).findings)]
    assert problems == []


def test_declared_covers_are_what_the_branches_claim() -> None:
    """Each id a rule declares is named by some finding of its cases, recorded machines or test logs."""
    shown: dict[str, set[str]] = {}
    findings = [f for case in all_cases() for f in run_case(case).findings]
    findings += [f for name in fixture_names() for f in diagnose(FixtureHost.named(name)).findings]
    findings += [f for path in LOGS for f in explain_file(str(path)).findings]
    for finding in findings:
        shown.setdefault(finding.rule_id, set()).update(finding.covers)
    unclaimed = {
        rule.id: sorted(set(rule.covers) - shown.get(rule.id, set()))
        for rule in all_rules()
        if set(rule.covers) - shown.get(rule.id, set())
    }
    assert unclaimed == {}
