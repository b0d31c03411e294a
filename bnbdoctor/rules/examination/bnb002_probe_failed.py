"""BNB002 probe-failed: passes when every probe could examine what it looks at (OS, GPUs, CUDA toolkits, native library, loader)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.examination._shared import _failed

#: What each probe examines, for the finding's title (any other probe is named as it is).
_EXAMINES = {
    "env": "the environment variables",
    "platform": "the operating system",
    "gpu": "the GPUs through NVML",
    "cuda_toolkit": "the CUDA toolkits",
    "native": "the bitsandbytes native library and its dependencies",
    "load": "whether the loader loads the bitsandbytes library",
}


@rule(
    Severity.ERROR,
    "Every probe could examine what it looks at (OS, GPUs, CUDA toolkits, native library, loader)",
    needs=("probes",),
)
def probe_failed(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule reads the record of every probe other than the `python` probe (BNB001): `env`, `platform`, `gpu`,
    `cuda_toolkit`, `native` and `load`. It reports one finding for each probe that failed or ran past its time limit,
    quoting the probe's message. A probe that did not run because another one failed first (the native library
    probe needs the interpreter's answer) is not reported again: the first failure is the finding.

    A GPU that NVML cannot see, or a library the loader refuses, is not a probe failure: those are facts the other
    rules judge. This rule fires only when bnbdoctor could not find out.

    ## Why it matters

    The rules that need the missing facts are "not checked". Without this finding, a machine bnbdoctor could not
    examine would look like one where nothing is wrong.

    ## How to fix

    Rerun with `--debug` to see the probe's details, and report the message if it looks like a bnbdoctor bug. A probe
    that timed out (a hung NVML call, a slow network file system) may succeed when the machine is less busy.
    """
    hits = []
    for index, run in _failed(facts):
        if run.name == "python":
            continue
        what = _EXAMINES.get(run.name, f"what the {run.name} probe looks at")
        hits.append(
            Hit(
                title=f"bnbdoctor could not examine {what} (the {run.name} probe failed)",
                explanation=(
                    f"The {run.name} probe failed, so the checks that need its facts did not run: nothing is known "
                    "about them, which is not the same as nothing wrong."
                ),
                evidence=[Evidence(f"{run.name} probe", run.error or "failed", f"probes[{index}].error")],
                remediation=Remediation(
                    "Rerun with --debug to see the probe's details; report the message if it looks like a bnbdoctor "
                    "bug.",
                    ["bnbdoctor --debug"],
                ),
            )
        )
    return hits
