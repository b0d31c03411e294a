"""The stages a log adds: which findings stand, which come first, how sure each is, how to confirm.

The rules are the doctor's; the facts from a log are partial. ``bnbdoctor explain``'s pipeline
(:data:`bnbdoctor.rules.engine.EXPLAIN`) runs these stages around the shared ones:

1. **Gates** (:func:`apply_gates`, before premises). A few machine rules conclude from the *absence*
   of something (torch missing, no compiled library, a CPU-only build). A log shows what happened,
   not what is absent, so those findings stand only when the log shows the absence itself (``No
   module named 'torch'``, the CPU library failing to load); otherwise they move to "skipped" with
   the reason. Premises run after the gates, so a gated finding never mutes anything.
2. **Twins** (in :func:`rank`). A log twin (BNB5xx, see ``rules/workflow/``) stands in for machine
   rules when the facts are missing. When one of its machine rules fired anyway, with at least the
   twin's severity and covering what the twin matched, the twin is dropped and its log lines go to
   that finding.
3. **Ranking** (:func:`rank`). Each finding is tied to the message families the log shows whose
   catalog entries it covers. Findings tied to a root-cause message come first, then consequences,
   hints, noise, and last the findings that rest on facts alone (they explain nothing the log
   shows); info findings always after the rest; within a tier, errors before warnings, then by rule
   id (lower ids are deeper layers: hardware, then packages, then the native chain). A consequence
   that nothing in the log explains ("compiled without GPU support" with no reason shown) counts as
   a root: it is the failure as far as the log goes. A rule declared ``only_alone`` (the error no
   family names, BNB549) stands only when no other error finding does.
4. **Confidence** (in :func:`rank`): ``high`` when the log shows the very message the finding
   diagnoses, ``medium`` when it rests on facts read from the log or on a generic message, ``low``
   for noise.
5. **Confirmation** (:func:`confirm`, after remedies): what to run on the machine (``bnbdoctor --rule
   ID``, ...).
"""

from __future__ import annotations

import re

from bnbdoctor.findings import CheckResult, Evidence, Severity
from bnbdoctor.knowledge.signatures import CONSEQUENCE, HINT, NOISE, ROOT, SIGNATURES
from bnbdoctor.rules.engine import Found, Judgement


def _matched(judgement: Judgement) -> dict[str, list[int]]:
    """The log's message families, each with the line numbers it was seen on."""
    matched: dict[str, list[int]] = {}
    log = judgement.facts.log
    for match in log.matches if log else []:
        matched.setdefault(match.signature, []).append(match.line)
    return matched


def apply_gates(judgement: Judgement) -> None:
    """Drop the findings of machine rules whose log gate the log does not pass (to "skipped", with why)."""
    seen = set(_matched(judgement))
    kept: list[Found] = []
    for found in judgement.found:
        gate, finding = found.rule.log_gate, found.finding
        if gate is not None and not gate.admits(judgement.facts, seen):
            judgement.skipped.append(
                CheckResult(
                    finding.rule_id,
                    finding.rule_name,
                    finding.title,
                    f"log: {gate.why}; run `bnbdoctor --rule {finding.rule_id}` on the machine",
                )
            )
            continue
        kept.append(found)
    judgement.found = kept


def _tied(found: Found, matched: dict[str, list[int]]) -> list[str]:
    covers = set(found.finding.covers)
    return [sig for sig in matched if covers & set(SIGNATURES[sig].catalog)]


def _tier(found: Found) -> int:
    """0 root cause, 1 consequence, 2 hint, 3 noise, 4 tied to nothing the log shows (facts only)."""
    roles = {SIGNATURES[s].role for s in found.tied}
    if ROOT in roles or (CONSEQUENCE in roles and found.finding.severity is Severity.ERROR):
        return 0
    if CONSEQUENCE in roles:
        return 1
    if HINT in roles:
        return 2
    return 3 if roles else 4


def _confidence(found: Found) -> str:
    """high: the log shows a message this finding explains; medium: facts read from the log, a generic
    message or a hint; low: the finding rests on nothing the log shows and few facts."""
    roles = [(SIGNATURES[s].role, SIGNATURES[s].specific) for s in found.tied if SIGNATURES[s].role != HINT]
    specific = [role for role, is_specific in roles if is_specific]
    if ROOT in specific or NOISE in specific:
        return "high"
    # A consequence message is the very thing a log rule explains; for a machine rule it is only a hint.
    if CONSEQUENCE in specific and found.rule.reads_log:
        return "high"
    if not found.tied and not found.finding.evidence:
        return "low"
    return "medium"


def _fold_twins(found: list[Found]) -> list[Found]:
    """Drop a log twin whose machine rule fired with at least its severity, covering what it matched."""
    folded: list[Found] = []
    for twin in found:
        partners = twin.rule.stands_in_for
        if partners:
            wanted = {c for s in twin.tied for c in SIGNATURES[s].catalog} & set(twin.finding.covers)
            host = next(
                (
                    f
                    for f in found
                    if f.rule.id in partners
                    and f.finding.severity.rank <= twin.finding.severity.rank
                    and wanted
                    and wanted <= set(f.finding.covers)
                ),
                None,
            )
            if host is not None:
                host.tied = list(dict.fromkeys(host.tied + twin.tied))
                known = {e.value for e in host.finding.evidence}
                host.finding.evidence.extend(e for e in twin.finding.evidence if e.value not in known)
                continue
        folded.append(twin)
    return folded


def _alone_only_when_alone(found: list[Found]) -> list[Found]:
    """A rule declared ``only_alone`` stands only when no other rule's error finding does: an error that a
    rule names is the log's failure, and the unnamed lines most likely follow from it."""
    if any(f.finding.severity is Severity.ERROR and not f.rule.only_alone for f in found):
        return [f for f in found if not f.rule.only_alone]
    return found


def _quoted_lines(found: Found) -> list[int]:
    """For a log rule's finding tied to no catalog family: the log lines its evidence quotes."""
    if not found.rule.reads_log or found.rule.covers:
        return []
    labels = (e.label for e in found.finding.evidence)
    return sorted({int(label.split()[-1]) for label in labels if re.fullmatch(r"log line \d+", label)})[:12]


def rank(judgement: Judgement) -> None:
    """Tie each finding to the log's families, fold twins, order root cause first, and fill rank,
    confidence, log lines and the log lines a machine finding rests on (in place)."""
    matched = _matched(judgement)
    for found in judgement.found:
        found.tied = _tied(found, matched)
    ranked = _alone_only_when_alone(_fold_twins(judgement.found))
    ranked.sort(
        key=lambda f: (f.finding.severity is Severity.INFO, _tier(f), f.finding.severity.rank, f.finding.rule_id)
    )
    log = judgement.facts.log
    for number, found in enumerate(ranked, start=1):
        finding = found.finding
        finding.rank = number
        finding.confidence = _confidence(found)
        finding.log_lines = sorted({n for s in found.tied for n in matched[s]})[:12] or _quoted_lines(found)
        cited = {e.value for e in finding.evidence}
        if log is not None and not found.rule.reads_log:
            extra = [
                Evidence(f"log line {m.line}", m.text, f"log.matches[{i}]")
                for i, m in enumerate(log.matches)
                if m.signature in found.tied and m.text not in cited
            ]
            finding.evidence.extend(extra[:3])
    judgement.found = ranked


def confirm(judgement: Judgement) -> None:
    """What to run on the machine to confirm each finding drawn from a log."""
    for found in judgement.found:
        rule = found.rule
        commands = []
        if rule.machine_checkable:
            commands.append(f"bnbdoctor --rule {rule.id}")
        elif rule.stands_in_for:
            commands.append("bnbdoctor " + " ".join(f"--rule {p}" for p in rule.stands_in_for))
        commands.extend(rule.confirm)
        commands.append("bnbdoctor")
        found.finding.confirm = list(dict.fromkeys(commands))
