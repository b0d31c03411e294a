"""The merge-check engine: runs in the patient interpreter, with the user's own torch and bitsandbytes.

bnbdoctor never imports this module: :mod:`bnbdoctor.merge_check.engine` reads its source and runs
it with ``python -c``, with one call of :func:`main` appended. It imports only the stdlib at module
level; torch, safetensors and bitsandbytes are imported inside :func:`main`.

For each adapted layer, one at a time (only that layer's tensors are read from the safetensors
files): ΔW = s·B·A (s = alpha/r, alpha/sqrt(r) with rslora; transposed for fan_in_fan_out; DoRA's magnitude
applied where present), then four ways of merging, each from its own base ``base_M``:

- ``4bit``: M = Q(deq(Q(W)) + ΔW), what ``merge_and_unload()`` does on a QLoRA model;
- ``16bit``: M = W + ΔW, in W's dtype;
- ``dequantized``: M = deq(Q(W)) + ΔW, kept 16-bit (the weights the adapter was trained against);
- ``16bit_then_quantize``: M = Q(W + ΔW).

Per way it sums ⟨M - base_M, ΔW⟩ and ‖ΔW‖² (so ``kept`` = their ratio, per layer and overall) and
counts the weights with M == base_M exactly. It answers with one ``MARKER`` line of JSON; per-layer
progress goes to stderr (a ``PROGRESS`` line as each layer starts), which bnbdoctor reads as it comes.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from typing import Any

MARKER = "@@BNBDOCTOR-MERGE@@"
#: Starts the stderr line written as each layer's measurement begins: ``merge-check: layer 3/16 MODULE``.
PROGRESS = "merge-check: layer "
WAYS = ("4bit", "16bit", "dequantized", "16bit_then_quantize")


def _answer(data: dict[str, Any]) -> None:
    sys.stdout.write(MARKER + json.dumps(data) + "\n")
    sys.stdout.flush()


def _peak_rss() -> int | None:
    try:
        import resource  # not on Windows
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _shards(folder: str) -> dict[str, str]:
    """Tensor name -> safetensors file, for a model folder (one file or an index)."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as handle:
            weight_map = json.load(handle)["weight_map"]
        return {name: os.path.join(folder, file) for name, file in weight_map.items()}
    from safetensors import safe_open

    found: dict[str, str] = {}
    for file in sorted(os.listdir(folder)):
        if file.endswith(".safetensors"):
            path = os.path.join(folder, file)
            with safe_open(path, framework="pt") as handle:
                for name in handle.keys():  # noqa: SIM118 - safe_open is not a dict
                    found[name] = path
    return found


def _layers(adapter_keys: list[str]) -> dict[str, dict[str, str]]:
    """Module path -> {"A": key, "B": key, "m": key?}, from the adapter's tensor names."""
    layers: dict[str, dict[str, str]] = {}
    for key in adapter_keys:
        for marker, role in ((".lora_A.", "A"), (".lora_B.", "B"), (".lora_magnitude_vector", "m")):
            if marker in key:
                module = key.split(marker)[0]
                layers.setdefault(module, {})[role] = key
    return {m: roles for m, roles in sorted(layers.items()) if "A" in roles and "B" in roles}


def _base_name(module: str, base_keys: dict[str, str]) -> str | None:
    """The base weight a PEFT module path adapts (``base_model.model.`` prefix, or not)."""
    candidates = [module]
    for prefix in ("base_model.model.", "base_model."):
        if module.startswith(prefix):
            candidates.append(module[len(prefix) :])
    for candidate in candidates:
        for name in (candidate + ".weight", candidate + ".base_layer.weight"):
            if name in base_keys:
                return name
    return None


def main(request: dict[str, Any]) -> None:
    started = time.perf_counter()
    try:
        import torch
        from safetensors import safe_open
    except Exception as exc:  # noqa: BLE001 - a missing or broken torch is an answer, not a crash
        _answer({"ok": False, "error_kind": "no_torch", "error": f"{type(exc).__name__}: {exc}"})
        return
    try:
        import bitsandbytes
        import bitsandbytes.functional as bnbf
    except Exception as exc:  # noqa: BLE001 - missing or broken: both are why people run bnbdoctor
        _answer({"ok": False, "error_kind": "no_bitsandbytes", "error": f"{type(exc).__name__}: {exc}"})
        return
    try:
        _run(request, torch, safe_open, bnbf, bitsandbytes.__version__, started)
    except Exception as exc:  # noqa: BLE001 - reported in the answer, not a traceback
        _answer({"ok": False, "error_kind": "failed", "error": f"{type(exc).__name__}: {exc}"})


def _run(request: dict[str, Any], torch: Any, safe_open: Any, bnbf: Any, bnb_version: str, started: float) -> None:
    config = request["adapter_config"]
    fan_in_fan_out = bool(config.get("fan_in_fan_out"))
    quant_type = request["quant_type"]
    blocksize = int(request["blocksize"])
    double_quant = bool(request["double_quant"])
    limit = request.get("max_layers")
    base_keys = _shards(request["base_dir"])
    with safe_open(request["adapter_file"], framework="pt") as adapter:
        layers = _layers(list(adapter.keys()))
        if limit:
            layers = dict(list(layers.items())[: int(limit)])
        totals = {way: {"dot": 0.0, "norm2": 0.0, "unmoved": 0, "numel": 0} for way in WAYS}
        results: list[dict[str, Any]] = []
        for position, (module, roles) in enumerate(layers.items()):
            t0 = time.perf_counter()
            sys.stderr.write(f"{PROGRESS}{position + 1}/{len(layers)} {module}\n")  # the layer now measured
            sys.stderr.flush()
            base_name = _base_name(module, base_keys)
            if base_name is None:
                results.append({"module": module, "error": "no matching base weight"})
                continue
            with safe_open(base_keys[base_name], framework="pt") as base:
                weight = base.get_tensor(base_name)
            lora_a = adapter.get_tensor(roles["A"]).float()
            lora_b = adapter.get_tensor(roles["B"]).float()
            scale = _scale(config, module, int(lora_a.shape[0]))
            magnitude = adapter.get_tensor(roles["m"]).float() if "m" in roles else None
            layer = _measure(
                torch,
                bnbf,
                weight,
                lora_a,
                lora_b,
                magnitude,
                scale,
                fan_in_fan_out,
                quant_type,
                blocksize,
                double_quant,
            )
            del weight, lora_a, lora_b, magnitude
            for way in WAYS:
                for key in ("dot", "norm2", "unmoved", "numel"):
                    totals[way][key] += layer["sums"][way][key]
            results.append(
                {
                    "module": module,
                    "base_weight": base_name,
                    "shape": layer["shape"],
                    "dtype": layer["dtype"],
                    "delta_rel": layer["delta_rel"],
                    "ways": {way: _way(layer["sums"][way]) for way in WAYS},
                    "seconds": round(time.perf_counter() - t0, 4),
                }
            )
    answer: dict[str, Any] = {
        "ok": True,
        "versions": {"torch": str(torch.__version__), "bitsandbytes": str(bnb_version)},
        "scale": _scale(config, "", int(config.get("r") or 8)),
        "layers": results,
        "overall": {way: _way(totals[way]) for way in WAYS},
        "peak_rss_bytes": _peak_rss(),
        "seconds": round(time.perf_counter() - started, 4),
    }
    _answer(answer)


def _scale(config: dict[str, Any], module: str, rank: int) -> float:
    """alpha/r (alpha/sqrt(r) with rslora); alpha from a matching ``alpha_pattern`` entry, as peft matches."""
    alpha = float(config.get("lora_alpha") or rank)
    for pattern, value in (config.get("alpha_pattern") or {}).items():
        if module and re.match(rf"(.*\.)?{pattern}$", module):
            alpha = float(value)
            break
    return alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank


def _way(sums: dict[str, float]) -> dict[str, float | None]:
    norm2 = sums["norm2"]
    return {
        "kept": (sums["dot"] / norm2) if norm2 > 0 else None,
        "unmoved": (sums["unmoved"] / sums["numel"]) if sums["numel"] else None,
    }


def _measure(
    torch: Any,
    bnbf: Any,
    weight: Any,
    lora_a: Any,
    lora_b: Any,
    magnitude: Any,
    scale: float,
    fan_in_fan_out: bool,
    quant_type: str,
    blocksize: int,
    double_quant: bool,
) -> dict[str, Any]:
    """One layer's sums for every way of merging."""
    dtype = weight.dtype

    def roundtrip(tensor: Any) -> Any:
        packed, state = bnbf.quantize_4bit(
            tensor.to(dtype).contiguous(), blocksize=blocksize, compress_statistics=double_quant, quant_type=quant_type
        )
        return bnbf.dequantize_4bit(packed, state).to(dtype)

    lora = (lora_b @ lora_a) * scale
    if fan_in_fan_out:
        lora = lora.T
    w16 = weight.float()
    wq = roundtrip(weight).float()

    def delta(base: Any) -> Any:
        if magnitude is None:
            return lora
        combined = base + lora  # DoRA: m · (W + ΔW) / ‖W + ΔW‖ per output row, as peft merges it
        norm = combined.norm(p=2, dim=1, keepdim=True).clamp_min(1e-12)
        return magnitude.reshape(-1, 1) * combined / norm - base

    bases = {"4bit": wq, "16bit": w16, "dequantized": wq, "16bit_then_quantize": w16}
    sums = {}
    # In place where a tensor is not needed again: a layer holds W, deq(Q(W)), ΔW and one merge at a time
    # (each float32), so the peak is the largest layer's, however many layers the adapter has.
    for way, base in bases.items():
        update = delta(base)
        target = base + update
        quantized = way in ("4bit", "16bit_then_quantize")
        merged = roundtrip(target).float() if quantized else target.to(dtype).float()
        del target
        unmoved = int((merged == base).sum())
        moved = merged.sub_(base)  # M - base_M
        sums[way] = {
            "dot": float(moved.mul_(update).sum()),  # ⟨M - base_M, ΔW⟩
            "norm2": float(update.square().sum()),
            "unmoved": unmoved,
            "numel": int(base.numel()),
        }
        del update, merged, moved
    delta_rel = float(lora.norm() / w16.norm().clamp_min(1e-12))
    return {
        "sums": sums,
        "shape": list(weight.shape),
        "dtype": str(dtype).replace("torch.", ""),
        "delta_rel": delta_rel,
    }
