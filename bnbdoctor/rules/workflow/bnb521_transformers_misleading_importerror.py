"""BNB521 transformers-misleading-importerror: passes when the log shows no transformers 'requires Accelerate and the latest bitsandbytes' ImportError."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BNB_CHECK_NEEDS_GPU_SINCE
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, _severity_as_consequence


# --------------------------------------------------------------------------------- workflows
@rule(
    Severity.ERROR,
    "The log shows no transformers 'requires Accelerate and the latest bitsandbytes' ImportError",
    needs=("log",),
    covers=("transformers_importerror_requires_accelerate_bnb",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1306",
        "https://github.com/huggingface/transformers/pull/30533",
    ),
    confirm=(TORCH_CHECK, "pip show transformers accelerate bitsandbytes", PYTHON_M_BNB),
)
def transformers_importerror(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `ImportError: Using bitsandbytes 8-bit quantization requires Accelerate: pip install
    accelerate and the latest version of bitsandbytes` and `… requires the latest version of bitsandbytes` (before
    {{ transformers.QUANTIZERS.first_text }}: `Using load_in_8bit=True requires Accelerate: …`). It is info when the log shows an earlier bitsandbytes
    failure that explains it.

    ## Why it matters

    The message comes from transformers, not bitsandbytes: `is_bitsandbytes_available()` returned False. Since
    transformers {{ transformers.BNB_CHECK_NEEDS_GPU_SINCE }} that check also requires `torch.cuda.is_available()`, so a CPU-only torch, a runtime without a GPU
    (a Colab CPU runtime, a Mac), a bitsandbytes that fails to import, or packages installed into a running kernel all
    produce this misleading text even with both packages installed.

    ## How to fix

    - Check `torch.cuda.is_available()` first: install a CUDA build of torch or pick a GPU runtime (Colab: Runtime ›
      Change runtime type › GPU).
    - Restart the kernel after installing packages.
    - Upgrade transformers, accelerate and bitsandbytes; `python -m bitsandbytes` shows bitsandbytes' own error, if any.

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    pip install -U transformers accelerate bitsandbytes
    ```
    """
    if not log.seen(facts, S.TRANSFORMERS_BNB_IMPORTERROR):
        return None
    severity, because = _severity_as_consequence(facts)
    notebook = log.seen(facts, S.NOTEBOOK)
    return Hit(
        title="transformers says bitsandbytes or Accelerate is missing, but its check also needs a CUDA GPU",
        explanation="The message comes from transformers, not bitsandbytes: is_bitsandbytes_available() returned "
        f"False. Since transformers {BNB_CHECK_NEEDS_GPU_SINCE} that check also requires torch.cuda.is_available(), "
        "so a CPU-only torch, a "
        "runtime without a GPU, a bitsandbytes that fails to import, or packages installed into a running kernel "
        "all produce this text." + because,
        evidence=log.line_evidence(facts, S.TRANSFORMERS_BNB_IMPORTERROR, limit=1),
        remediation=Remediation(
            "Check torch.cuda.is_available() first: install a CUDA build of torch or pick a GPU runtime"
            + (" (Colab: Runtime > Change runtime type > GPU)" if notebook else "")
            + "; restart the kernel after installing packages; upgrade transformers, accelerate and bitsandbytes; "
            "`python -m bitsandbytes` shows bitsandbytes' own error, if any.",
            [TORCH_CHECK, "pip install -U transformers accelerate bitsandbytes", PYTHON_M_BNB],
        ),
        severity=severity,
    )
