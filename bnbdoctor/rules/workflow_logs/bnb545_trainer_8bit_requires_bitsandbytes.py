"""BNB545 trainer-8bit-requires-bitsandbytes: passes when the log shows no Trainer refusing an 8-bit model for want of a usable bitsandbytes."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import BNB_8BIT_TRAINING
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

IMPORT_BNB = 'python -c "import bitsandbytes"'


@rule(
    Severity.ERROR,
    "The log shows no Trainer refusing an 8-bit model for want of a usable bitsandbytes",
    needs=("log",),
    covers=("trainer_8bit_requires_bnb",),
    references=(
        "https://github.com/hiyouga/LlamaFactory/issues/2073",
        "https://github.com/shibing624/MedicalGPT/issues/232",
    ),
    confirm=(IMPORT_BNB, VERSIONS_CHECK),
)
def trainer_8bit_requires_bitsandbytes(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' Trainer gate `ValueError: The model you want to train is loaded in 8-bit
    precision. if you want to fine-tune an 8-bit model, please make sure that you have installed
    bitsandbytes>=X`.

    The installed bitsandbytes and whether it imports are machine facts: `bnbdoctor` on the training machine
    checks both.

    ## Why it matters

    The Trainer refuses a model whose `is_loaded_in_8bit` flag is set unless transformers finds a bitsandbytes of at
    least {{ features.BNB_8BIT_TRAINING.first_text }} that it can use. The message says "install", but it fires with
    bitsandbytes installed when transformers cannot import it (its native library fails to load, torch has no
    CUDA), when the release is older, or when a remote-code checkpoint with its own quantization (a "-4bits" model)
    sets the flag on a model the Trainer cannot train.

    ## How to fix

    Check the import in the training environment and fix what it reports; then install a recent bitsandbytes there:

    ```bash
    python -c "import bitsandbytes"
    python -m bitsandbytes
    ```

    For a pre-quantized remote-code model, load the full-precision model with a `BitsAndBytesConfig` and train
    adapters on it with peft.
    """
    if not log.seen(facts, S.TRAINER_8BIT_NEEDS_BNB):
        return None
    cause = log.consequence_of(facts)
    why = f" The log shows why it is not usable here: {cause}." if cause else ""
    return Hit(
        title="transformers' Trainer finds no usable bitsandbytes for training this 8-bit model",
        explanation=(
            "The Trainer refuses an 8-bit model unless transformers can import a bitsandbytes of at least "
            f"{BNB_8BIT_TRAINING.first_text}. With bitsandbytes installed this means the import fails (its native "
            "library, a torch without CUDA), the release is older, or a remote-code quantized checkpoint set the "
            "8-bit flag." + why
        ),
        evidence=log.line_evidence(facts, S.TRAINER_8BIT_NEEDS_BNB, limit=2),
        remediation=Remediation(
            "Run the import in the training environment and fix the error it prints; install a recent bitsandbytes "
            "there; for a pre-quantized remote-code model, quantize the full-precision model with a "
            "BitsAndBytesConfig instead.",
            [IMPORT_BNB, f'pip install -U "bitsandbytes{BNB_8BIT_TRAINING.pip_spec()}"'],
        ),
    )
