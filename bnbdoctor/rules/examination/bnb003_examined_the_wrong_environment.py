"""BNB003 examined-the-wrong-environment: passes when bnbdoctor examined an environment the user chose, not a stale activation's fallback or its own empty one."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule

#: What names the interpreter to examine: the user's own, whichever it is.
CHOOSE = "bnbdoctor --python /path/to/your/env/bin/python"


@rule(
    Severity.ERROR,
    "bnbdoctor examined an environment the user chose, not a stale activation's fallback or its own empty one",
    needs=("probes", "python"),
    refutes=("users-env-examined",),
)
def examined_the_wrong_environment(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    How bnbdoctor chose the interpreter it examines (`--python`, the active virtualenv's `VIRTUAL_ENV`, the active
    conda env's `CONDA_PREFIX`, `python3` on `PATH` when bnbdoctor runs from a pipx or uv tool environment, else the
    interpreter running bnbdoctor), and two ways that choice is not the user's:

    - **a stale activation**: `VIRTUAL_ENV` or `CONDA_PREFIX` names a folder with no Python in it (the env was deleted
      or moved while a shell kept it active), so the choice passed over it to the next one. A warning: what was
      examined instead is named.
    - **bnbdoctor's own empty environment**: no `--python`, no active env, and the interpreter running bnbdoctor has
      neither torch nor bitsandbytes (bnbdoctor installed into a venv of its own). An error: every other finding about
      that interpreter (torch missing, bitsandbytes missing) follows from examining the wrong one, and its
      `pip install` would go into bnbdoctor's venv.

    ## Why it matters

    A diagnosis is only as good as the interpreter it examined. "PyTorch is not installed" about bnbdoctor's own venv
    sends the user to install torch where they never run it.

    ## How to fix

    Activate the environment you run (`source ~/venvs/llm/bin/activate`, `conda activate llm`) or name its interpreter:

    ```bash
    bnbdoctor --python /path/to/your/env/bin/python
    ```

    For a stale activation, `deactivate` (or `conda deactivate`) first.
    """
    python = facts.python
    assert python is not None
    if python.selected_by == "log":
        return Skip("a log does not show how its interpreter was chosen")
    stale = [s for s in python.stale_activations if s]
    own_and_empty = python.selected_by == "current" and not python.torch.installed and not python.bitsandbytes.installed
    evidence = [Evidence("examined", python.executable, "python.executable")]
    evidence += [
        Evidence("a stale activation", f"{s}: no Python there", f"python.stale_activations[{i}]")
        for i, s in enumerate(stale)
    ]
    if own_and_empty:
        return Hit(
            title="bnbdoctor examined its own environment, which has neither torch nor bitsandbytes",
            explanation=(
                f"No --python was given and no environment is active{' (only a stale one)' if stale else ''}, so "
                f"bnbdoctor examined the interpreter it runs on, {python.executable}, which has neither torch nor "
                "bitsandbytes: almost certainly not the one you train with. What it would say about torch and "
                "bitsandbytes is about that interpreter."
            ),
            evidence=evidence,
            remediation=Remediation(
                "Activate the environment you run, or name its interpreter with --python; if this really is that "
                "environment, install torch and bitsandbytes in it.",
                [CHOOSE],
            ),
        )
    if stale:
        return Hit(
            title=f"{stale[0].split('=', 1)[0]} names a folder with no Python: a stale activation",
            explanation=(
                f"{stale[0]} has no Python interpreter in it (the environment was deleted or moved while a shell kept "
                f"it active), so bnbdoctor examined {python.executable} instead. If that is not the environment you "
                "run, the findings are about another one."
            ),
            evidence=evidence,
            remediation=Remediation(
                "Deactivate the stale environment and activate the one you run, or use --python.", [CHOOSE]
            ),
            severity=Severity.WARNING,
        )
    return None
