"""BNB208 scipy-missing-for-old-bnb: passes when scipy is installed when the bitsandbytes release imports it."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.imports import SCIPY_IMPORT
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.packages._shared import ImportBreakage

BREAKAGE = ImportBreakage(
    releases=SCIPY_IMPORT,
    packages=("scipy",),
    breaks=lambda version: not version,
    title="needs scipy, which is not installed",
    explanation=f"{SCIPY_IMPORT.first_text}-{SCIPY_IMPORT.last_text} import scipy (for the NF4 data type) "
    "without declaring it as a dependency, so `import bitsandbytes` fails with \"No module named 'scipy'\".",
    shown="not installed",
    fix="Install scipy, or upgrade bitsandbytes.",
    commands=("pip install scipy",),
)


@rule(
    Severity.ERROR,
    "scipy is installed when the bitsandbytes release imports it",
    needs=("python",),
    covers=("scipy_missing",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/426",),
    log_gate=LogGate("a log shows scipy missing only with \"No module named 'scipy'\"", signatures=(S.SCIPY_MISSING,)),
)
def scipy_missing_for_old_bnb(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when the installed bitsandbytes is {{ imports.SCIPY_IMPORT.first_text }}
    or newer but older than {{ imports.SCIPY_IMPORT.below_text }}, and no `scipy` distribution is installed in the same
    interpreter. Other versions, and an unknown version, do not fire.

    ## Why it matters

    {{ imports.SCIPY_IMPORT.first_text }} added the NF4 4-bit data type and began importing `scipy`
    (`from scipy.stats import norm` in `bitsandbytes/functional.py`) at import time. However,
    {{ imports.SCIPY_IMPORT.first_text }}–{{ imports.SCIPY_IMPORT.last_text }} do not list scipy as a dependency
    (`pip show bitsandbytes` shows an empty `Requires:`). In slim Docker images and fresh virtual environments scipy is
    therefore absent, and importing bitsandbytes, or transformers' bitsandbytes integration, fails:

    ```
        from . import cuda_setup, utils, research
    ModuleNotFoundError: No module named 'scipy'
    ```

    {{ imports.SCIPY_IMPORT.below_text }} declares scipy in `install_requires`, so pip installs it automatically.

    ## How to fix

    Install scipy into the same interpreter, or upgrade bitsandbytes (which also removes the legacy loader, see
    [BNB205](BNB205.md)):

    ```bash
    pip install scipy
    # or
    pip install -U bitsandbytes
    ```
    """
    return BREAKAGE.check(facts)
