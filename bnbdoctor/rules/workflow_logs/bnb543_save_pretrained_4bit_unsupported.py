"""BNB543 save-pretrained-4bit-unsupported: passes when the log shows no transformers refusing to save a 4-bit model."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import BNB_4BIT_SERIALIZATION, TRANSFORMERS_4BIT_SERIALIZATION
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

#: Both packages at the releases that save 4-bit weights.
UPGRADE = (
    f'pip install -U "transformers{TRANSFORMERS_4BIT_SERIALIZATION.pip_spec()}" '
    f'"bitsandbytes{BNB_4BIT_SERIALIZATION.pip_spec()}"'
)

FINDING = log.LogFinding(
    (S.SAVE_4BIT_UNSUPPORTED,),
    title="{of} cannot save a 4-bit model (4-bit serialization needs transformers {first})",
    explanation="4-bit bitsandbytes weights became serializable in transformers {first} with bitsandbytes {bnb_first} "
    "or newer; older releases refuse save_pretrained and push_to_hub on a 4-bit model. After QLoRA training the "
    "adapter is what to save.",
    fix="Save the trained adapter (peft_model.save_pretrained) instead of the 4-bit base model, or upgrade "
    "transformers to {first}+ and bitsandbytes to {bnb_first}+ to save 4-bit weights.",
    commands=(UPGRADE,),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no transformers refusing to save a 4-bit model",
    needs=("log",),
    covers=("save_pretrained_4bit_unsupported",),
    references=(
        "https://github.com/OpenRLHF/OpenRLHF/issues/189",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1007",
        "https://github.com/huggingface/transformers/pull/26037",
    ),
    confirm=(VERSIONS_CHECK,),
)
def save_pretrained_4bit_unsupported(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `NotImplementedError: You are calling save_pretrained on a 4-bit converted model.
    This is currently not supported`, raised by `save_pretrained` and `push_to_hub`.

    The versions are also machine facts: transformers older than
    {{ features.TRANSFORMERS_4BIT_SERIALIZATION.first_text }}, or bitsandbytes older than
    {{ features.BNB_4BIT_SERIALIZATION.first_text }}, cannot save 4-bit weights.

    ## Why it matters

    4-bit weights became serializable in transformers {{ features.TRANSFORMERS_4BIT_SERIALIZATION.first_text }}
    (PR #26037), with bitsandbytes {{ features.BNB_4BIT_SERIALIZATION.first_text }} or newer; older releases raise
    this error. QLoRA scripts meet it when they save the whole quantized base model rather than the adapter they
    trained.

    ## How to fix

    Save the adapter (`peft_model.save_pretrained(dir)` on the PEFT model), which is what QLoRA training produces;
    or upgrade both packages to save 4-bit weights:

    ```bash
    pip install -U "transformers>={{ features.TRANSFORMERS_4BIT_SERIALIZATION.first_text }}" "bitsandbytes>={{ features.BNB_4BIT_SERIALIZATION.first_text }}"
    ```

    To publish a merged model, reload the base model in 16-bit, merge the adapter and save that.
    """
    version = log.version(facts, "transformers")
    return FINDING.hit(
        facts,
        of=f"transformers {version}" if version else "This transformers",
        first=TRANSFORMERS_4BIT_SERIALIZATION.first_text,
        bnb_first=BNB_4BIT_SERIALIZATION.first_text,
    )
