"""BNB207 triton-ops-removed: passes when bitsandbytes does not import triton.ops from a triton that removed it."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge.imports import TORCH_WITH_TRITON_WITHOUT_OPS, TRITON_OPS_IMPORT, TRITON_WITHOUT_OPS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.packages._shared import ImportBreakage

BREAKAGE = ImportBreakage(
    releases=TRITON_OPS_IMPORT,
    packages=("triton", "pytorch-triton-rocm"),
    breaks=TRITON_WITHOUT_OPS.contains,
    title="imports triton.ops, which triton {other} removed",
    explanation=f"bitsandbytes {minor(TRITON_OPS_IMPORT.first_text)} to {TRITON_OPS_IMPORT.last_text} import "
    f"triton.ops.matmul_perf_model at import time; triton {TRITON_WITHOUT_OPS.first_text} (shipped with torch "
    f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}) removed triton.ops, so `import bitsandbytes` fails with "
    "\"ModuleNotFoundError: No module named 'triton.ops'\".",
    shown="{other}",
    fix=f"Upgrade bitsandbytes to {TRITON_OPS_IMPORT.below_text} or newer (PR #1413 removed the import), or pin "
    f"triton below {TRITON_WITHOUT_OPS.first_text} together with torch below "
    f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}.",
    commands=(f'pip install -U "bitsandbytes{TRITON_OPS_IMPORT.after().pip_spec()}"',),
)


@rule(
    Severity.ERROR,
    "bitsandbytes does not import triton.ops from a triton that removed it",
    needs=("python",),
    covers=("triton_ops_module_missing",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1492",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1413",
    ),
)
def triton_ops_removed(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when all of these hold:

    - bitsandbytes is installed and its version is known to be {{ imports.TRITON_OPS_IMPORT.first_text }} or newer and
      older than {{ imports.TRITON_OPS_IMPORT.below_text }};
    - `triton` (or `pytorch-triton-rocm`) is installed in the same interpreter;
    - that triton is version {{ imports.TRITON_WITHOUT_OPS.first_text }} or newer.

    An unknown bitsandbytes version does not fire.

    ## Why it matters

    Older bitsandbytes releases contain optional Triton kernels (`bitsandbytes/triton/`) that are imported whenever
    triton is installed. They import `triton.ops.matmul_perf_model`. Triton {{ imports.TRITON_WITHOUT_OPS.first_text }},
    the version that torch {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }} installs, removed `triton.ops`. So
    `import bitsandbytes` itself fails, and with it anything that imports it (transformers quantizers, PEFT, unsloth):

    ```
        from triton.ops.matmul_perf_model import early_config_prune, estimate_matmul_time
    ModuleNotFoundError: No module named 'triton.ops'
    ```

    bitsandbytes fixed this by carrying its own copy of the performance model (PR #1413). The first release without
    the `triton.ops` import is {{ imports.TRITON_OPS_IMPORT.below_text }} (tags {{ imports.TRITON_OPS_IMPORT.last_text }}
    and
    {{ imports.TRITON_OPS_IMPORT.below_text }} in the bitsandbytes repository); users report {{
    imports.TRITON_OPS_REPORTED_WORKING }} and later working.

    ## How to fix

    Upgrade bitsandbytes:

    ```bash
    pip install -U "bitsandbytes>={{ imports.TRITON_OPS_IMPORT.below_text }}"
    python -c "import bitsandbytes"
    ```

    If you cannot upgrade, the alternative is to stay on torch < {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }}
    with triton < {{ imports.TRITON_WITHOUT_OPS.first_text }} (for example
    `pip install "triton<{{ imports.TRITON_WITHOUT_OPS.first_text }}"` together with an older torch build). Note that torch
    {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }} itself requires triton
    {{ imports.TRITON_WITHOUT_OPS.first_text }}.
    """
    return BREAKAGE.check(facts)
