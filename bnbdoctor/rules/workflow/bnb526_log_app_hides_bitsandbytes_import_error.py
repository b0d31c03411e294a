"""BNB526 log-app-hides-bitsandbytes-import-error: passes when the log shows no application replacing bitsandbytes' import error with its own."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB

#: The import the application hid, run by hand: its traceback is the real error.
IMPORT_BNB = 'python -c "import bitsandbytes"'

FINDING = log.LogFinding(
    (S.APP_NO_BITSANDBYTES,),
    title="The trainer hid why bitsandbytes failed to import ('No bitsandbytes')",
    explanation="The application catches the ImportError of `import bitsandbytes` and raises its own 'No bitsandbytes' "
    "message, which reads as 'not installed' whatever happened: bitsandbytes missing from the venv that runs, or "
    "installed and failing at import (its native library, a dependency, the platform).{why}",
    fix="Run the import with the trainer's own Python to see the real error and fix that one; if bitsandbytes is "
    "missing there, install it into that venv.",
    commands=(IMPORT_BNB, PYTHON_M_BNB),
    limit=2,
)


#: transformers' check of a model's remote code (trust_remote_code) says "not found" for an import that failed.
REMOTE_CODE = log.LogFinding(
    (S.REMOTE_CODE_BNB_NOT_FOUND,),
    title="transformers says bitsandbytes is not found for the model's own code: its import may have failed instead",
    explanation="Before running a model's remote code (trust_remote_code), transformers imports each package that "
    "code imports and lists the ones that fail as 'not found in your environment'. A bitsandbytes whose import "
    "fails on a missing dependency (older releases need scipy: 'No module named scipy') is listed too, so the "
    "message reads as 'not installed' when bitsandbytes is there.{why}",
    fix="Run the import with the same Python to see its real error: if it names a missing dependency (scipy), install "
    "that; if bitsandbytes itself is missing, install it into that environment.",
    commands=(IMPORT_BNB, PYTHON_M_BNB),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no application replacing bitsandbytes' import error with its own",
    needs=("log",),
    covers=("app_hides_bnb_import_error",),
    references=(
        "https://github.com/bmaltais/kohya_ss/issues/1683",
        "https://github.com/bmaltais/kohya_ss/issues/1999",
        "https://github.com/hollowstrawberry/kohya-colab/issues/297",
        "https://github.com/baichuan-inc/Baichuan2/issues/196",
    ),
    confirm=(IMPORT_BNB, PYTHON_M_BNB),
)
def app_hides_bitsandbytes_import_error(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `ImportError: No bitsandbytes / bitsandbytesがインストールされていないようです`, which kohya_ss'
    `train_util.get_optimizer` (and the trainers built on sd-scripts) raises when `import bitsandbytes` fails for an
    8-bit optimizer, and on transformers' `ImportError: This modeling file requires the following packages that were
    not found in your environment: bitsandbytes`, which its check of a model's remote code raises when `import
    bitsandbytes` fails, also on a missing dependency (Baichuan2 #196: installing scipy fixed it).

    When the log also shows why bitsandbytes did not import (its native library, a missing module), the finding
    for that cause comes first; this one says that the application's message is not the cause.

    ## Why it matters

    The trainer catches the `ImportError` of `import bitsandbytes` and raises its own message, which says
    "not installed" whatever happened: bitsandbytes missing from the venv that runs, or installed and failing at
    import (its native library not loading, a dependency missing, a release that does not support the platform).
    Reinstalling blindly fixes only the first case.

    ## How to fix

    Run the import with the trainer's own Python (the venv kohya_ss runs in) to see the real error, then fix that:

    ```bash
    python -c "import bitsandbytes"
    python -m bitsandbytes
    ```

    If it says `No module named 'bitsandbytes'`, install it into that venv (`python -m pip install -U bitsandbytes`
    with that Python); otherwise follow the error it prints. An optimizer that does not need bitsandbytes (AdamW)
    avoids it altogether.
    """
    cause = log.consequence_of(facts)
    why = (
        f" Here the log also shows the cause: {cause}."
        if cause
        else " The log does not show the import's own error; running the import by hand does."
    )
    return FINDING.hit(facts, why=why) or REMOTE_CODE.hit(facts, why=why)
