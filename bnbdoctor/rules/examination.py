"""Rules about the examination itself (ids BNB001-BNB099): what bnbdoctor could not examine.

A probe that failed is a fact (:class:`~bnbdoctor.facts.ProbeRun`), and a diagnosis that rests on
nothing must not read as "no problems": these rules turn each failed probe into an error finding
with the probe's own message and what to do, so that a run that examined nothing exits 1. A probe
skipped because another one failed (``ProbeRun.skipped``) is a consequence, never its own finding.
They need the ``probes`` section: a log's facts (``bnbdoctor explain``) ran no probes.
"""

from __future__ import annotations

from bnbdoctor.facts import Facts, ProbeRun
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.rules.base import rule

#: What each probe examines, for the finding's title (any other probe is named as it is).
_EXAMINES = {
    "env": "the environment variables",
    "platform": "the operating system",
    "gpu": "the GPUs through NVML",
    "cuda_toolkit": "the CUDA toolkits",
    "native": "the bitsandbytes native library and its dependencies",
    "load": "whether the loader loads the bitsandbytes library",
}


def _failed(facts: Facts) -> list[tuple[int, ProbeRun]]:
    return [(i, run) for i, run in enumerate(facts.probes) if not run.ok and not run.skipped]


@rule(
    "BNB001",
    "interpreter-not-examined",
    Severity.ERROR,
    "bnbdoctor could examine the Python interpreter whose torch and bitsandbytes it diagnoses",
    needs=("probes",),
)
def interpreter_not_examined(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the record of the `python` probe. bnbdoctor never imports torch or bitsandbytes itself: it runs a
    small standard-library script in the examined interpreter (the one `--python` names, else the active
    `VIRTUAL_ENV` / `CONDA_PREFIX`, else its own) with a time limit. The rule fires when that interpreter crashed
    (for example killed by a segmentation fault), timed out, could not start, or printed something that is not the
    script's answer. The finding quotes the probe's message.

    ## Why it matters

    Without that answer nothing is known about torch, bitsandbytes or their native libraries: every rule that needs
    them is "not checked". A report that said "0 errors" here would claim a verdict on an installation that was never
    examined, so the run is an error (exit code 1), whichever way the interpreter was chosen.

    ## How to fix

    Run the interpreter yourself to see it fail, for example `python -c "import sys; print(sys.version)"` with the
    same environment. If an activated virtual environment or conda environment points at a broken interpreter,
    deactivate it or recreate the environment; or point bnbdoctor at a working interpreter with `--python PATH`.
    """
    run = next((run for i, run in _failed(facts) if run.name == "python"), None)
    if run is None:
        return None
    index = facts.probes.index(run)
    return Hit(
        title="bnbdoctor could not examine the Python interpreter",
        explanation=(
            "The examined interpreter did not answer bnbdoctor's facts script (it crashed, timed out, could not start "
            "or printed something else), so nothing is known about its torch and bitsandbytes: the checks that need "
            "them did not run."
        ),
        evidence=[Evidence("python probe", run.error or "failed", f"probes[{index}].error")],
        remediation=Remediation(
            "Run that interpreter yourself to see the failure. If VIRTUAL_ENV or CONDA_PREFIX points at a broken "
            "environment, deactivate or recreate it, or name a working interpreter with --python PATH.",
            ['python -c "import sys; print(sys.executable, sys.version)"'],
        ),
    )


@rule(
    "BNB002",
    "probe-failed",
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
