"""Log rules for what transformers, accelerate and FSDP refuse to do with a 4-bit/8-bit model, two
harmless messages, and the error no family names (BNB534-BNB549, issue 12).

These rules read ``facts.log`` (``needs=("log",)``) and run under ``bnbdoctor explain``; a machine
has none of these facts (they happen in the user's script). The message families are in
``logs/collectors/kbit.py``; the release boundaries in ``knowledge/kbit.py``. BNB549 reports an
exception line that no family names, so that an unknown error is never "no known failure".

BNB541-BNB548, BNB552, BNB555, BNB556-BNB562 and BNB566-BNB571 are families found in real threads (issue 24,
``tests/data/corpus``): a 4-bit weight without its quantization state, the load_in_kbit keyword next to a
quantization_config, saving a 4-bit model with a transformers that cannot, vLLM refusing to shard a
bitsandbytes model, the Trainer's 8-bit gate, quantized weights quantized again, made trainable or
multiplied as floats, a quantized model trained without adapters, a peft that does not match the quantized
layers it wraps, two crashes of the legacy CUDA setup in its own messages (a NULL error string decoded, 0.38.0's
CUDA_RUNTIME_LIB), ROCm's HIP version taken for CUDA's and its missing 4-bit blocksize 64, a paged optimizer
without managed memory, a 4-bit weight that is no longer a Params4bit, transformers' multi-backend check altering
a frozenset, vLLM's bitsandbytes quantization without its load format and a model class its release cannot load
with bitsandbytes, a transformers older than BitsAndBytesConfig, saving an 8-bit model whose state dict holds its
weight_format string, the ComfyUI NF4 node's parameter without its module, and a weight left on the meta device
when accelerate places the model.
"""
