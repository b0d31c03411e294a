"""``run_merge_check``: an adapter folder (and its base) in, a :class:`MergeCheck` out, with no UI.

1. Read the adapter (``adapter_config.json`` + ``adapter_model.safetensors``) and resolve its base: a
   folder, a Hugging Face cache id, or the base named in the adapter config (offline, local cache only).
2. Read the base's safetensors headers (stdlib) for the memory a 16-bit merge needs.
3. Run the engine (:mod:`bnbdoctor.merge_check.engine_script`) in the patient interpreter, time-limited:
   it measures, layer by layer, how much of the update each way of merging keeps; ``progress`` hears
   which layer it is on as it goes.
4. Say the verdict in words, with the script for the right workflow, in the user's own paths.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bnbdoctor.hosts.base import EngineAnswer, Host
from bnbdoctor.merge_check.engine import LayerProgress, run_engine
from bnbdoctor.merge_check.result import WAYS, LayerResult, MergeCheck, WayResult

QUANT_TYPES = ("nf4", "fp4")
BLOCKSIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"

Progress = Callable[[str], None]


class MergeInputError(Exception):
    """Bad input (no adapter, no base, an unknown option); one line, exit 2."""


@dataclass
class MergeOptions:
    """What ``bnbdoctor merge-check`` was asked."""

    adapter: str
    base: str | None = None
    quant_type: str = "nf4"
    blocksize: int = 64
    double_quant: bool = False
    python: str | None = None
    max_layers: int | None = None
    timeout_s: float = 600.0


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise MergeInputError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MergeInputError(f"{path}: not a JSON object")
    return data


def _snapshot(folder: str) -> str:
    """A hub cache repository folder (``models--org--name``) -> its snapshot for ``refs/main`` (or the only one)."""
    snapshots = os.path.join(folder, "snapshots")
    ref = os.path.join(folder, "refs", "main")
    if os.path.isfile(ref):
        with open(ref, encoding="utf-8") as handle:
            chosen = os.path.join(snapshots, handle.read().strip())
        if os.path.isdir(chosen):
            return chosen
    found = sorted(os.listdir(snapshots)) if os.path.isdir(snapshots) else []
    if len(found) == 1:
        return os.path.join(snapshots, found[0])
    raise MergeInputError(f"{folder}: no single snapshot in the Hugging Face cache")


def _hub_cache() -> str:
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def resolve_base(name: str, relative_to: str) -> str:
    """The local folder holding the base's safetensors: ``name`` as a folder, or as a cached hub id."""
    for candidate in (name, os.path.join(relative_to, name)):
        if os.path.isdir(candidate):
            if os.path.isdir(os.path.join(candidate, "snapshots")):
                return _snapshot(candidate)
            return candidate
    if name.count("/") == 1 and not name.startswith((".", "/")):
        cached = os.path.join(_hub_cache(), "models--" + name.replace("/", "--"))
        if os.path.isdir(cached):
            return _snapshot(cached)
        raise MergeInputError(
            f"{name}: not a local folder and not in the Hugging Face cache ({_hub_cache()}); merge-check works "
            f"offline: hf download {name} --include '*.safetensors' '*.json'"
        )
    raise MergeInputError(f"{name}: no such base model folder")


def safetensors_bytes(folder: str) -> tuple[int, int]:
    """(total tensor bytes, largest tensor bytes) of a folder's safetensors files, from their headers only."""
    total = largest = 0
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".safetensors"):
            continue
        with open(os.path.join(folder, file), "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            start, end = entry["data_offsets"]
            total += end - start
            largest = max(largest, end - start)
    return total, largest


def build_request(
    options: MergeOptions, adapter_config: dict[str, Any], adapter_file: str, base_dir: str
) -> dict[str, Any]:
    return {
        "adapter_config": adapter_config,
        "adapter_file": adapter_file,
        "base_dir": base_dir,
        "quant_type": options.quant_type,
        "blocksize": options.blocksize,
        "double_quant": options.double_quant,
        "max_layers": options.max_layers,
    }


def _validate(options: MergeOptions) -> None:
    if options.quant_type not in QUANT_TYPES:
        raise MergeInputError(f"--quant-type {options.quant_type}: one of {', '.join(QUANT_TYPES)}")
    if options.blocksize not in BLOCKSIZES:
        raise MergeInputError(f"--blocksize {options.blocksize}: one of {', '.join(map(str, BLOCKSIZES))}")


def _way(data: dict[str, Any] | None) -> WayResult:
    data = data or {}
    return WayResult(kept=data.get("kept"), unmoved=data.get("unmoved"))


def fill(check: MergeCheck, answer: EngineAnswer) -> None:
    """``check`` from the engine's answer."""
    data = answer.data
    check.versions = {str(k): str(v) for k, v in (data.get("versions") or {}).items()}
    check.scale = data.get("scale")
    check.overall = {way: _way((data.get("overall") or {}).get(way)) for way in WAYS}
    for item in data.get("layers") or []:
        ways = item.get("ways") or {}
        check.layers.append(
            LayerResult(
                module=str(item.get("module")),
                base_weight=item.get("base_weight"),
                shape=list(item.get("shape") or []),
                dtype=item.get("dtype"),
                delta_rel=item.get("delta_rel"),
                ways={way: _way(ways.get(way)) for way in WAYS} if ways else {},
                seconds=item.get("seconds"),
                error=item.get("error"),
            )
        )
    check.engine_peak_rss_bytes = data.get("peak_rss_bytes")
    check.timings["engine"] = float(data.get("seconds") or 0.0)


def run_merge_check(options: MergeOptions, host: Host | None = None, progress: Progress | None = None) -> MergeCheck:
    """Measure what merging ``options.adapter`` keeps, each way; raises :class:`MergeInputError` for bad input."""
    _validate(options)
    adapter_dir = options.adapter
    if os.path.isfile(adapter_dir) and os.path.basename(adapter_dir) == ADAPTER_CONFIG:
        adapter_dir = os.path.dirname(adapter_dir) or "."
    config_path = os.path.join(adapter_dir, ADAPTER_CONFIG)
    adapter_file = os.path.join(adapter_dir, ADAPTER_WEIGHTS)
    if not os.path.isfile(config_path):
        raise MergeInputError(f"{options.adapter}: no {ADAPTER_CONFIG} (a LoRA adapter folder saved by peft)")
    if not os.path.isfile(adapter_file):
        raise MergeInputError(f"{options.adapter}: no {ADAPTER_WEIGHTS} (bin adapters are not read)")
    config = _read_json(config_path)
    if str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise MergeInputError(f"{config_path}: peft_type {config.get('peft_type')}, only LoRA adapters are measured")
    base_name = options.base or config.get("base_model_name_or_path")
    if not base_name:
        raise MergeInputError(f"{config_path} names no base model: pass --base MODEL")
    base_dir = resolve_base(str(base_name), adapter_dir)
    # The script loads the base as named when it is a Hub id, else from the folder found here.
    base_ref = str(base_name) if not os.path.isdir(str(base_name)) and str(base_name).count("/") == 1 else base_dir
    total, largest = safetensors_bytes(base_dir)
    if total == 0:
        raise MergeInputError(f"{base_dir}: no safetensors weights")
    if host is None:
        from bnbdoctor.hosts.live import LiveHost

        host = LiveHost()
    from bnbdoctor.fit.core import choose_python
    from bnbdoctor.fit.options import FitInputError

    try:
        python, _ = choose_python(host, options.python)
    except FitInputError as exc:
        raise MergeInputError(str(exc)) from None
    check = MergeCheck(
        adapter=adapter_dir,
        base=str(base_name),
        base_dir=base_dir,
        base_ref=base_ref,
        python=python,
        quant_type=options.quant_type,
        blocksize=options.blocksize,
        double_quant=options.double_quant,
        rank=config.get("r"),
        alpha=config.get("lora_alpha"),
        use_rslora=bool(config.get("use_rslora")),
        use_dora=bool(config.get("use_dora")),
        fan_in_fan_out=bool(config.get("fan_in_fan_out")),
        base_bytes=total,
        largest_tensor_bytes=largest,
        adapter_bytes=os.path.getsize(adapter_file),
    )
    if progress:
        progress(f"bnbdoctor merge-check: measuring {adapter_dir} layer by layer with {python}")
    request = build_request(options, config, adapter_file, base_dir)
    layers = LayerProgress(progress)
    answer = run_engine(host, python, request, options.timeout_s, on_stderr_line=layers)
    check.timings["wall"] = round(answer.duration_s, 4)
    if not answer.ok:
        check.error = answer.error or "the engine did not answer"
        if answer.failure:  # it stopped before answering: say how far it got
            where = layers.where(answer.duration_s, timed_out=answer.timed_out)
            check.error += f" ({where})" if where else ""
        return check
    fill(check, answer)
    return check
