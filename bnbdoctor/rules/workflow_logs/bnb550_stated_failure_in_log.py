"""BNB550 stated-failure-in-log: passes when every failure the log's own messages state is reported."""

from __future__ import annotations

from bnbdoctor.catalog import catalog_entry
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.signatures import CONSEQUENCE, ROOT, SIGNATURES, SignatureId
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

#: Families whose message warns of a risk rather than stating a failure: restated as a warning.
WARNS = frozenset({S.PEFT_MERGE_QUANTIZED_WARNING})
#: Families restated at most, the first ones the log shows.
MAX_RESTATED = 6


def stated_failures(facts: Facts) -> list[SignatureId]:
    """The families the log shows whose message states a failure (a specific root cause or
    consequence), in the order of their first line."""
    found: list[SignatureId] = []
    for match in facts.log.matches if facts.log else []:
        family = SIGNATURES[match.signature]
        if family.role in (ROOT, CONSEQUENCE) and family.specific and match.signature not in found:
            found.append(SignatureId(match.signature))
    return found


def _restatement(facts: Facts, family: SignatureId) -> Hit:
    signature = SIGNATURES[family]
    evidence = log.line_evidence(facts, family, limit=3)
    first = log.first(facts, family)
    assert first is not None
    entry = next((e for e in (catalog_entry(c) for c in signature.catalog) if e is not None), None)
    known = ""
    if entry is not None and entry.get("root_cause"):
        known = (
            f" The failure catalog's entry for this message, {entry.get('title') or entry['id']}: {entry['root_cause']}"
        )
    return Hit(
        title=f"The log states the failure (line {first.line}): {signature.summary}",
        explanation=f"Log line {first.line} is the message in which the software itself states the failure "
        f"({signature.id}). That is the strongest evidence a log holds: bnbdoctor reports it as the log says it, "
        "although the facts around it were not enough for a rule to tell more (the versions, the GPU, the files "
        f"the message is about).{known}",
        evidence=evidence,
        remediation=Remediation(
            (f"{entry['remediation']} " if entry is not None and entry.get("remediation") else "")
            + "Run bnbdoctor on the machine that produced the log: it sees what the log only hints at.",
            ["bnbdoctor"],
        ),
        severity=Severity.WARNING if family in WARNS else None,
        covers=[],
        references=list((entry.get("urls") or [])[:3]) if entry is not None else [],
    )


@rule(
    Severity.ERROR,
    "Every failure the log's own messages state is reported",
    needs=("log",),
    confirm=("bnbdoctor --markdown",),
    unless_reported=True,
)
def stated_failure(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule restates, as the log says it, a failure that torch, bitsandbytes, transformers, PEFT, accelerate or the
    dynamic loader states in the log (a message family that names a cause or reports a consequence: `NVIDIA GeForce
    RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation`, `Blockwise
    quantization only supports 16/32-bit floats`, `libhipblas.so.0: cannot open shared object file`) when no other
    finding reports it. It quotes the message's lines and, where the failure catalog knows the failure, its cause
    and fix. `bnbdoctor explain` keeps a restatement only when no other finding is tied to the same message or rests on
    its lines, and no error finding explains a failure of the same chain (the native library's load, the GPU and
    driver, imports, placement, a workflow); a check that passed on facts the message contradicts is listed as not
    checked.

    ## Why it matters

    When the software says what is wrong, that is the strongest evidence a log holds. A rule concludes from the facts a
    log shows (versions, a GPU's name, an architecture list), and those are often incomplete; a conclusion drawn from
    them must never overrule the message itself, nor leave it unreported with "no error in this log".

    ## How to fix

    Follow the message: the finding gives the catalog's cause and fix where bnbdoctor knows the failure. Then run the
    doctor on the machine, where it sees the installation and not only the log:

    ```bash
    bnbdoctor
    bnbdoctor --markdown > bnbdoctor-report.md
    ```
    """
    return [_restatement(facts, family) for family in stated_failures(facts)[:MAX_RESTATED]]
