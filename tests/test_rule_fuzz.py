"""Every rule over odd but well-typed facts (issue 25 item 16): no check raises (variants: bnbdoctor.ruledocs.fuzz).

A report read back (``--from``, fleet, the MCP server) or a recorded machine a user supplies can hold any value
its type allows: an empty file name, a version ``"12.x"``, an empty GPU list, a negative size. Each recorded
machine's facts are changed one field at a time to each odd value of that field's type (None where it may be
None, odd strings, 0 / -1 / huge numbers, empty and repeated lists, empty mappings), and every rule runs on the
result through the doctor's pipeline. A check that raises is a bnbdoctor bug, which the report states as an
error (:func:`bnbdoctor.rules.engine.crashed`); here it fails the test, naming the rule, the field and the value.

The fast suite changes four machines of different kinds; the slow test changes every recorded one (about
60,000 variants, minutes).
"""

from __future__ import annotations

import pytest
from conftest import fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.ruledocs.fuzz import variants
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.engine import DOCTOR, crashed, run_rules


def _crashes(name: str) -> list[str]:
    rules = all_rules()
    out: list[str] = []
    for field, odd, facts in variants(diagnose(FixtureHost.named(name)).facts):
        for finding in crashed(run_rules(facts, rules, DOCTOR)):
            out.append(f"{finding.rule_id} on {name} with {field} = {odd!r}: {finding.evidence[0].value}")
    return out


@pytest.mark.parametrize(
    "name", ["a100-healthy", "windows-bnb041", "rocm714-bnb0492-strix-halo", "bnb-overlaid-stale-files"]
)
def test_no_rule_raises_on_odd_facts(name: str) -> None:
    assert _crashes(name) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", fixture_names())
def test_no_rule_raises_on_odd_facts_of_any_recorded_machine(name: str) -> None:
    assert _crashes(name) == []


def test_the_fuzz_reaches_what_it_claims() -> None:
    """Not vacuous: the variants change nested fields (a GPU's compute capability, the library selection) and
    a check made to raise is caught by name."""
    facts = diagnose(FixtureHost.named("a100-healthy")).facts
    fields = {field for field, _odd, _facts in variants(facts)}
    assert {"gpu.devices.0.compute_capability", "native.selection.expected_file", "python.torch.version"} <= fields
    broken = diagnose(FixtureHost.named("a100-healthy")).facts
    assert broken.gpu is not None
    broken.gpu.devices = None  # type: ignore[assignment]  # not well typed: only to see a crash reported
    assert crashed(run_rules(broken, all_rules(), DOCTOR))
