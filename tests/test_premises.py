"""One root cause, one error: premises declared by rules, muting done by the engine."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Check, CheckOutput, Hit, Severity, Skip
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.base import PREMISES, Rule, rule
from bnbdoctor.rules.engine import DOCTOR, run_rules
from bnbdoctor.rules.premises import premise_order


def _rule(
    rule_id: str,
    output: CheckOutput,
    *,
    severity: Severity = Severity.ERROR,
    requires: tuple[str, ...] = (),
    refutes: tuple[str, ...] = (),
) -> Rule:
    return Rule(
        rule_id, rule_id.lower(), severity, f"{rule_id} holds", lambda _: output, requires=requires, refutes=refutes
    )


def test_a_refuted_premise_mutes_findings_and_passes() -> None:
    root = _rule("BNB913", Hit("wrong architecture", "x"), refutes=("library-readable",))
    glibc = _rule("BNB907", Hit("glibc lacks GLIBC_2.2.5", "x"), requires=("library-readable",))
    passes = _rule("BNB903", None, requires=("library-readable",))
    skips = _rule("BNB911", Skip("not Windows"), requires=("library-readable",))
    unrelated = _rule("BNB901", Hit("driver too old", "x"))
    diagnosis = run_rules(Facts(), [unrelated, passes, glibc, skips, root])
    assert [f.rule_id for f in diagnosis.findings] == ["BNB901", "BNB913"]
    top = diagnosis.findings[1]
    assert [(f.rule_id, f.title, f.premise) for f in top.follows] == [
        ("BNB907", "glibc lacks GLIBC_2.2.5", "library-readable")
    ]
    assert diagnosis.passed == []
    reasons = {c.rule_id: (c.reason, c.blocked_by) for c in diagnosis.skipped}
    assert reasons["BNB903"][1] == "BNB913" and "BNB913 found that its premise does not hold" in str(reasons["BNB903"])
    assert reasons["BNB911"] == ("not Windows", None)  # its own reason stands
    assert [c.rule_id for c in diagnosis.skipped] == ["BNB903", "BNB911"]  # the rules' order


def test_only_an_error_refutes_and_a_muted_root_passes_its_follow_ons_to_the_root() -> None:
    warning = _rule("BNB920", Hit("odd", "x"), severity=Severity.WARNING, refutes=("gpus-have-kernels",))
    blocked_by_warning = _rule("BNB921", None, requires=("gpus-have-kernels",))
    assert [c.rule_id for c in run_rules(Facts(), [warning, blocked_by_warning]).passed] == ["BNB921"]

    root = _rule("BNB930", Hit("root", "x"), refutes=("gpus-have-kernels",))
    middle = _rule("BNB931", Hit("middle", "x"), requires=("gpus-have-kernels",), refutes=("library-readable",))
    leaf = _rule("BNB932", Hit("leaf", "x"), severity=Severity.WARNING, requires=("library-readable",))
    diagnosis = run_rules(Facts(), [leaf, middle, root])
    assert [f.rule_id for f in diagnosis.findings] == ["BNB930"]
    assert [f.rule_id for f in diagnosis.findings[0].follows] == ["BNB931", "BNB932"]


def test_premises_can_be_left_to_the_caller() -> None:
    root = _rule("BNB913", Hit("wrong architecture", "x"), refutes=("library-readable",))
    glibc = _rule("BNB907", Hit("glibc", "x"), requires=("library-readable",))
    assert len(run_rules(Facts(), [root, glibc], replace(DOCTOR, premises=False)).findings) == 2


def _checks_of(module: str) -> Check:
    """A check as a rule file ``module`` would declare it (its file name gives the rule's id and name)."""

    def check(_: Facts) -> CheckOutput:
        return None

    check.__module__ = module
    return check


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown premise"):
        rule(Severity.ERROR, "x", requires=("no-such-premise",))(_checks_of("bnbdoctor.rules.gpu.bnb990_x"))
    with pytest.raises(ValueError, match="cannot require a premise it refutes"):
        rule(Severity.ERROR, "x", requires=("library-readable",), refutes=("library-readable",))(
            _checks_of("bnbdoctor.rules.gpu.bnb991_x")
        )
    with pytest.raises(ValueError, match="in its own bnbNNN_<name>"):
        rule(Severity.ERROR, "x")(_checks_of(__name__))


def test_registered_premises_are_used_and_acyclic() -> None:
    rules = all_rules()
    refuted = {p for r in rules for p in r.refutes}
    required = {p for r in rules for p in r.requires}
    assert refuted == required == set(PREMISES), "every premise has a rule that refutes it and one that needs it"
    position = {r.id: i for i, r in enumerate(premise_order(rules))}
    for r in rules:
        for before in rules:
            if set(r.requires) & set(before.refutes):
                assert position[before.id] < position[r.id], f"{before.id} -> {r.id} is part of a premise cycle"
