"""The rule engine: one staged pipeline from facts to a diagnosis. Pure: no host, no I/O.

Every command runs the same stages, in this order, configured by its :class:`Pipeline` (the doctor,
``explain``, ``fit``, ``lint`` and a rule case each name one; none re-assembles the stages itself):

1. **run**: each selected rule's check on the facts; a check that raises or skips is "skipped", never
   raised (:func:`run_checks`);
2. **gates** (a log): a machine rule concluding from an absence stands only when the log shows it
   (:func:`bnbdoctor.rules.log_judgement.apply_gates`);
3. **premises**: one error per root cause (:func:`bnbdoctor.rules.premises.apply_premises`);
4. **rank** (a log): log twins folded into the machine findings they stand in for, root cause first,
   confidence and the log lines each rests on (:func:`bnbdoctor.rules.log_judgement.rank`);
5. **remedies**: every printed command fitted to this machine (:func:`bnbdoctor.remedy.fit_remedies`),
   after muting, so that only the findings a report shows agree on one bitsandbytes specifier;
6. **verify** (a machine): the machine re-diagnosed as the fitted commands leave it, each fix marked
   verified only when no error remains (:func:`bnbdoctor.rules.verify.verify_remedies`);
7. **confirm** (a log): what to run on the machine to confirm each finding.

Gathering the facts comes before, and is each command's own (probes, a log, the fit engine, lint).
Inside the pipeline a finding keeps the rule that made it (:class:`Found`): no stage looks a rule up
again by id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bnbdoctor.facts import Facts
from bnbdoctor.findings import CheckResult, Evidence, Finding, Hit, Remediation, Severity, Skip
from bnbdoctor.remedy import fit_remedies
from bnbdoctor.rules.base import Rule


@dataclass
class Diagnosis:
    """What the rules concluded: findings (worst first), passed checks, skipped checks."""

    findings: list[Finding] = field(default_factory=list)
    passed: list[CheckResult] = field(default_factory=list)
    skipped: list[CheckResult] = field(default_factory=list)


@dataclass
class Found:
    """A finding with the rule that made it, and (for a log) the message families it is tied to."""

    rule: Rule
    finding: Finding
    tied: list[str] = field(default_factory=list)


@dataclass
class Judgement:
    """The pipeline's working state: the facts, the rules that take part, and what they found so far."""

    facts: Facts
    rules: list[Rule]
    found: list[Found] = field(default_factory=list)
    passed: list[CheckResult] = field(default_factory=list)
    skipped: list[CheckResult] = field(default_factory=list)

    def diagnosis(self) -> Diagnosis:
        return Diagnosis([f.finding for f in self.found], self.passed, self.skipped)


def _every_rule(rule: Rule) -> bool:
    return True


@dataclass(frozen=True)
class Pipeline:
    """Which rules a command runs and which stages it asks for (see the module docstring)."""

    name: str
    selects: Callable[[Rule], bool] = _every_rule  # the command's rules, out of all of them
    gates: bool = False
    premises: bool = True
    rank: bool = False
    remedies: bool = True
    verify: bool = False
    confirm: bool = False

    def rules_of(self, rules: Iterable[Rule]) -> list[Rule]:
        return [rule for rule in rules if self.selects(rule)]


#: The doctor on a machine (live, recorded or a saved report's facts).
DOCTOR = Pipeline("doctor", verify=True)
#: The doctor again, on the facts a report's commands would leave (``bnbdoctor.rules.verify``).
AFTER_FIX = Pipeline("after-fix", remedies=False)
#: ``bnbdoctor explain``: facts from a log are partial, so gates, ranking and confirmation too.
EXPLAIN = Pipeline("explain", gates=True, rank=True, verify=True, confirm=True)
#: ``bnbdoctor fit``: the placement rules.
FIT = Pipeline("fit", selects=lambda rule: "fit" in rule.needs)
#: ``bnbdoctor lint``: the code rules.
LINT = Pipeline("lint", selects=lambda rule: "lint" in rule.needs)

#: Sections that only some commands produce (a pasted log, a fit run, probes of a machine: a log's
#: facts ran none). A rule that needs one is simply not part of a diagnosis without it, rather than
#: a check that "could not run".
MODE_SECTIONS = frozenset({"log", "fit", "lint", "probes"})


def _holds(facts: Facts, section: str) -> bool:
    return getattr(facts, section, None) not in (None, [])


def _missing_sections(rule: Rule, facts: Facts) -> list[str]:
    return [section for section in rule.needs if not _holds(facts, section)]


def mode_sections(facts: Facts) -> set[str]:
    """The mode sections ``facts`` hold: what a diagnosis of them can run (``bnbdoctor.rules.rules_for``)."""
    return {section for section in MODE_SECTIONS if _holds(facts, section)}


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


#: The title every finding of a check that crashed starts with (:func:`crashed` finds them by it).
CRASHED = "bnbdoctor's check could not run on these facts"


def _crash(rule: Rule, exc: Exception) -> Hit:
    """A check that raised is a bnbdoctor bug, and an error of the report: nothing is known about what it
    checks, which is not the same as nothing wrong (never a silent "skipped", never a green run)."""
    said = f"{type(exc).__name__}: {exc}"[:500]
    return Hit(
        title=f"{CRASHED} ({type(exc).__name__}): a bnbdoctor bug",
        explanation=(
            f"The check '{rule.summary}' raised {said} on what bnbdoctor recorded, so it did not judge this "
            "machine or log: the report is incomplete there. The machine may be fine."
        ),
        evidence=[Evidence("the check's error", said)],
        remediation=Remediation(
            "Rerun with --debug for the traceback and report it to bnbdoctor with the JSON report "
            "(bnbdoctor --json -o report.json; redacted by default)."
        ),
        severity=Severity.ERROR,
        covers=[],
    )


def crashed(diagnosis: Diagnosis) -> list[Finding]:
    """The findings of checks that raised instead of judging."""
    return [f for f in diagnosis.findings if f.title.startswith(CRASHED)]


def run_checks(facts: Facts, rules: Iterable[Rule]) -> Judgement:
    """Stage 1: run each rule on the facts; a rule that crashes is a finding of its own (an error), never
    raised and never "skipped"."""
    judgement = Judgement(facts, list(rules))
    for rule in judgement.rules:
        missing = _missing_sections(rule, facts)
        if any(section in MODE_SECTIONS for section in missing):
            continue
        if missing:
            reasons = [f"{name}: {facts.probe_error(name) or 'no facts'}" for name in missing]
            judgement.skipped.append(CheckResult(rule.id, rule.name, rule.summary, "; ".join(reasons)))
            continue
        try:
            output = rule.check(facts)
        except Skip as skip:
            judgement.skipped.append(CheckResult(rule.id, rule.name, rule.summary, str(skip) or "not applicable"))
            continue
        except Exception as exc:  # noqa: BLE001 - a rule bug must not hide other findings
            judgement.found.append(Found(rule, _finding(rule, _crash(rule, exc))))
            continue
        if isinstance(output, Skip):
            judgement.skipped.append(CheckResult(rule.id, rule.name, rule.summary, str(output) or "not applicable"))
            continue
        hits = [output] if isinstance(output, Hit) else list(output or [])
        if hits:
            judgement.found.extend(Found(rule, _finding(rule, hit)) for hit in hits)
        else:
            judgement.passed.append(CheckResult(rule.id, rule.name, rule.summary))
    judgement.found.sort(key=lambda f: (f.finding.severity.rank, f.finding.rule_id))
    return judgement


def run_rules(facts: Facts, rules: Iterable[Rule], pipeline: Pipeline = DOCTOR) -> Diagnosis:
    """The whole pipeline: ``pipeline``'s stages over ``rules`` (those it selects) on ``facts``."""
    from bnbdoctor.rules import log_judgement
    from bnbdoctor.rules.premises import apply_premises

    judgement = run_checks(facts, pipeline.rules_of(rules))
    if pipeline.gates:
        log_judgement.apply_gates(judgement)
    if pipeline.premises:
        apply_premises(judgement)
    if pipeline.rank:
        log_judgement.rank(judgement)
    if pipeline.remedies:
        fit_remedies([f.finding for f in judgement.found], facts)
    if pipeline.verify:
        from bnbdoctor.rules.verify import verify_remedies

        verify_remedies(judgement)
    if pipeline.confirm:
        log_judgement.confirm(judgement)
    return judgement.diagnosis()
