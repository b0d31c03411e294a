"""BNB576 legacy-setup-permission-error: passes when the log shows no legacy CUDA setup failing on an unreadable folder."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import LEGACY_SETUP_PERMISSION_ERROR as FIXED_FROM
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.LEGACY_SETUP_PERMISSION_ERROR,),
    title=f"bitsandbytes' legacy CUDA setup crashed on a folder it may not read (fixed in {FIXED_FROM.below_full})",
    explanation="bitsandbytes releases before "
    f"{FIXED_FROM.below_full} look for the CUDA runtime in every folder that any environment variable names "
    "(remove_non_existent_dirs in cuda_setup/main.py), and a folder the user may not read raises PermissionError "
    "there, which those releases do not catch: importing bitsandbytes fails although CUDA is fine. The folder is the "
    "one the PermissionError names.",
    fix=f"Upgrade bitsandbytes to {FIXED_FROM.below_full} or newer, whose setup skips unreadable folders; or, for "
    "this release, unset the environment variable whose value is that folder (or make it readable) before starting.",
    commands=(f'pip install -U "bitsandbytes>={FIXED_FROM.below_full}"', "env"),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no legacy CUDA setup failing on an unreadable folder",
    needs=("log",),
    covers=("legacy_cuda_setup_path_permission_error",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/157",
        "https://github.com/agiclass/fine-tuning-lab/issues/1",
    ),
)
def legacy_setup_permission_error(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the traceback frame `bitsandbytes/cuda_setup/main.py", line N, in remove_non_existent_dirs`,
    which stands just above `PermissionError: [Errno 13] Permission denied: '...'` when the legacy CUDA setup
    raised it.

    ## Why it matters

    Before {{ loader.LEGACY_SETUP_PERMISSION_ERROR.below_full }}, bitsandbytes' CUDA setup collects every folder that
    any environment variable names (not only `LD_LIBRARY_PATH`) and calls `Path.exists()` on each. A folder the user
    may not read raises `PermissionError`. The earlier releases let it through (they catch only an
    `OSError` for a name that is too long); the last series before the fix added `except PermissionError` *after* `except OSError`,
    which had already caught it, and re-raised it; {{ loader.LEGACY_SETUP_PERMISSION_ERROR.below_full }} catches it
    first (the releases' own `cuda_setup/main.py`). In bitsandbytes #157 the reporter reproduced it with any variable
    set to an unreadable system folder; in fine-tuning-lab #1, as a non-root user, upgrading bitsandbytes fixed it.

    ## How to fix

    ```bash
    pip install -U "bitsandbytes>={{ loader.LEGACY_SETUP_PERMISSION_ERROR.below_full }}"
    ```

    or unset the variable that names the folder in the `PermissionError` (find it with `env`), or make the folder
    readable.
    """
    return FINDING.hit(facts)
