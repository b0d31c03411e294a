"""BNB512 log-import-module-missing: passes when the log shows no bitsandbytes import failing on a missing module (triton.ops, scipy)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.imports import (
    SCIPY_IMPORT,
    TORCH_WITH_TRITON_WITHOUT_OPS,
    TRITON_OPS_IMPORT,
    TRITON_OPS_REPORTED_WORKING,
    TRITON_WITHOUT_OPS,
)
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

#: One finding for each missing module the log shows.
FINDINGS = (
    log.LogFinding(
        (S.TRITON_OPS_MISSING,),
        title=f"bitsandbytes imports triton.ops, which triton {TRITON_WITHOUT_OPS.first_text} removed",
        explanation=f"bitsandbytes {minor(TRITON_OPS_IMPORT.first_text)} to {TRITON_OPS_IMPORT.last_text} import "
        f"triton.ops.matmul_perf_model when they are imported; triton {TRITON_WITHOUT_OPS.first_text} (shipped "
        f"with torch {TORCH_WITH_TRITON_WITHOUT_OPS.first_text}) removed triton.ops, so `import bitsandbytes` "
        "fails with \"ModuleNotFoundError: No module named 'triton.ops'\".",
        fix=f"Upgrade bitsandbytes ({TRITON_OPS_IMPORT.below_text} removed the import; users "
        f"report {TRITON_OPS_REPORTED_WORKING}+ working), or pin triton below "
        f"{TRITON_WITHOUT_OPS.first_text} together with torch below "
        f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}.",
        commands=(f'pip install -U "bitsandbytes{TRITON_OPS_IMPORT.after().pip_spec()}"',),
        covers=("triton_ops_module_missing",),
    ),
    log.LogFinding(
        (S.SCIPY_MISSING,),
        title="bitsandbytes needs scipy, which is not installed",
        explanation=f"bitsandbytes {SCIPY_IMPORT.first_text} to {SCIPY_IMPORT.last_text} import scipy (for the NF4 "
        "data type) without declaring it as a "
        "dependency, so `import bitsandbytes` fails with \"No module named 'scipy'\" in slim environments.",
        fix="Install scipy, or upgrade bitsandbytes.",
        commands=("pip install scipy",),
        covers=("scipy_missing",),
    ),
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes import failing on a missing module (triton.ops, scipy)",
    needs=("log",),
    covers=("triton_ops_module_missing", "scipy_missing"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1492",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/426",
    ),
    stands_in_for=("BNB207", "BNB208"),
    confirm=("pip show bitsandbytes triton scipy",),
)
def module_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule fires when importing bitsandbytes fails on a missing module: `No module named 'triton.ops'` (also a
    traceback line `from triton.ops… import`, and the message cut after `triton.o`), and `No module named 'scipy'`. It
    is the log twin of [BNB207](BNB207.md) and [BNB208](BNB208.md), which fire instead when the log shows the versions
    they need.

    ## Why it matters

    - bitsandbytes {{ imports.TRITON_OPS_IMPORT.first_minor }} to {{ imports.TRITON_OPS_IMPORT.last_text }} import `triton.ops.matmul_perf_model` when they load; triton {{ imports.TRITON_WITHOUT_OPS.first_text }} (shipped with torch
      {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }}) removed `triton.ops`.
    - bitsandbytes {{ imports.SCIPY_IMPORT.first_text }} to {{ imports.SCIPY_IMPORT.last_text }} import scipy for the NF4 data type without declaring it as a dependency.

    ## How to fix

    - triton: upgrade bitsandbytes ({{ imports.TRITON_OPS_IMPORT.below_text }} removed the import), or pin triton below {{ imports.TRITON_WITHOUT_OPS.first_text }} together with torch below {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }}:

      ```bash
      pip install -U "bitsandbytes>={{ imports.TRITON_OPS_IMPORT.below_text }}"
      ```

    - scipy: `pip install scipy`, or upgrade bitsandbytes.
    """
    return log.hits(facts, FINDINGS)
