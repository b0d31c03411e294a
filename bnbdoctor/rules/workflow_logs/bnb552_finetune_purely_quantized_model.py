"""BNB552 finetune-purely-quantized-model: passes when the log shows no Trainer refusing a quantized model without adapters."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.ERROR,
    "The log shows no Trainer refusing a quantized model without adapters",
    needs=("log",),
    covers=("finetune_purely_quantized_model",),
    references=(
        "https://github.com/AGI-Edgerunners/LLM-Adapters/issues/57",
        "https://github.com/BAAI-DCAI/Bunny/issues/112",
    ),
    confirm=('python -c "import transformers, peft; print(transformers.__version__, peft.__version__)"',),
)
def finetune_purely_quantized_model(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `ValueError: You cannot perform fine-tuning on purely quantized models. Please
    attach trainable adapters on top of the quantized model to correctly perform fine-tuning.`

    ## Why it matters

    4-bit and 8-bit weights cannot be trained, so the Trainer refuses a quantized model with no trainable adapter.
    That happens when `get_peft_model` was not applied, when the model handed to the Trainer is the base model
    rather than the PEFT model, or when `merge_and_unload()` removed the adapters before training (what fixed it in
    the Bunny thread).

    ## How to fix

    Attach adapters and pass that model to the Trainer:

    ```python
    model = prepare_model_for_kbit_training(model)
    model = get_peft_model(model, LoraConfig(r=16, target_modules="all-linear", task_type="CAUSAL_LM"))
    ```

    Do not call `merge_and_unload()` before training.
    """
    if not log.seen(facts, S.FINETUNE_PURELY_QUANTIZED):
        return None
    return Hit(
        title="The Trainer got a quantized model without trainable adapters",
        explanation=(
            "Quantized (4-bit/8-bit) weights cannot be trained, so transformers refuses a quantized model that has "
            "no adapter: get_peft_model was not applied, the base model rather than the PEFT model was passed, or "
            "merge_and_unload() removed the adapters before training."
        ),
        evidence=log.line_evidence(facts, S.FINETUNE_PURELY_QUANTIZED, limit=2),
        remediation=Remediation(
            "Wrap the model with peft's get_peft_model (after prepare_model_for_kbit_training) and pass that model to "
            "the Trainer; do not merge the adapters before training."
        ),
    )
