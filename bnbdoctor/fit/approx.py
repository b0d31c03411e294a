"""The approximate fallback: a total-size check when the engine cannot run the user's transformers.

Used when torch or transformers is missing, or transformers is outside the range the engine
replicates. Tensor names, shapes and dtypes come from the ``*.safetensors`` headers (the first
8 + N bytes of each file, read through the host), or, without weights, from the config's sizes.
transformers' rules are approximated by name: 2-D ``*.weight`` tensors of linear layers count at
0.5 / 1 byte; embeddings, ``lm_head``, norms, biases and MoE experts (which transformers v5 fuses
and bitsandbytes does not quantize) stay in the model dtype. No device map is computed: the
verdict compares the total with the GPU budgets after from_pretrained's x0.9, so it is labelled
``likely_fits`` / ``likely_raises`` and never quoted as exact.

Configs and headers are untrusted input: a size that is not a whole number in the range a real model
has (:data:`MAX_DIM`, :data:`MAX_LAYERS`, :data:`MAX_EXPERTS`, :data:`MAX_RANK`) makes that source
unusable (None), never an exception, so the work per input stays bounded by these limits.
"""

from __future__ import annotations

from typing import Any

from bnbdoctor.facts import FitDevice, FitTensor
from bnbdoctor.fit_protocol import (
    DEVICE_MAP_SEQUENTIAL,
    LARGEST_TENSORS,
    QUANT_4BIT,
    QUANT_STATE_4BIT,
    QUANT_STATE_4BIT_DOUBLE,
    VERDICT_LIKELY_FITS,
    VERDICT_LIKELY_RAISES,
)
from bnbdoctor.hosts.base import Host
from bnbdoctor.modelfiles.checkpoint import safetensors_header

_ELEMENT = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
#: Largest width, vocabulary or tensor dimension believed (the largest published vocabularies are ~2**18).
MAX_DIM = 1 << 24
#: Most decoder layers believed (published models have at most a few hundred).
MAX_LAYERS = 1024
#: Most routed or shared experts believed (published MoE models have at most a few hundred).
MAX_EXPERTS = 4096
#: Most dimensions of one tensor in a safetensors header.
MAX_RANK = 8


def _whole(value: Any, limit: int) -> int | None:
    """``value`` as a count in ``0..limit``: an int, an integral float or a string of digits; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            return None
        value = int(text)
    if not isinstance(value, int) or not 0 <= value <= limit:
        return None
    return value


def _field(c: dict[str, Any], limit: int, *keys: str) -> int | None:
    """The first of ``keys`` that is set (not missing, null, 0 or empty) as a count; None if absent,
    -1 if set but not a count in ``0..limit``."""
    for key in keys:
        raw = c.get(key)
        if not raw:  # unset (null, 0, "", [], false): the caller's default, as ``c.get(key) or default``
            continue
        found = _whole(raw, limit)
        return -1 if found is None else found
    return None


def _kind(name: str, shape: list[int], tied: bool) -> tuple[str, bool]:
    """(kind, quantized) for a tensor name under transformers v5 + bnb rules, approximately."""
    low = name.lower()
    if "embed" in low or low.endswith(("wte.weight", "wpe.weight")):
        return "embedding", False
    if low.startswith("lm_head") or ".lm_head." in low or (low.endswith("output.weight") and not tied):
        return "lm_head", False
    if ".experts." in low or low.endswith(".experts") or len(shape) >= 3:
        return "experts", False
    if "norm" in low or len(shape) < 2 or not low.endswith(".weight"):
        return ("norm" if "norm" in low else "other"), False
    return "linear", True


def tensors_from_headers(host: Host, files: list[str]) -> list[tuple[str, list[int], str]] | None:
    tensors: list[tuple[str, list[int], str]] = []
    for path in files:
        header = safetensors_header(host, path)
        if header is None:
            return None
        for name, info in header.items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            raw = info.get("shape", [])
            if not isinstance(raw, list) or len(raw) > MAX_RANK:
                return None
            shape = [_whole(s, MAX_DIM) for s in raw]
            if None in shape:
                return None  # not a safetensors header (a dimension that is not a size)
            tensors.append((name, [s for s in shape if s is not None], str(info.get("dtype", ""))))
    return tensors


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(config.get(key), dict):
            merged = dict(config[key])
            merged.setdefault("torch_dtype", config.get("torch_dtype") or config.get("dtype"))
            return merged
    return config


def tensors_from_config(config: dict[str, Any]) -> list[tuple[str, list[int], str]] | None:
    """A decoder-only LM's tensors from its config (Llama/Mistral/Qwen/DeepSeek-style fields)."""
    c = _text_config(config)
    hidden = _whole(c.get("hidden_size"), MAX_DIM)
    layers = _whole(c.get("num_hidden_layers"), MAX_LAYERS)
    vocab = _whole(c.get("vocab_size"), MAX_DIM)
    if hidden is None or layers is None or vocab is None:
        return None
    heads = _field(c, MAX_DIM, "num_attention_heads") or max(1, hidden // 128)
    kv_heads = _field(c, MAX_DIM, "num_key_value_heads") or heads
    head_dim = _field(c, MAX_DIM, "head_dim") or (hidden // heads if heads > 0 else -1)
    inter = _field(c, MAX_DIM, "intermediate_size") or 4 * hidden
    experts = _field(c, MAX_EXPERTS, "num_experts", "n_routed_experts", "num_local_experts") or 0
    moe_inter = _field(c, MAX_DIM, "moe_intermediate_size") or inter
    shared = _field(c, MAX_EXPERTS, "n_shared_experts") or 0
    dense_first = _field(c, MAX_LAYERS, "first_k_dense_replace") or 0
    if min(heads, kv_heads, head_dim, inter, experts, moe_inter, shared, dense_first) < 0:
        return None  # a size that is not a whole number a real model has
    listed = c.get("mlp_only_layers")
    mlp_only = {_whole(i, MAX_LAYERS) for i in listed[:MAX_LAYERS]} if isinstance(listed, list) else set()
    dtype = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}.get(
        str(c.get("torch_dtype") or c.get("dtype")), "F32"
    )
    out: list[tuple[str, list[int], str]] = [("model.embed_tokens.weight", [vocab, hidden], dtype)]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", [heads * head_dim, hidden], dtype),
            (p + "self_attn.k_proj.weight", [kv_heads * head_dim, hidden], dtype),
            (p + "self_attn.v_proj.weight", [kv_heads * head_dim, hidden], dtype),
            (p + "self_attn.o_proj.weight", [hidden, heads * head_dim], dtype),
            (p + "input_layernorm.weight", [hidden], dtype),
            (p + "post_attention_layernorm.weight", [hidden], dtype),
        ]
        if experts and i >= dense_first and i not in mlp_only:
            out += [
                (p + "mlp.gate.weight", [experts, hidden], dtype),
                (p + "mlp.experts.gate_up_proj", [experts, 2 * moe_inter, hidden], dtype),
                (p + "mlp.experts.down_proj", [experts, hidden, moe_inter], dtype),
            ]
            if shared:
                out += [
                    (p + "mlp.shared_experts.gate_proj.weight", [shared * moe_inter, hidden], dtype),
                    (p + "mlp.shared_experts.up_proj.weight", [shared * moe_inter, hidden], dtype),
                    (p + "mlp.shared_experts.down_proj.weight", [hidden, shared * moe_inter], dtype),
                ]
        else:
            out += [
                (p + "mlp.gate_proj.weight", [inter, hidden], dtype),
                (p + "mlp.up_proj.weight", [inter, hidden], dtype),
                (p + "mlp.down_proj.weight", [hidden, inter], dtype),
            ]
    out.append(("model.norm.weight", [hidden], dtype))
    if not c.get("tie_word_embeddings", config.get("tie_word_embeddings", False)):
        out.append(("lm_head.weight", [vocab, hidden], dtype))
    return out


def estimate(
    host: Host, config: dict[str, Any], files: list[str], quant: str, dtype: str | None, double_quant: bool
) -> dict[str, Any] | None:
    """Sizes under bnb rules, approximately; None when neither the headers nor the config tell."""
    tensors = tensors_from_headers(host, files) if files else None
    source = "safetensors headers"
    if not tensors:
        tensors = tensors_from_config(config)
        source = "config.json"
    if not tensors:
        return None
    tied = bool(config.get("tie_word_embeddings"))
    per_weight = 0.5 if quant == QUANT_4BIT else 1.0
    override = _DTYPE_BYTES.get(dtype or "")
    quantized = unquantized = numel_quantized = 0
    rows: list[FitTensor] = []
    by_kind: dict[str, int] = {}
    for name, shape, st_dtype in tensors:
        numel = 1
        for s in shape:
            numel *= s
        element = override or _ELEMENT.get(st_dtype.upper(), 2)
        kind, is_quantized = _kind(name, shape, tied)
        if is_quantized:
            quantized += numel // 2 if per_weight == 0.5 else numel
            numel_quantized += numel
            continue
        size = numel * element
        unquantized += size
        by_kind[kind] = by_kind.get(kind, 0) + size
        rows.append(FitTensor(name=name, kind=kind, shape=shape, dtype=st_dtype.lower(), bytes=size))
    rows.sort(key=lambda t: -t.bytes)
    state = (
        int(numel_quantized * (QUANT_STATE_4BIT_DOUBLE if double_quant else QUANT_STATE_4BIT))
        if quant == QUANT_4BIT
        else 0
    )
    return {
        "source": source,
        "model_bytes": quantized + unquantized,
        "quantized_bytes": quantized,
        "unquantized_bytes": unquantized,
        "unquantized_by_kind": by_kind,
        "quant_state_bytes": state,
        "largest_unquantized": rows[:LARGEST_TENSORS],
        "largest_bytes": rows[0].bytes if rows else 0,
    }


def approximate_verdict(
    model_bytes: int, largest_bytes: int, budgets: dict[str, int], device_map: str, detected: bool
) -> tuple[str, list[FitDevice]]:
    """likely_fits / likely_raises from totals: the sum of GPU budgets after from_pretrained's x0.9
    (x0.81 for one detected GPU with a balanced map), less one largest layer kept free on GPU 0."""
    gpus = {k: v for k, v in budgets.items() if k.isdigit() and v > 0}
    devices: list[FitDevice] = []
    if not gpus:
        return VERDICT_LIKELY_RAISES, devices
    factor = 0.9 * (0.9 if detected and len(gpus) == 1 and device_map != DEVICE_MAP_SEQUENTIAL else 1.0)
    total = 0
    for key in sorted(gpus, key=int):
        budget = int(gpus[key] * factor)
        devices.append(FitDevice(device=key, given_bytes=gpus[key], budget_bytes=budget))
        total += budget
    need = model_bytes + (largest_bytes if len(gpus) > 1 else 0)
    return (VERDICT_LIKELY_FITS if need <= total else VERDICT_LIKELY_RAISES), devices
