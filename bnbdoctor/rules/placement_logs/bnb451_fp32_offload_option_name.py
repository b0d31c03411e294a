"""BNB451 fp32-offload-option-name: passes when the log shows no use of the old option name load_in_8bit_fp32_cpu_offload."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement_logs._shared import QUANTIZATION_DOCS, VERSIONS_CHECK


@rule(
    Severity.ERROR,
    "The log shows no use of the old option name load_in_8bit_fp32_cpu_offload",
    needs=("log",),
    covers=("fp32_cpu_offload_kwarg_typeerror",),
    references=("https://github.com/huggingface/transformers/issues/26153", QUANTIZATION_DOCS),
    confirm=(VERSIONS_CHECK,),
)
def offload_option(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `TypeError: __init__() got an unexpected keyword argument 'load_in_8bit_fp32_cpu_offload'` (also
    when the argument's name wraps onto the next line), an error. When the log only shows a dispatch error whose text
    still names `load_in_8bit_fp32_cpu_offload`, it reports an info finding so the user does not follow that advice.

    ## Why it matters

    Older transformers ended their dispatch error with "you need to set `load_in_8bit_fp32_cpu_offload=True`", but
    `BitsAndBytesConfig` has no such field: the option is `llm_int8_enable_fp32_cpu_offload`. Following the message
    raises the `TypeError`. The flag alone is not enough either: it must come with a custom `device_map` that names the
    modules to keep on the CPU, and those modules then run in 32-bit on the CPU, slowly.

    ## How to fix

    ```python
    quantization_config = BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True)
    device_map = {"transformer.word_embeddings": 0, "transformer.h": 0, "lm_head": "cpu"}  # your model's module names
    model = AutoModelForCausalLM.from_pretrained(name, quantization_config=quantization_config, device_map=device_map)
    ```

    If the model should fit on the GPU, see [BNB450](BNB450.md) first: offloading is slow.
    """
    error = log.seen(facts, S.FP32_OFFLOAD_KWARG_TYPEERROR)
    if not error and not log.seen(facts, S.DISPATCH_MESSAGE_OLD_OPTION):
        return None
    fix = Remediation(
        "Use BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=True) and pass a device_map dict "
        "that names the modules to keep on 'cpu' (for example {'transformer.h': 0, 'lm_head': 'cpu'}); offloaded "
        "modules stay in 32-bit on the CPU and run slowly."
    )
    if error:
        return Hit(
            title="BitsAndBytesConfig has no load_in_8bit_fp32_cpu_offload: the option is llm_int8_enable_fp32_cpu_offload",
            explanation="Older transformers told users to set `load_in_8bit_fp32_cpu_offload=True` in their dispatch "
            "error, but the BitsAndBytesConfig field has always been `llm_int8_enable_fp32_cpu_offload`, so following "
            'the message raises "unexpected keyword argument". It also needs a custom device_map.',
            evidence=log.line_evidence(facts, S.FP32_OFFLOAD_KWARG_TYPEERROR),
            remediation=fix,
        )
    return Hit(
        title="The error message names an option that does not exist (load_in_8bit_fp32_cpu_offload)",
        explanation="This transformers' dispatch error suggests `load_in_8bit_fp32_cpu_offload=True`; passing it fails "
        "with an unexpected-keyword TypeError. The BitsAndBytesConfig field is `llm_int8_enable_fp32_cpu_offload`.",
        evidence=log.line_evidence(facts, S.DISPATCH_MESSAGE_OLD_OPTION, limit=1),
        remediation=fix,
        severity=Severity.INFO,
    )
