"""The premises stage: one finding per root cause.

A rule that ``requires`` a premise which another rule's error finding ``refutes`` (see
:data:`bnbdoctor.rules.base.PREMISES`) reports nothing of its own. Its findings are muted and
listed under the root (:attr:`Finding.follows`); if it found nothing, it is "not checked", not passed.
"""

from __future__ import annotations

from bnbdoctor.findings import FollowOn, Severity
from bnbdoctor.rules.base import PREMISES, Rule
from bnbdoctor.rules.engine import Found, Judgement


def premise_order(rules: list[Rule]) -> list[Rule]:
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


def apply_premises(judgement: Judgement) -> None:
    """Mute what follows from a root cause (in place): one error per root cause.

    A rule is blocked when a premise it requires is refuted by an error finding that is itself not
    muted (its root is that finding), or by a blocked rule's error finding (its root is that rule's
    root). A blocked rule's findings move under the root's ``follows``; a blocked rule that passed
    becomes "not checked" with the reason; one that was skipped keeps its own reason."""
    by_rule: dict[str, list[Found]] = {}
    for found in judgement.found:
        by_rule.setdefault(found.rule.id, []).append(found)
    roots: dict[str, Found] = {}  # blocked rule id -> the root finding it follows from
    muted: set[int] = set()
    moved = False  # a passed check became "not checked": keep "not checked" in the rules' order
    ordered = premise_order(judgement.rules)
    refuters = {premise: [r for r in ordered if premise in r.refutes] for premise in PREMISES}
    for rule in ordered:
        blocker = _blocker(rule, refuters, by_rule, roots)
        if blocker is None:
            continue
        root, premise = blocker
        roots[rule.id] = root
        for found in by_rule.get(rule.id, []):
            finding = found.finding
            muted.add(id(found))
            root.finding.follows.append(
                FollowOn(finding.rule_id, finding.rule_name, finding.severity, finding.title, premise, finding.doc)
            )
            root.finding.follows.extend(finding.follows)  # a muted finding's own follow-ons belong to the root too
            finding.follows = []
        for check in [c for c in judgement.passed if c.rule_id == rule.id]:
            judgement.passed.remove(check)
            check.reason = f"{root.rule.id} found that its premise does not hold ({PREMISES[premise]})"
            check.blocked_by = root.rule.id
            judgement.skipped.append(check)
            moved = True
    if muted:
        judgement.found = [f for f in judgement.found if id(f) not in muted]
    if moved:
        order = {rule.id: i for i, rule in enumerate(judgement.rules)}
        judgement.skipped.sort(key=lambda c: order.get(c.rule_id, len(order)))


def _blocker(
    rule: Rule,
    refuters: dict[str, list[Rule]],
    by_rule: dict[str, list[Found]],
    roots: dict[str, Found],
) -> tuple[Found, str] | None:
    """(root finding, premise) that blocks ``rule``, or None when its premises stand."""
    for premise in rule.requires:
        for refuter in refuters.get(premise, []):
            if refuter.id == rule.id:
                continue
            errors = [f for f in by_rule.get(refuter.id, []) if f.finding.severity is Severity.ERROR]
            if not errors:
                continue
            return roots.get(refuter.id, errors[0]), premise
    return None
