"""BNB549 unrecognised-error-in-log: passes when the log shows no error that bnbdoctor cannot name."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


def _facts_read(facts: Facts) -> list[Evidence]:
    """What the log shows about the machine, as evidence items (the facts bnbdoctor could read)."""
    out: list[Evidence] = []
    if facts.platform is not None:
        out.append(Evidence("platform", facts.platform.os + (" (WSL2)" if facts.platform.wsl else ""), "platform.os"))
    if facts.gpu is not None and facts.gpu.devices:
        out.append(Evidence("GPUs", ", ".join(d.name for d in facts.gpu.devices), "gpu.devices"))
    versions = dict(facts.log.versions) if facts.log else {}
    if versions:
        out.append(Evidence("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())), "log.versions"))
    return out


@rule(
    Severity.WARNING,
    "The log shows no error that bnbdoctor cannot name",
    needs=("log",),
    confirm=("bnbdoctor --markdown",),
    only_alone=True,
)
def unrecognised_error(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when the log holds an error line (an exception: `KeyError: 'lm_head'`, `torch.OutOfMemoryError: CUDA
    out of memory ...`, `[rank0]: RuntimeError: ...`; how a process ended: `Killed`, `exit code 137`; a build's or an
    installer's failure: `CMake Error`, `nvcc fatal`, pip's `ERROR:`; a record logged at `ERROR`; the list is in
    [explain's documentation](../explain.md)) and no known message family names a failure anywhere in the log. It
    quotes the error lines with their numbers and the facts the log shows, and says what to run on the machine. When
    another finding reports an error, `bnbdoctor explain` leaves this one out: the log's failure is named.

    Warnings (`UserWarning: ...`) are not errors, and a log whose only bitsandbytes-related lines are known harmless
    messages (see [BNB540](BNB540.md)) gets no error finding.

    ## Why it matters

    "No known failure" would be wrong for a log that ends in a traceback: the error is real, bnbdoctor just cannot
    name it. It may be unrelated to bitsandbytes (a bug in the script, a CUDA out-of-memory error in user code) or a
    failure bnbdoctor does not know yet.

    ## How to fix

    Run the doctor on the machine itself, where it sees the installation and not only the log, and attach its report
    to an issue:

    ```bash
    bnbdoctor
    bnbdoctor --markdown > bnbdoctor-report.md
    ```
    """
    matches = log.matches(facts, S.UNRECOGNISED_ERROR)
    if not matches:
        return None
    lines = ", ".join(str(m.line) for m in matches[:6]) + (", ..." if len(matches) > 6 else "")
    last = matches[-1]
    return Hit(
        title=f"The log shows an error bnbdoctor does not recognise (line {last.line}): {last.text[:120]}",
        explanation=f"The error line{'s' if len(matches) > 1 else ''} at log line{'s' if len(matches) > 1 else ''} "
        f"{lines} match{'es' if len(matches) == 1 else ''} no known bitsandbytes, CUDA, torch, transformers, "
        "accelerate or PEFT failure family. It may be unrelated to bitsandbytes (a bug in the script, memory "
        "exhausted by the workload) or a failure bnbdoctor does not know yet. The facts below are all the log shows "
        "about the machine; the doctor on the machine sees the rest.",
        evidence=[Evidence(f"log line {m.line}", m.text, "log.matches") for m in matches[:4]] + _facts_read(facts),
        remediation=Remediation(
            "Run bnbdoctor on the machine that produced the log; to ask for help, attach its Markdown report and the "
            "whole traceback to an issue.",
            ["bnbdoctor", "bnbdoctor --markdown > bnbdoctor-report.md"],
        ),
    )
