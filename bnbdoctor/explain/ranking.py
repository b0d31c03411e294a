"""Judging findings drawn from a log: which stand, which come first, how sure each is.

The rule engine is the doctor's; the facts are partial. :func:`judge` adapts its result to a log:

1. **Gates.** A few machine rules conclude from the *absence* of something (torch missing, no
   compiled library, a CPU-only build). A log shows what happened, not what is absent, so those
   findings stand only when the log shows the absence itself (``No module named 'torch'``, the CPU
   library failing to load); otherwise they move to "skipped" with the reason.
   Then one root cause, one error (:func:`~bnbdoctor.rules.engine.apply_premises`): findings of
   rules whose premise a standing error refutes move under that error. It runs after the gates
   (``explain_stream`` asks the engine not to mute), so a gated finding never mutes anything.
2. **Twins.** A log twin (BNB5xx, see ``rules/workflow.py``) stands in for machine rules when the
   facts are missing. When one of its machine rules fired anyway, with at least the twin's severity
   and covering what the twin matched, the twin is dropped and its log lines go to that finding.
3. **Ranking.** Each finding is tied to the message families the log shows whose catalog entries it
   covers. Findings tied to a root-cause message come first, then consequences, hints, noise, and
   last the findings that rest on facts alone (they explain nothing the log shows); info findings
   always after the rest; within a tier, errors before
   warnings, then by rule id (lower ids are deeper layers: hardware, then packages, then the native
   chain). A consequence that nothing in the log explains ("compiled without GPU support" with no
   reason shown) counts as a root: it is the failure as far as the log goes.
   An error no family names (BNB549) stands only when no other error finding does.
4. **Confidence and confirmation.** ``high`` when the log shows the very message the finding
   diagnoses, ``medium`` when it rests on facts read from the log or on a generic message, ``low``
   for noise; ``confirm`` says what to run on the machine (``bnbdoctor --rule ID``, ...).
"""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import CheckResult, Evidence, Finding, Severity
from bnbdoctor.knowledge.signatures import CONSEQUENCE, HINT, NOISE, ROOT, SIGNATURES
from bnbdoctor.rules.base import Rule, registered
from bnbdoctor.rules.engine import Diagnosis, apply_premises, fit_commands

_ROLE_TIER = {ROOT: 0, CONSEQUENCE: 1, HINT: 2, NOISE: 3}


def _rule_of(finding: Finding) -> Rule | None:
    return registered(finding.rule_id)


def _tied(finding: Finding, matched: dict[str, list[int]]) -> list[str]:
    covers = set(finding.covers)
    return [sig for sig in matched if covers & set(SIGNATURES[sig].catalog)]


def _tier(finding: Finding, tied: list[str]) -> int:
    """0 root cause, 1 consequence, 2 hint, 3 noise, 4 tied to nothing the log shows (facts only)."""
    roles = {SIGNATURES[s].role for s in tied}
    if ROOT in roles or (CONSEQUENCE in roles and finding.severity is Severity.ERROR):
        return 0
    if CONSEQUENCE in roles:
        return 1
    if HINT in roles:
        return 2
    return 3 if roles else 4


def _confidence(finding: Finding, tied: list[str]) -> str:
    """high: the log shows a message this finding explains; medium: facts read from the log, a generic
    message or a hint; low: the finding rests on nothing the log shows and few facts."""
    roles = [(SIGNATURES[s].role, SIGNATURES[s].specific) for s in tied if SIGNATURES[s].role != HINT]
    specific = [role for role, is_specific in roles if is_specific]
    if ROOT in specific or NOISE in specific:
        return "high"
    # A consequence message is the very thing a log rule explains; for a machine rule it is only a hint.
    rule = _rule_of(finding)
    if CONSEQUENCE in specific and rule is not None and rule.reads_log:
        return "high"
    if not tied and not finding.evidence:
        return "low"
    return "medium"


def judge(facts: Facts, diagnosis: Diagnosis) -> Diagnosis:
    """Apply gates, fold twins, rank, and fill rank/confidence/confirm/log_lines (in place)."""
    log = facts.log
    matched: dict[str, list[int]] = {}
    for match in log.matches if log else []:
        matched.setdefault(match.signature, []).append(match.line)
    seen = set(matched)

    kept: list[Finding] = []
    for finding in diagnosis.findings:
        rule = _rule_of(finding)
        gate = rule.log_gate if rule is not None else None
        if gate is not None and not gate.admits(facts, seen):
            diagnosis.skipped.append(
                CheckResult(
                    finding.rule_id,
                    finding.rule_name,
                    finding.title,
                    f"log: {gate.why}; run `bnbdoctor --rule {finding.rule_id}` on the machine",
                )
            )
            continue
        kept.append(finding)
    diagnosis.findings = kept
    ran = {c.rule_id for c in diagnosis.passed + diagnosis.skipped} | {f.rule_id for f in kept}
    apply_premises(diagnosis, [r for r in (registered(rule_id) for rule_id in sorted(ran)) if r is not None])
    kept = diagnosis.findings

    ties = {id(f): _tied(f, matched) for f in kept}
    folded: list[Finding] = []
    for finding in kept:
        rule = _rule_of(finding)
        partners = rule.stands_in_for if rule is not None else ()
        if partners:
            wanted = {c for s in ties[id(finding)] for c in SIGNATURES[s].catalog} & set(finding.covers)
            host = next(
                (
                    f
                    for f in kept
                    if f.rule_id in partners
                    and f.severity.rank <= finding.severity.rank
                    and wanted
                    and wanted <= set(f.covers)
                ),
                None,
            )
            if host is not None:
                ties[id(host)] = list(dict.fromkeys(ties[id(host)] + ties[id(finding)]))
                known = {e.value for e in host.evidence}
                host.evidence.extend(e for e in finding.evidence if e.value not in known)
                continue
        folded.append(finding)

    def key(finding: Finding) -> tuple[int, int, int, str]:
        return (
            finding.severity is Severity.INFO,
            _tier(finding, ties[id(finding)]),
            finding.severity.rank,
            finding.rule_id,
        )

    folded = _unnamed_error_only_alone(folded)
    folded.sort(key=key)
    for rank, finding in enumerate(folded, start=1):
        tied = ties[id(finding)]
        finding.rank = rank
        finding.confidence = _confidence(finding, tied)
        finding.log_lines = sorted({n for s in tied for n in matched[s]})[:12] or _quoted_lines(finding)
        commands = []
        rule = _rule_of(finding)
        if rule is not None and rule.machine_checkable:
            commands.append(f"bnbdoctor --rule {finding.rule_id}")
        elif rule is not None and rule.stands_in_for:
            commands.append("bnbdoctor " + " ".join(f"--rule {p}" for p in rule.stands_in_for))
        commands.extend(rule.confirm if rule is not None else ())
        commands.append("bnbdoctor")
        finding.confirm = list(dict.fromkeys(commands))
        cited = {e.value for e in finding.evidence}
        if log is not None and rule is not None and not rule.reads_log:
            extra = [
                Evidence(f"log line {m.line}", m.text, f"log.matches[{i}]")
                for i, m in enumerate(log.matches)
                if m.signature in tied and m.text not in cited
            ]
            finding.evidence.extend(extra[:3])
    diagnosis.findings = folded
    return fit_commands(diagnosis, facts)


def _unnamed_error_only_alone(findings: list[Finding]) -> list[Finding]:
    """The "error bnbdoctor cannot name" finding (BNB549) stands only when no other error finding does:
    an error that a rule names is the log's failure, and the unnamed lines most likely follow from it."""
    from bnbdoctor.rules.workflow_logs._shared import UNRECOGNISED_ERROR_RULE

    if any(f.severity is Severity.ERROR and f.rule_id != UNRECOGNISED_ERROR_RULE for f in findings):
        return [f for f in findings if f.rule_id != UNRECOGNISED_ERROR_RULE]
    return findings


def _quoted_lines(finding: Finding) -> list[int]:
    """For a log rule's finding tied to no catalog family: the log lines its evidence quotes."""
    rule = _rule_of(finding)
    if rule is None or not rule.reads_log or rule.covers:
        return []
    return sorted({int(e.label.split()[-1]) for e in finding.evidence if re.fullmatch(r"log line \d+", e.label)})[:12]


def failure_found(diagnosis: Diagnosis) -> bool:
    """True when some finding reports a failure (an error or a warning), not only notes."""
    return any(f.severity is not Severity.INFO for f in diagnosis.findings)
