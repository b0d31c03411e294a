"""Stage 6 of the pipeline: every fix re-diagnosed on the machine as it leaves it.

The report's commands (fitted to this machine, root causes first) are replayed together onto a copy of
the facts (:func:`bnbdoctor.remedy.aftermath.facts_after`), and the same rules run again on what they
leave. Each finding's remedy then carries a :class:`~bnbdoctor.findings.Proof`:

- **verified**: after all of the report's commands, the rules find no error;
- **not verified**: the errors that would remain are named (the rule that made the finding among them
  when its own fix does not clear it);
- **cannot tell**: one of its commands does what the replay does not model (a driver update, a conda env,
  a rebuild): it says which, and never claims the machine well.

A log's facts are what the log shows, not the machine: a fix read from a log is "cannot tell", with the reason.
A finding whose commands only look (``nvidia-smi``, ``python -c ...``) carries no proof: they are steps of the
diagnosis, not a fix.

The commands of different findings are judged together, because they run together: an override exported
by one finding and an upgrade printed by another must not fight.
"""

from __future__ import annotations

from bnbdoctor.findings import Finding, Proof, Severity
from bnbdoctor.remedy.aftermath import facts_after, only_looks
from bnbdoctor.rules.engine import AFTER_FIX, Judgement, run_rules

#: Why a fix read from a log is not re-diagnosed: the facts are what the log shows, not the machine.
FROM_A_LOG = "read from a log: the machine itself is not here to re-diagnose; run bnbdoctor on it after these commands"


def _from_a_log(findings: list[Finding]) -> None:
    for finding in findings:
        if not all(only_looks(c) for c in finding.remediation.commands):
            finding.remediation.proof = Proof(verified=None, not_replayed=[FROM_A_LOG])


def verify_remedies(judgement: Judgement) -> None:
    """Give each finding that prints commands the proof of the report's commands, run together. A replay that
    fails on odd facts (a hostile report's) leaves every fix "not verified", saying so; it never stops the report."""
    try:
        _verify(judgement)
    except Exception as exc:  # noqa: BLE001 - the diagnosis stands without its proofs
        why = f"the re-diagnosis failed on these facts ({type(exc).__name__}); run bnbdoctor again after the commands"
        for found in judgement.found:
            if found.finding.remediation.commands:
                found.finding.remediation.proof = Proof(verified=None, not_replayed=[why])


def _verify(judgement: Judgement) -> None:
    findings = [found.finding for found in judgement.found]
    commands = [command for finding in findings for command in finding.remediation.commands]
    if not commands:
        return
    if judgement.facts.log is not None:
        _from_a_log(findings)
        return
    after = facts_after(judgement.facts, commands)
    again = run_rules(after.facts, judgement.rules, AFTER_FIX)
    remaining = [f"{f.rule_id}: {f.title}" for f in again.findings if f.severity is Severity.ERROR]
    for finding in findings:
        own = finding.remediation.commands
        if all(c in after.looked for c in own):
            continue  # no command, or only diagnostic steps: nothing to prove
        not_replayed = [f"`{c}`: {after.not_replayed[c]}" for c in own if c in after.not_replayed]
        verified = None if not_replayed else not remaining
        finding.remediation.proof = Proof(
            verified=verified,
            remaining=remaining,
            not_replayed=not_replayed,
            unknown=list(after.unknown),
        )
