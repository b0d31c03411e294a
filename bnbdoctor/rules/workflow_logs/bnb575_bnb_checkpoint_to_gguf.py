"""BNB575 bnb-checkpoint-to-gguf: passes when the log shows no bitsandbytes checkpoint given to a GGUF converter."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.BNB_CHECKPOINT_TO_GGUF,),
    title="A bitsandbytes-quantized checkpoint cannot be converted to GGUF: convert the unquantized model",
    explanation="The checkpoint holds bitsandbytes' packed 4-bit weights (uint8, 'U8') and their quantization "
    "state (absmax, quant_map, ...), which only bitsandbytes can read; GGUF converters (llama.cpp's "
    "convert_hf_to_gguf.py, Ollama's importer) take 16-bit or 32-bit weights and quantize them their own way.",
    fix="Convert the original (unquantized) model, or a merged 16-bit copy of a fine-tuned one (merge the adapter "
    "into the 16-bit base), and pick a GGUF quantization (Q4_K_M, ...) in the converter; a *-bnb-4bit checkpoint is "
    "for transformers and vLLM, not for llama.cpp or Ollama.",
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes checkpoint given to a GGUF converter",
    needs=("log",),
    covers=("bnb_checkpoint_gguf_conversion_unsupported",),
    references=(
        "https://github.com/ollama/ollama/issues/6357",
        "https://github.com/ggml-org/llama.cpp/issues/10965",
    ),
)
def bnb_checkpoint_to_gguf(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on llama.cpp's `ValueError: Can not map tensor 'model.layers.0.mlp.down_proj.weight.absmax'` (or
    another tensor of bitsandbytes' quantization state: `quant_map`, `nested_absmax`, `nested_quant_map`,
    `quant_state.bitsandbytes__nf4`, an 8-bit `SCB`) and on Ollama's `Error: unknown data type: U8` while it
    converts a model.

    ## Why it matters

    A checkpoint saved after a bitsandbytes 4-bit load (`*-bnb-4bit` on the Hub, a QLoRA model saved quantized)
    holds packed uint8 weights plus the tensors bitsandbytes needs to dequantize them. GGUF converters read 16-bit
    or 32-bit weights and quantize them their own way; they have no mapping for bitsandbytes' tensors. The Ollama
    maintainers' answer in ollama #6357 is to import unquantized weights; in llama.cpp #10965, to convert from the
    unquantized model.

    ## How to fix

    Convert the original model, or for a fine-tune a 16-bit merge (the adapter merged into the 16-bit base, not into
    the 4-bit one), and choose the GGUF quantization in the converter (`ollama create -q Q4_K_M`,
    `llama-quantize`).
    """
    return FINDING.hit(facts)
