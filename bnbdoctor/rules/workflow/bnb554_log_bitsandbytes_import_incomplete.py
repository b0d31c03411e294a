"""BNB554 log-bitsandbytes-import-incomplete: passes when the log shows no bitsandbytes module missing its nn or optim submodule."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: Which bitsandbytes the interpreter imports (a local folder shadowing the package shows here).
WHICH_BNB = 'python -c "import bitsandbytes, sys; print(bitsandbytes.__file__, sys.path[:3])"'

FINDING = log.LogFinding(
    (S.BNB_MODULE_ATTRIBUTE_MISSING,),
    title="The imported bitsandbytes has no '{name}': its import failed half-way or a folder shadows it",
    explanation="Every bitsandbytes release imports its {name} submodule when it is imported, so the module the "
    "program got is not a complete bitsandbytes: an earlier import raised part-way and left a half-initialised "
    "module behind, or a folder named bitsandbytes in the working directory or on sys.path shadows the installed "
    "package.",
    fix="From the same directory and environment, print which bitsandbytes is imported and run its self-check; "
    "rename a shadowing folder, or fix the error the import prints.",
    commands=(WHICH_BNB, PYTHON_M_BNB),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes module missing its nn or optim submodule",
    needs=("log",),
    covers=("bnb_import_incomplete_missing_submodule",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/727",
        "https://github.com/Thund3rPat/kohya_ss-linux/issues/9",
    ),
    confirm=(WHICH_BNB, PYTHON_M_BNB),
)
def bitsandbytes_import_incomplete(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: module 'bitsandbytes' has no attribute 'nn'` (or `'optim'`, `'functional'`,
    ...): the name `bitsandbytes` resolved to a module without the submodules every release has.

    ## Why it matters

    Every bitsandbytes release imports `nn` and `optim` in its `__init__`, so the module the program got is not a
    complete bitsandbytes. Either an earlier `import bitsandbytes` raised part-way (its native library or a
    dependency failed; the caller caught the error, and the half-initialised module stayed in `sys.modules`), or a
    folder named `bitsandbytes` (a git clone, a build directory) in the working directory or on `sys.path`
    shadows the installed package as an empty namespace package.

    ## How to fix

    From the same working directory and environment, see which bitsandbytes is imported and whether it imports:

    ```bash
    python -c "import bitsandbytes, sys; print(bitsandbytes.__file__, sys.path[:3])"
    python -m bitsandbytes
    ```

    A path that is not `site-packages/bitsandbytes/__init__.py` (or `None`) is a shadowing folder: rename it or run
    from elsewhere. Otherwise fix the error the import prints, or reinstall bitsandbytes.
    """
    match = log.first(facts, S.BNB_MODULE_ATTRIBUTE_MISSING)
    if match is None:
        return None
    found = re.search(r"has no attribute '(\w+)'", match.text)
    return FINDING.hit(facts, name=found.group(1) if found else "nn")
