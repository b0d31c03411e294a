"""BNB405 large-unquantized-tensors: passes when tensors bitsandbytes leaves unquantized are a small part of the model."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.placement._shared import _PR_47211, _fit, _quant_name
from bnbdoctor.units import human

_BNB_1849 = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1849"


@rule(
    Severity.WARNING,
    "Tensors bitsandbytes leaves unquantized are a small part of the model",
    needs=("fit",),
    covers=("accelerate_4bit_device_map_imbalance",),
    references=(_BNB_1849, _PR_47211),
)
def check_unquantized(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `fit` facts and reports one finding when a quarter or more of the model, as transformers counts
    it, stays unquantized. It lists the largest such tensors by kind: embeddings, `lm_head`, fused MoE experts, modules
    in `llm_int8_skip_modules`, norms. The severity is **warning** when fused MoE experts are a quarter of the model or
    more, and **info** otherwise (embeddings and `lm_head` of a small model).

    ## Why it matters

    bitsandbytes replaces only modules whose type is exactly `nn.Linear`. transformers keeps embeddings, `lm_head` (and
    tied weights), `llm_int8_skip_modules` and `_keep_in_fp32_modules` in the model dtype. The fused 3-D expert tensors
    of transformers v5 MoE models (`Qwen3MoeExperts`, `DeepseekV3Experts`, ...) are not `nn.Linear`, so bitsandbytes
    does not quantize them at all (bitsandbytes #1849): a "4-bit" Qwen3-235B-A22B is 428.5 GiB, not 110 GiB as a uniform
    division suggests.

    These tensors are also single atoms for the device-map packer. A large bf16 embedding or `lm_head` decides which GPU
    is left (BNB402) and makes `device_map="auto"` imbalanced across GPUs.

    ## How to fix

    - Budget for these tensors in the model dtype when choosing GPUs.
    - For MoE models in transformers v5, use a checkpoint pre-quantized in a format that quantizes the experts, or GPUs
      sized for the bf16 experts.
    - Keep `llm_int8_skip_modules` short: every module listed stays in the model dtype.

    [bnbdoctor fit](../fit.md) explains how the placement is computed.
    """
    fit = _fit(facts)
    if not fit.model_bytes or fit.unquantized_bytes is None:
        raise Skip("no sizes")
    share = fit.unquantized_bytes / fit.model_bytes
    if share < 0.25:
        return None
    experts = fit.unquantized_by_kind.get("experts", 0)
    parts = sorted(fit.unquantized_by_kind.items(), key=lambda kv: -kv[1])
    floor = fit.unquantized_bytes * 0.01
    listing = ", ".join(f"{kind} {human(size)}" for kind, size in parts[:4] if size >= floor)
    explanation = (
        "bitsandbytes replaces only modules whose type is exactly nn.Linear. transformers keeps "
        "embeddings, lm_head (and tied weights), llm_int8_skip_modules and _keep_in_fp32_modules in the "
        f"model dtype{', and' if experts else ''}"
        + (
            " the fused 3-D expert tensors of transformers v5 MoE models are not nn.Linear, so they are "
            "not quantized at all (bitsandbytes #1849)."
            if experts
            else "."
        )
        + " These tensors are single large atoms: a balanced device_map cannot split them, and they "
        "decide which GPU is left."
    )
    severity = Severity.WARNING if experts and experts / fit.model_bytes >= 0.25 else Severity.INFO
    evidence = [
        Evidence(
            "unquantized",
            f"{human(fit.unquantized_bytes)} of {human(fit.model_bytes)} ({share:.0%})",
            "fit.unquantized_bytes",
        )
    ]
    for tensor in [t for t in fit.largest_unquantized if t.bytes >= floor][:4]:
        evidence.append(
            Evidence(
                tensor.kind,
                f"{tensor.name} {tuple(tensor.shape)} {tensor.dtype} {human(tensor.bytes)}",
                "fit.largest_unquantized",
            )
        )
    fix = (
        "Budget for these tensors in the model dtype. For MoE models in transformers v5, bitsandbytes does not "
        "shrink the experts: use a checkpoint pre-quantized in a format that quantizes experts, or GPUs sized for "
        "the bf16 experts."
        if experts
        else "Budget for these tensors in the model dtype; llm_int8_skip_modules only adds to them."
    )
    return Hit(
        title=f"{share:.0%} of the {_quant_name(fit)} model stays unquantized: {listing}",
        explanation=explanation,
        evidence=evidence,
        remediation=Remediation(fix),
        severity=severity,
        # Informational for a dense model: the tensors are noted, no imbalance is diagnosed.
        covers=None if severity == Severity.WARNING else [],
    )
