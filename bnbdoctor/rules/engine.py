"""The rule engine: facts in, findings out. Pure: no host, no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bnbdoctor.facts import Facts
from bnbdoctor.findings import CheckResult, Finding, Hit, Skip
from bnbdoctor.rules.base import Rule


@dataclass
class Diagnosis:
    """What the rules concluded: findings (worst first), passed checks, skipped checks."""

    findings: list[Finding] = field(default_factory=list)
    passed: list[CheckResult] = field(default_factory=list)
    skipped: list[CheckResult] = field(default_factory=list)


#: Sections that only some commands produce (a pasted log, a fit run). A rule that needs one is
#: simply not part of a diagnosis without it, rather than a check that "could not run".
MODE_SECTIONS = frozenset({"log", "fit"})


def _missing_sections(rule: Rule, facts: Facts) -> list[str]:
    return [section for section in rule.needs if getattr(facts, section, None) is None]


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


def run_rules(facts: Facts, rules: Iterable[Rule]) -> Diagnosis:
    """Run each rule on the facts; a rule that crashes is reported as skipped, never raised."""
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
    return diagnosis
