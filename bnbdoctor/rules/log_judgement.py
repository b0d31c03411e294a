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
   a root: it is the failure as far as the log goes, and so are the error lines no family names (a rule
   declared ``only_alone``, BNB549), which stand only when no other error finding does.
4. **The log's own verdict** (in :func:`rank`). A rule declared ``unless_reported`` (BNB550) restates
   the failures that torch, bitsandbytes, transformers, PEFT or accelerate state in the log; each of
   its findings is tied to the family it restates and stands unless another finding reports that
   failure: one tied to the family or resting on its lines, one of a rule that judges the family's
   catalog entry (whatever it concluded, an info too), or an error finding tied to a root or
   consequence of the same chain (the loader's, the GPU's, ...). A message the log shows is never
   overruled by a rule's inference from the facts: a check that passed although a standing
   restatement or log twin reports the failure it judges is "not checked" instead (the log says
   otherwise).
5. **Confidence** (in :func:`rank`): ``high`` when the log shows the very message the finding
   diagnoses, ``medium`` when it rests on facts read from the log or on a generic message, ``low``
   for noise.
6. **Confirmation** (:func:`confirm`, after remedies): what to run on the machine (``bnbdoctor --rule
   ID``, ...).
"""

from __future__ import annotations

import re

from bnbdoctor.facts import LogMatch
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
    if found.rule.only_alone and _quoted_lines(found):
        return 0  # the error lines no family names (BNB549): the failure as far as the log goes
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


#: ``log.matches[N]``: the recognised line an evidence item quotes.
_MATCH_FACT = re.compile(r"log\.matches\[(\d+)\]")


def _restated(found: Found, judgement: Judgement) -> list[LogMatch]:
    """The recognised lines a finding's evidence quotes (by their ``log.matches[N]`` fact)."""
    log = judgement.facts.log
    if log is None:
        return []
    indices = {int(m.group(1)) for e in found.finding.evidence if e.fact and (m := _MATCH_FACT.fullmatch(e.fact))}
    return [log.matches[i] for i in sorted(indices) if i < len(log.matches)]


def _rests_on(found: Found, judgement: Judgement, matched: dict[str, list[int]]) -> set[int]:
    """The log lines a finding rests on: those of the families it is tied to and those it quotes (by
    number, or a recognised line's text as the value of an evidence item)."""
    lines = {n for s in found.tied for n in matched.get(s, [])}
    labels = (e.label for e in found.finding.evidence)
    lines |= {int(label.split()[-1]) for label in labels if re.fullmatch(r"log line \d+", label)}
    values = {e.value.strip() for e in found.finding.evidence}
    log = judgement.facts.log
    return lines | {m.line for m in (log.matches if log else []) if m.text in values}


def _unless_reported(judgement: Judgement, found: list[Found], matched: dict[str, list[int]]) -> list[Found]:
    """Keep a restatement (``unless_reported``) only where no other finding reports what it restates."""
    others = [f for f in found if not f.rule.unless_reported]
    tied = {s for f in others for s in f.tied}
    judged = {entry for f in others for entry in f.rule.covers}  # what the rules that found something judge
    rested = set().union(*(_rests_on(f, judgement, matched) for f in others)) if others else set()
    explained_chains = {
        SIGNATURES[family].chain
        for other in others
        if other.finding.severity is Severity.ERROR
        for family in other.tied
        if SIGNATURES[family].role in (ROOT, CONSEQUENCE)
    }
    kept: list[Found] = []
    for each in found:
        if not each.rule.unless_reported:
            kept.append(each)
            continue
        lines = _restated(each, judgement)
        families = {m.signature for m in lines}
        each.tied = sorted(families, key=list(matched).index)
        if families & tied or {m.line for m in lines} & rested:
            continue
        if any(set(SIGNATURES[family].catalog) & judged for family in families):
            continue  # a rule that judges this failure found something (an override that has no effect: info)
        if {SIGNATURES[family].chain for family in families} & explained_chains:
            continue
        kept.append(each)
    return kept


def _passed_when_reported(judgement: Judgement, standing: list[Found]) -> None:
    """A rule that reports only what no other finding does (``only_alone``, ``unless_reported``) and whose
    every finding was left out passed: what it checks holds, another finding reports the failure."""
    kept = {f.rule.id for f in standing}
    dropped: dict[str, Found] = {}
    for each in judgement.found:
        if (each.rule.only_alone or each.rule.unless_reported) and each.rule.id not in kept:
            dropped.setdefault(each.rule.id, each)
    for rule_id, each in dropped.items():
        judgement.passed.append(CheckResult(rule_id, each.rule.name, each.rule.summary))
    if dropped:
        order = {rule.id: i for i, rule in enumerate(judgement.rules)}
        judgement.passed.sort(key=lambda c: order.get(c.rule_id, len(order)))


def _not_overruled(judgement: Judgement, standing: list[Found]) -> None:
    """A check that passed on the log's facts is "not checked" when a standing finding reports, from the
    log's own message, the failure the check judges (a catalog entry it covers): a restatement (BNB550),
    or a log twin standing in for it that refutes a premise the check's error would refute too (BNB551
    for BNB120: "torch runs on the GPUs"). Its inference from partial facts does not overrule the
    message."""
    by_entry: dict[str, Found] = {}  # catalog id -> a finding that the log's message states it
    partners: dict[str, set[str]] = {}  # rule id -> the entries a twin of it reports
    for each in standing:
        if each.finding.severity is Severity.INFO or not (each.rule.unless_reported or each.rule.stands_in_for):
            continue
        entries = {c for family in each.tied if SIGNATURES[family].role == ROOT for c in SIGNATURES[family].catalog}
        for entry in entries:
            by_entry.setdefault(entry, each)
        for partner in each.rule.stands_in_for:
            partners.setdefault(partner, set()).update(entries)
    if not by_entry:
        return
    rules = {r.id: r for r in judgement.rules}
    for check in list(judgement.passed):
        rule = rules.get(check.rule_id)
        if rule is None:
            continue
        wanted = set(rule.covers) & set(by_entry)
        # a twin's partner by the entries the twin reports; any rule by a restatement's
        judged = [
            c
            for c in rule.covers
            if c in wanted
            and (
                by_entry[c].rule.unless_reported
                or (c in partners.get(rule.id, ()) and set(by_entry[c].rule.refutes) & set(rule.refutes))
            )
        ]
        if not judged:
            continue
        says = by_entry[judged[0]].finding
        judgement.passed.remove(check)
        check.reason = (
            f"the log's own message says otherwise ({says.rule_id}: {says.title[:80]}); run `bnbdoctor --rule "
            f"{check.rule_id}` on the machine"
        )
        check.blocked_by = says.rule_id
        judgement.skipped.append(check)


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
    ranked = _alone_only_when_alone(_unless_reported(judgement, _fold_twins(judgement.found), matched))
    _passed_when_reported(judgement, ranked)
    _not_overruled(judgement, ranked)
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
