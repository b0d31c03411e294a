"""BNB515 log-legacy-path-noise: passes when the log shows no 'non-existent directories' warnings of the legacy CUDA setup."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

FINDING = log.LogFinding(
    (S.NONEXISTENT_PATHS,),
    title="Noise: 'directories listed in your path were found to be non-existent'",
    explanation="The legacy CUDA setup splits every path-like environment variable and lists each piece that is "
    "not a folder (URLs, notebook kernel arguments, Windows paths). These lines are harmless; the failure, if "
    "any, is elsewhere in the log.",
    fix="Ignore these lines. Upgrading bitsandbytes makes them shorter or removes them.",
    limit=1,
)


@rule(
    Severity.INFO,
    "The log shows no 'non-existent directories' warnings of the legacy CUDA setup",
    needs=("log",),
    covers=("nonexistent_path_warnings_noise",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1002",),
    confirm=(PYTHON_M_BNB,),
)
def path_noise(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy setup's `The following directories listed in your path were found to be non-existent:
    {PosixPath(…)}` (and {{ loader.SHORT_NONEXISTENT_PATH_WARNING.first_text }}+'s shorter `The directory listed in your path is found to be non-existent`). It reports
    info: these lines are noise, listed so that they are not mistaken for the failure.

    ## Why it matters

    The legacy CUDA setup splits every environment variable that looks like a path and warns about each piece that is
    not a folder: URLs, notebook kernel arguments, proxy settings, Windows paths. Colab logs carry dozens of them. The
    actual failure, if any, is elsewhere in the log (often the first `CUDA SETUP:` error or `Loading binary` line).

    ## How to fix

    Ignore these lines. Upgrading bitsandbytes makes them shorter or removes them.
    """
    return FINDING.hit(facts)
