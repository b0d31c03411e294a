"""Sizes of a built model as transformers counts them, the quantization state it does not count, and an inventory.

Module sizes come from transformers' own ``compute_module_sizes`` (cached on the model); the
inventory sorts every parameter and buffer into quantized and unquantized, the latter by kind
(embedding, lm_head, experts, skipped, norm, other).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ...fit_protocol import LARGEST_TENSORS, QUANT_STATE_4BIT, QUANT_STATE_4BIT_DOUBLE

if TYPE_CHECKING:
    from .common import Built, Json
    from .replica import Engine


def module_sizes(engine: Engine, built: Built) -> dict[str, int]:
    """{module or parameter name: bytes}, as ``compute_module_sizes`` counts them ("" is the whole model)."""
    model, hf_quantizer, _ = built
    cache: dict[str, int] | None = getattr(model, "_bnbdoctor_sizes", None)
    if cache is None:
        cache = engine.tia.compute_module_sizes(model, hf_quantizer, only_modules=False)[0]
        model._bnbdoctor_sizes = cache
    return cache


def state_of(hf_quantizer: Any, module: Any, tensor: Any, linear8: Any) -> int:
    """Bytes of quantization state one quantized weight adds (NF4/FP4 absmax; int8 SCB per row)."""
    if isinstance(module, linear8):
        return 4 * int(tensor.shape[0])
    config = hf_quantizer.quantization_config
    per = QUANT_STATE_4BIT_DOUBLE if getattr(config, "bnb_4bit_use_double_quant", False) else QUANT_STATE_4BIT
    return int(tensor.numel() * per)


def quant_state_by_module(engine: Engine, built: Built) -> dict[str, int]:
    """{module or parameter name: quantization-state bytes under it}, like compute_module_sizes."""
    model, hf_quantizer, _ = built
    cache: dict[str, int] | None = getattr(model, "_bnbdoctor_state", None)
    if cache is not None:
        return cache
    cache = {}
    if hf_quantizer is not None:
        modules = dict(model.named_modules())
        linear8 = sys.modules["bitsandbytes"].nn.Linear8bitLt
        tied = set(getattr(model, "all_tied_weights_keys", {}) or {})
        for name, tensor in model.named_parameters():
            if name in tied or not hf_quantizer.param_needs_quantization(model, name):
                continue
            owner = modules.get(name.rsplit(".", 1)[0] if "." in name else "")
            size = state_of(hf_quantizer, owner, tensor, linear8)
            parts = name.split(".")
            for i in range(len(parts) + 1):
                key = ".".join(parts[:i])
                cache[key] = cache.get(key, 0) + size
    model._bnbdoctor_state = cache
    return cache


def inventory(engine: Engine, built: Built) -> Json:
    """Totals and the largest tensors transformers keeps in the model dtype."""
    model, hf_quantizer, dtype = built
    torch = engine.torch
    tied = set(getattr(model, "all_tied_weights_keys", {}) or {})
    try:
        out_emb = model.get_output_embeddings()
    except Exception:  # noqa: BLE001
        out_emb = None
    modules = dict(model.named_modules())
    skip = set(getattr(hf_quantizer, "modules_to_not_convert", None) or [])
    quantized = unquantized = 0
    tensors: list[Json] = []
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        if name in tied:
            continue
        element = hf_quantizer.param_element_size(model, name, tensor) if hf_quantizer else tensor.element_size()
        size = int(tensor.numel() * element)
        owner_name = name.rsplit(".", 1)[0] if "." in name else ""
        owner = modules.get(owner_name)
        if hf_quantizer is not None and hf_quantizer.param_needs_quantization(model, name):
            quantized += size
            continue
        unquantized += size
        kind = "other"
        if owner is not None and out_emb is not None and owner is out_emb:
            kind = "lm_head"
        elif isinstance(owner, torch.nn.Embedding):
            kind = "embedding"
        elif tensor.dim() >= 3 or type(owner).__name__.lower().endswith("experts"):
            kind = "experts"
        elif any(
            owner_name == s or owner_name.startswith(s + ".") or owner_name.endswith("." + s) for s in skip
        ) and isinstance(owner, torch.nn.Linear):
            kind = "skipped"
        elif "norm" in type(owner).__name__.lower():
            kind = "norm"
        tensors.append(
            {
                "name": name,
                "kind": kind,
                "shape": [int(s) for s in tensor.shape],
                "dtype": str(tensor.dtype).replace("torch.", ""),
                "bytes": size,
                "module_class": type(owner).__name__ if owner is not None else "",
            }
        )
    tensors.sort(key=lambda t: -t["bytes"])
    state = quant_state_by_module(engine, built).get("", 0)
    by_kind: dict[str, int] = {}
    for t in tensors:
        by_kind[t["kind"]] = by_kind.get(t["kind"], 0) + t["bytes"]
    return {
        "model_bytes": int(module_sizes(engine, built).get("", quantized + unquantized)),
        "quantized_bytes": int(quantized),
        "unquantized_bytes": int(unquantized),
        "unquantized_by_kind": by_kind,
        "quant_state_bytes": int(state),
        "largest_unquantized": tensors[:LARGEST_TENSORS],
        "dtype": str(dtype).replace("torch.", ""),
        "no_split_modules": list(getattr(model, "_no_split_modules", None) or []),
        "modules_to_not_convert": sorted(skip),
        "keep_in_fp32_modules": list(getattr(model, "_keep_in_fp32_modules", None) or []),
    }


def balance_inputs(engine: Engine, built: Built) -> Json:
    """The two sizes get_balanced_memory's buffer comes from (largest no-split block, largest leaf)."""
    model, hf_quantizer, _ = built
    sizes, leaves = engine.tia.compute_module_sizes(model, hf_quantizer)
    no_split = set(getattr(model, "_no_split_modules", None) or [])
    biggest_block, block_name = 0, None
    for name, module in model.named_modules():
        if module.__class__.__name__ in no_split and sizes.get(name, 0) > biggest_block:
            biggest_block, block_name = sizes[name], name
    leaf_name = max(leaves, key=lambda k: leaves[k]) if leaves else None
    return {
        "biggest_no_split_bytes": int(biggest_block),
        "biggest_no_split": block_name,
        "biggest_leaf_bytes": int(leaves[leaf_name]) if leaf_name else 0,
        "biggest_leaf": leaf_name,
    }
