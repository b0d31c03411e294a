"""Every recorded machine in platform_fixtures/ must produce the findings its manifest expects."""

from __future__ import annotations

import pytest
from conftest import fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.fixture import FixtureHost


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


def test_there_are_enough_recorded_machines() -> None:
    assert len(fixture_names()) >= 12
