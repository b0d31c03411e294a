"""BNB216 bnb-submodule-missing: passes when the log shows no bitsandbytes submodule missing from an importable bitsandbytes."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.releases._shared import OVERLAY_REPORT, OVERLAY_TRACEBACK, PIP_SHOW_FILES


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes submodule missing from an importable bitsandbytes",
    needs=("log",),
    covers=("mixed_bnb_distributions_stale_files",),
    stands_in_for=("BNB215",),
    references=(OVERLAY_REPORT, OVERLAY_TRACEBACK),
    confirm=(PIP_SHOW_FILES, "bnbdoctor --rule BNB215"),
)
def submodule_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `ModuleNotFoundError: No module named 'bitsandbytes.<submodule>'`: the bitsandbytes package
    itself imports, but one of its modules imports a sibling that is not there (for example
    `bitsandbytes.cuda_setup.paths`, which only the releases with the legacy loader shipped); and on `ImportError: cannot
    import name 'X' from 'bitsandbytes.Y'` in a fresh `python -m bitsandbytes` (a traceback through
    `bitsandbytes/__main__.py`), where no module of an earlier release can be left in memory.

    ## Why it matters

    A release never imports a module it does not ship, so the importing file and the folder come from different
    releases: files of an older install left in the package folder (a community wheel installed over PyPI's, an
    interrupted install, a manual copy), or modules of the previous release still in memory after `pip install -U`
    inside a running notebook. On the machine, [BNB215](BNB215.md) compares the folder with its `RECORD`.

    ## How to fix

    Restart the Python process first (a notebook kernel). If the error stays, uninstall every bitsandbytes
    distribution, delete the leftover folder and install one release:

    ```bash
    pip uninstall -y bitsandbytes   # repeat until pip says it is not installed
    pip install --no-cache-dir bitsandbytes
    ```
    """
    if not log.seen(facts, S.BNB_SUBMODULE_MISSING):
        return None
    notebook = log.seen(facts, S.NOTEBOOK)
    return Hit(
        title="A bitsandbytes module imports a sibling that is not installed: files of two releases meet",
        explanation="bitsandbytes itself imports, but one of its modules imports a submodule (or a name from one) "
        "that is missing. A "
        "release never imports a module it does not ship, so the files come from two releases: leftovers of an older "
        "install in the package folder, or (in a notebook) modules of the previous release still in memory after an "
        "upgrade.",
        evidence=log.line_evidence(facts, S.BNB_SUBMODULE_MISSING),
        remediation=Remediation(
            ("Restart the kernel first. " if notebook else "Restart the process first. ")
            + "If the error stays, uninstall every bitsandbytes distribution until pip finds none, delete the leftover "
            "bitsandbytes folder in site-packages, and install one release.",
            ["pip uninstall -y bitsandbytes", "pip install --no-cache-dir bitsandbytes", PIP_SHOW_FILES],
        ),
    )
