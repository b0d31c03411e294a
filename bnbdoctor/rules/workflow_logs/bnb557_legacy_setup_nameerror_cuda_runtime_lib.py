"""BNB557 legacy-setup-nameerror-cuda-runtime-lib: passes when the log shows no NameError of bitsandbytes 0.38.0's CUDA setup (CUDA_RUNTIME_LIB)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import CUDA_RUNTIME_LIB_NAMEERROR as NAMEERROR
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

VERSION = "python -c \"import importlib.metadata as m; print(m.version('bitsandbytes'))\""

FINDING = log.LogFinding(
    (S.LEGACY_SETUP_NAMEERROR_CUDA_RUNTIME_LIB,),
    title=f"bitsandbytes {NAMEERROR.last_text}'s CUDA setup crashes with a NameError (CUDA_RUNTIME_LIB); upgrade "
    "bitsandbytes",
    explanation=f"bitsandbytes {NAMEERROR.last_text} renamed CUDA_RUNTIME_LIB to CUDA_RUNTIME_LIBS but its warnings for a CUDA "
    "runtime missing from the conda environment or LD_LIBRARY_PATH (and for duplicate runtimes) still use the old "
    f"name, so reaching one of them kills the import. {NAMEERROR.below_text} fixed it.",
    fix="Upgrade bitsandbytes; if the warning it then prints says the CUDA runtime is not found, put it on "
    "LD_LIBRARY_PATH or in the conda environment.",
    commands=("pip install -U bitsandbytes", VERSION),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no NameError of the CUDA setup naming CUDA_RUNTIME_LIB",
    needs=("log",),
    covers=("legacy_setup_nameerror_cuda_runtime_lib",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/338",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/557",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/300",
    ),
    confirm=(VERSION,),
)
def legacy_setup_nameerror_cuda_runtime_lib(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `NameError: name 'CUDA_RUNTIME_LIB' is not defined` (Python 3.10 adds `Did you mean:
    'CUDA_RUNTIME_LIBS'?`), raised while `import bitsandbytes` runs its CUDA setup.

    ## Why it matters

    Commit 4cd63de of bitsandbytes renamed the constant `CUDA_RUNTIME_LIB` to `CUDA_RUNTIME_LIBS` in
    `cuda_setup/main.py` and left four uses of the old name: the warnings that the conda environment or
    `LD_LIBRARY_PATH` did not contain the CUDA runtime, and the duplicate-runtime warning (bitsandbytes #300). The
    first {{ loader.CUDA_RUNTIME_LIB_NAMEERROR.last_text }} wheel shipped that state, so on every machine where the setup reaches one of those warnings the
    import dies with the NameError instead (bitsandbytes #338 on Linux, #557 on Windows). "Fixing #300" renamed the
    uses, released as {{ loader.CUDA_RUNTIME_LIB_NAMEERROR.below_text }}.

    ## How to fix

    Upgrade bitsandbytes:

    ```bash
    pip install -U bitsandbytes
    ```

    The warning the fixed release prints in its place may still matter: it means the CUDA runtime is not where the
    setup looked first (add it to `LD_LIBRARY_PATH`, or install it into the conda environment).
    """
    return FINDING.hit(facts)
