"""BNB001 interpreter-not-examined: passes when bnbdoctor could examine the Python interpreter whose torch and bitsandbytes it diagnoses."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.examination._shared import _failed


@rule(
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
