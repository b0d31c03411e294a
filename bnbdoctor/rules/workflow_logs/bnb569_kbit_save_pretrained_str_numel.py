"""BNB569 kbit-save-pretrained-str-numel: passes when the log shows no save of a model failing on a string in its state dict."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

FINDING = log.LogFinding(
    (S.STATE_DICT_STR_NUMEL,),
    title="Saving the 8-bit model failed on the weight_format string in its state dict",
    explanation="An 8-bit layer (Linear8bitLt) of an older bitsandbytes saves its weight layout ('row', 'col_turing', "
    "'col_ampere') as a string next to its weights; transformers' save_pretrained (and the Trainer's checkpoint) sizes "
    "every state-dict value with .numel(), which a string does not have.",
    fix="Upgrade transformers and bitsandbytes together, then save again; for training checkpoints, save the "
    "adapters rather than the 8-bit base model.",
    commands=("pip install -U transformers bitsandbytes", VERSIONS_CHECK),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no save of a model failing on a string in its state dict",
    needs=("log",),
    covers=("kbit_save_pretrained_str_numel",),
    references=(
        "https://github.com/huggingface/transformers/issues/24851",
        "https://github.com/FreedomIntelligence/GrammarGPT/issues/10",
        "https://github.com/sjunhongshen/Tag-LLM/issues/2",
    ),
    confirm=(VERSIONS_CHECK,),
)
def kbit_save_pretrained_str_numel(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: 'str' object has no attribute 'numel'`, raised by transformers'
    `shard_checkpoint` (`weight_size = weight.numel() * dtype_byte_size(weight.dtype)`) when `save_pretrained` or the
    Trainer's checkpoint save meets a state-dict value that is not a tensor. The log rarely shows the model was
    loaded in 8-bit; the threads all were.

    ## Why it matters

    bitsandbytes' 8-bit layer (`Linear8bitLt`) stores, next to its int8 weight, the layout that weight is kept in:
    `...weight_format` with the value `'row'`, `'col_turing'` or `'col_ampere'`, a string in older releases. The
    checkpoint sharding of the transformers of the threads sizes every value as a tensor, so saving an 8-bit model
    fails there (GrammarGPT#10 printed the state dict and found `('...dense.weight_format', 'col_turing')`;
    Tag-LLM#2 found the `col_ampere` entry). Later releases of both handle the entry (bitsandbytes saves it as a
    tensor).

    ## How to fix

    Upgrade transformers and bitsandbytes together, as the transformers thread advised, then save again:

    ```bash
    pip install -U transformers bitsandbytes
    ```

    When the save is a Trainer checkpoint of a LoRA run, save the adapters (peft's `save_pretrained` on the peft
    model) rather than the 8-bit base model.
    """
    return FINDING.hit(facts)
