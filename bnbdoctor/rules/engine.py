"""The rule engine: facts in, findings out. Pure: no host, no I/O.

After the checks ran, :func:`apply_premises` keeps one finding per root cause: a rule that
``requires`` a premise which another rule's error finding ``refutes`` (see
:data:`bnbdoctor.rules.base.PREMISES`) reports nothing of its own. Its findings are muted and
listed under the root (:attr:`Finding.follows`); if it found nothing, it is "not checked", not passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bnbdoctor.facts import Facts
from bnbdoctor.findings import CheckResult, Finding, FollowOn, Hit, Severity, Skip
from bnbdoctor.remedy import fit_remedies
from bnbdoctor.rules.base import PREMISES, Rule


@dataclass
class Diagnosis:
    """What the rules concluded: findings (worst first), passed checks, skipped checks."""

    findings: list[Finding] = field(default_factory=list)
    passed: list[CheckResult] = field(default_factory=list)
    skipped: list[CheckResult] = field(default_factory=list)


#: Sections that only some commands produce (a pasted log, a fit run, probes of a machine: a log's
#: facts ran none). A rule that needs one is simply not part of a diagnosis without it, rather than
#: a check that "could not run".
MODE_SECTIONS = frozenset({"log", "fit", "lint", "probes"})


def _missing_sections(rule: Rule, facts: Facts) -> list[str]:
    return [section for section in rule.needs if getattr(facts, section, None) in (None, [])]


def _finding(rule: Rule, hit: Hit) -> Finding:
    return Finding(
        rule_id=rule.id,
        rule_name=rule.name,
        severity=hit.severity or rule.severity,
        title=hit.title,
        explanation=hit.explanation,
        evidence=list(hit.evidence),
        remediation=hit.remediation,
        references=list(dict.fromkeys([*hit.references, *rule.references])),
        covers=list(rule.covers if hit.covers is None else hit.covers),
        doc=rule.doc,
    )


def run_rules(facts: Facts, rules: Iterable[Rule], *, premises: bool = True) -> Diagnosis:
    """Run each rule on the facts; a rule that crashes is reported as skipped, never raised.

    ``premises`` False leaves muting to the caller (``bnbdoctor explain`` first drops the findings
    a log cannot support, then calls :func:`apply_premises`)."""
    rules = list(rules)
    diagnosis = Diagnosis()
    for rule in rules:
        missing = _missing_sections(rule, facts)
        if any(section in MODE_SECTIONS for section in missing):
            continue
        if missing:
            reasons = [f"{name}: {facts.probe_error(name) or 'no facts'}" for name in missing]
            diagnosis.skipped.append(CheckResult(rule.id, rule.name, rule.summary, "; ".join(reasons)))
            continue
        try:
            output = rule.check(facts)
        except Skip as skip:
            diagnosis.skipped.append(CheckResult(rule.id, rule.name, rule.summary, str(skip) or "not applicable"))
            continue
        except Exception as exc:  # noqa: BLE001 - a rule bug must not hide other findings
            diagnosis.skipped.append(
                CheckResult(rule.id, rule.name, rule.summary, f"rule failed: {type(exc).__name__}: {exc}")
            )
            continue
        if isinstance(output, Skip):
            diagnosis.skipped.append(CheckResult(rule.id, rule.name, rule.summary, str(output) or "not applicable"))
            continue
        hits = [output] if isinstance(output, Hit) else list(output or [])
        if hits:
            diagnosis.findings.extend(_finding(rule, hit) for hit in hits)
        else:
            diagnosis.passed.append(CheckResult(rule.id, rule.name, rule.summary))
    diagnosis.findings.sort(key=lambda f: (f.severity.rank, f.rule_id))
    if not premises:
        return diagnosis
    return fit_commands(apply_premises(diagnosis, rules), facts)


def fit_commands(diagnosis: Diagnosis, facts: Facts) -> Diagnosis:
    """Make every printed command fit this machine (:mod:`bnbdoctor.remedy`), after muting, so that
    only the findings a report shows take part in agreeing on one bitsandbytes specifier."""
    fit_remedies(diagnosis.findings, facts)
    return diagnosis


def _premise_order(rules: list[Rule]) -> list[Rule]:
    """The rules, each after every rule that refutes a premise it requires (stable by id otherwise).

    A cycle of premises (a declaration bug, refused by the tests) is broken where it is met."""
    refuters: dict[str, list[Rule]] = {}
    for rule in rules:
        for premise in rule.refutes:
            refuters.setdefault(premise, []).append(rule)
    ordered: list[Rule] = []
    state: dict[str, str] = {}  # rule id -> "visiting" | "done"

    def visit(rule: Rule) -> None:
        if state.get(rule.id):
            return
        state[rule.id] = "visiting"
        for premise in rule.requires:
            for before in refuters.get(premise, []):
                if before.id != rule.id:
                    visit(before)
        state[rule.id] = "done"
        ordered.append(rule)

    for rule in sorted(rules, key=lambda r: r.id):
        visit(rule)
    return ordered


def apply_premises(diagnosis: Diagnosis, rules: Iterable[Rule]) -> Diagnosis:
    """Mute what follows from a root cause (in place): one error per root cause.

    A rule is blocked when a premise it requires is refuted by an error finding that is itself not
    muted (its root is that finding), or by a blocked rule's error finding (its root is that rule's
    root). A blocked rule's findings move under the root's ``follows``; a blocked rule that passed
    becomes "not checked" with the reason; one that was skipped keeps its own reason."""
    rules = list(rules)
    by_rule: dict[str, list[Finding]] = {}
    for finding in diagnosis.findings:
        by_rule.setdefault(finding.rule_id, []).append(finding)
    roots: dict[str, Finding] = {}  # blocked rule id -> the root finding it follows from
    muted: set[int] = set()
    moved = False  # a passed check became "not checked": keep "not checked" in the rules' order
    ordered = _premise_order(rules)
    refuters = {premise: [r for r in ordered if premise in r.refutes] for premise in PREMISES}
    for rule in ordered:
        blocker = _blocker(rule, refuters, by_rule, roots)
        if blocker is None:
            continue
        root, premise = blocker
        roots[rule.id] = root
        for finding in by_rule.get(rule.id, []):
            muted.add(id(finding))
            root.follows.append(
                FollowOn(finding.rule_id, finding.rule_name, finding.severity, finding.title, premise, finding.doc)
            )
            for follow in finding.follows:  # a muted finding's own follow-ons belong to the root too
                root.follows.append(follow)
            finding.follows = []
        for check in [c for c in diagnosis.passed if c.rule_id == rule.id]:
            diagnosis.passed.remove(check)
            check.reason = f"{root.rule_id} found that its premise does not hold ({PREMISES[premise]})"
            check.blocked_by = root.rule_id
            diagnosis.skipped.append(check)
            moved = True
    if muted:
        diagnosis.findings = [f for f in diagnosis.findings if id(f) not in muted]
    if moved:
        order = {rule.id: i for i, rule in enumerate(rules)}
        diagnosis.skipped.sort(key=lambda c: order.get(c.rule_id, len(order)))
    return diagnosis


def _blocker(
    rule: Rule,
    refuters: dict[str, list[Rule]],
    by_rule: dict[str, list[Finding]],
    roots: dict[str, Finding],
) -> tuple[Finding, str] | None:
    """(root finding, premise) that blocks ``rule``, or None when its premises stand."""
    for premise in rule.requires:
        for refuter in refuters.get(premise, []):
            if refuter.id == rule.id:
                continue
            errors = [f for f in by_rule.get(refuter.id, []) if f.severity is Severity.ERROR]
            if not errors:
                continue
            return roots.get(refuter.id, errors[0]), premise
    return None
