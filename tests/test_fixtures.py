"""Every recorded machine in platform_fixtures/ must produce the findings its manifest expects."""

from __future__ import annotations

import pytest
from conftest import fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.findings import Severity
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.rules import Rule, get_rule


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_expectations(name: str) -> None:
    host = FixtureHost.named(name)
    expect = host.expectations
    assert expect, f"{name}: machine.json has no 'expect' block"
    report = diagnose(host)
    failed = [run for run in report.facts.probes if not run.ok and not run.skipped]
    allowed_failures = set(expect.get("probe_failures", []))
    assert {run.name for run in failed} <= allowed_failures, failed
    ids = {f.rule_id for f in report.findings}
    missing = set(expect.get("findings", [])) - ids
    assert not missing, f"{name}: expected findings {sorted(missing)} not produced; got {sorted(ids)}"
    unexpected = ids & set(expect.get("absent", []))
    assert not unexpected, f"{name}: findings {sorted(unexpected)} must not appear"
    if "exit_code" in expect:
        assert int(report.exit_code()) == expect["exit_code"]
    skipped = {c.rule_id for c in report.skipped}
    passed = {c.rule_id for c in report.passed}
    wrongly_passed = set(expect.get("not_checked", [])) - skipped
    assert not wrongly_passed, f"{name}: {sorted(wrongly_passed)} must be 'not checked' (passed: {sorted(passed)})"
    for root, muted in expect.get("follows", {}).items():
        roots = [f for f in report.findings if f.rule_id == root]
        assert roots, f"{name}: root finding {root} not produced"
        shown = {follow.rule_id for f in roots for follow in f.follows}
        assert set(muted) <= shown, f"{name}: {root} should list {sorted(set(muted) - shown)} as following from it"
    # One root cause, one verdict: no rule passes, and no rule reports, on a premise an error refuted.
    refuted = {p for f in report.findings if f.severity is Severity.ERROR for p in _rule(f.rule_id).refutes}
    for rule_id in passed | ids:
        blocked = set(_rule(rule_id).requires) & refuted
        assert not blocked, f"{name}: {rule_id} reported on premise {sorted(blocked)}, refuted by an error"
    # A run that could not examine the machine never exits 0.
    if failed:
        assert int(report.exit_code()) != 0


def _rule(rule_id: str) -> Rule:
    found = get_rule(rule_id)
    assert found is not None
    return found


def test_there_are_enough_recorded_machines() -> None:
    assert len(fixture_names()) >= 12
