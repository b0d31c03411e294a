"""What a merge-check document says in words, whatever its format: the verdict, the ways of merging, the script.

:func:`verdict` turns the overall figures into one sentence; :func:`workflow_script` is the merge that
keeps the update (16-bit base, then quantize once at load), with the user's own paths. Text, JSON and
Markdown (:mod:`.merge_check`, :mod:`.merge_check_markdown`) all say these same words.
"""

from __future__ import annotations

from bnbdoctor.merge_check_result import LOW_KEPT, MergeCheck, WayResult

#: What each way of merging (:data:`~bnbdoctor.merge_check_result.WAYS`) is.
WAY_TITLES = {
    "4bit": "(a) into the 4-bit model (merge_and_unload on a QLoRA model): Q(deq(Q(W)) + ΔW)",
    "16bit": "(b) into the 16-bit base, kept 16-bit: W + ΔW",
    "dequantized": "(c) into the dequantized 4-bit base, kept 16-bit: deq(Q(W)) + ΔW",
    "16bit_then_quantize": "(d) into the 16-bit base, then quantized once: Q(W + ΔW)",
}
#: The prefixes peft puts before a module path (``base_model.model.model.layers.0...``), left out where shown.
PEFT_PREFIXES = ("base_model.model.", "base_model.")


def short_module(module: str) -> str:
    """A module path as the model names it: ``model.layers.1.self_attn.q_proj``, without peft's prefix."""
    for prefix in PEFT_PREFIXES:
        if module.startswith(prefix):
            return module[len(prefix) :]
    return module


def _percent(share: float | None) -> str:
    """A share in whole percent, but never rounded onto 0 % or 100 % (99.5 % kept is not "100 %")."""
    if share is None:
        return "?"
    value = share * 100
    return f"{value:.1f} %" if 0 < value < 1 or 99.5 <= value < 100 else f"{value:.0f} %"


def verdict(check: MergeCheck) -> str:
    """The result in one sentence."""
    if check.error:
        return f"merge-check could not measure the adapter: {check.error}"
    four = check.overall.get("4bit", WayResult()).kept
    once = check.overall.get("16bit_then_quantize", WayResult()).kept
    if four is None:
        return "no adapted layer could be measured"
    if four < LOW_KEPT:
        return (
            f"merging into 4-bit keeps {_percent(four)} of what you trained; merge into the 16-bit base, "
            f"then quantize once (keeps {_percent(once)})"
        )
    return (
        f"merging into 4-bit keeps {_percent(four)} of the update; merging into the 16-bit base keeps {_percent(once)}"
    )


def workflow_script(check: MergeCheck) -> str:
    """The merge that keeps the update: the adapter into the 16-bit base, saved, quantized once at load."""
    merged = check.adapter.rstrip("/\\") + "-merged"
    return "\n".join(
        [
            "import torch",
            "from peft import PeftModel",
            "from transformers import AutoModelForCausalLM, BitsAndBytesConfig",
            "",
            f"base = AutoModelForCausalLM.from_pretrained({check.base_ref!r}, dtype=torch.bfloat16)",
            f"model = PeftModel.from_pretrained(base, {check.adapter!r}).merge_and_unload()",
            f"model.save_pretrained({merged!r})",
            "",
            "# then quantize once, when loading for inference:",
            "config = BitsAndBytesConfig(",
            f"    load_in_4bit=True, bnb_4bit_quant_type={check.quant_type!r},",
            f"    bnb_4bit_use_double_quant={check.double_quant}, bnb_4bit_compute_dtype=torch.bfloat16,",
            ")",
            f"model = AutoModelForCausalLM.from_pretrained({merged!r}, quantization_config=config)",
        ]
    )
