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
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bnbdoctor.hosts.base import EngineAnswer, Host
from bnbdoctor.merge_check.engine import LayerProgress, run_engine
from bnbdoctor.merge_check_result import WAYS, LayerResult, MergeCheck, WayResult
from bnbdoctor.modelfiles import hub_cache
from bnbdoctor.modelfiles.checkpoint import checkpoint_files, safetensors_header, snapshot
from bnbdoctor.modelfiles.interpreter import choose_python

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


def _read_json(host: Host, path: str) -> dict[str, Any]:
    text = host.read_text(path)
    if text is None:
        raise MergeInputError(f"{path}: cannot be read")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MergeInputError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MergeInputError(f"{path}: not a JSON object")
    return data


def _lora_numbers(config: dict[str, Any], config_path: str) -> tuple[int | None, float | None]:
    """The adapter's rank ``r`` (a whole number, 1 or more) and ``lora_alpha`` (a finite number), as peft
    reads them; anything else (``8.5``, ``"8"``, ``true``, ``NaN``, which Python's json reads) is one line."""
    rank, alpha = config.get("r"), config.get("lora_alpha")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        raise MergeInputError(f"{config_path}: r is {json.dumps(rank)[:40]}, not a whole number of 1 or more")
    if alpha is not None and (
        isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha)
    ):
        raise MergeInputError(f"{config_path}: lora_alpha is {json.dumps(alpha)[:40]}, not a finite number")
    return rank, None if alpha is None else float(alpha)


def _snapshot(host: Host, repo_dir: str) -> str:
    """A hub cache entry (``models--org--name``) -> the snapshot from_pretrained reads (as fit finds it)."""
    found = snapshot(host, repo_dir, MergeInputError)
    if found is None:
        raise MergeInputError(f"{repo_dir}: no snapshot with a config.json in the Hugging Face cache")
    return found


def resolve_base(host: Host, name: str, relative_to: str) -> tuple[str, str]:
    """(the local folder holding the base's safetensors, the name the workflow script loads it by):
    ``name`` as a folder (also beside the adapter), or a cached Hub id, which the script loads by its id."""
    join = host.pathmod.join
    for candidate in (name, join(relative_to, name)):
        if host.is_dir(candidate):
            folder = _snapshot(host, candidate) if host.is_dir(join(candidate, "snapshots")) else candidate
            return folder, folder
    if hub_cache.is_repo_id(name):
        cache = hub_cache.hub_cache(host)
        cached = join(cache, hub_cache.repo_folder_name(name))
        if host.is_dir(cached):
            return _snapshot(host, cached), name
        raise MergeInputError(
            f"{name}: not a local folder and not in the Hugging Face cache ({cache}); merge-check works "
            f"offline: hf download {name} --include '*.safetensors' '*.json'"
        )
    raise MergeInputError(f"{name}: no such base model folder")


def safetensors_bytes(host: Host, folder: str) -> tuple[int, int]:
    """(total tensor bytes, largest tensor bytes) of the base's checkpoint, from the safetensors headers only:
    the files the engine reads (the index's shards, else ``model.safetensors``, else every ``*.safetensors``)."""
    total = largest = 0
    for path in checkpoint_files(host, folder):
        header = safetensors_header(host, path)
        if header is None:
            raise MergeInputError(f"{path}: not a safetensors file (its header cannot be read)")
        for name, entry in header.items():
            offsets = entry.get("data_offsets") if isinstance(entry, dict) and name != "__metadata__" else None
            if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
                continue
            size = offsets[1] - offsets[0]
            total += size
            largest = max(largest, size)
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
    if host is None:
        from bnbdoctor.hosts.live import LiveHost

        host = LiveHost()
    path = host.pathmod
    adapter_dir = options.adapter
    if host.is_file(adapter_dir) and path.basename(adapter_dir) == ADAPTER_CONFIG:
        adapter_dir = path.dirname(adapter_dir) or "."
    config_path = path.join(adapter_dir, ADAPTER_CONFIG)
    adapter_file = path.join(adapter_dir, ADAPTER_WEIGHTS)
    if not host.is_file(config_path):
        raise MergeInputError(f"{options.adapter}: no {ADAPTER_CONFIG} (a LoRA adapter folder saved by peft)")
    if not host.is_file(adapter_file):
        raise MergeInputError(f"{options.adapter}: no {ADAPTER_WEIGHTS} (bin adapters are not read)")
    config = _read_json(host, config_path)
    if str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise MergeInputError(f"{config_path}: peft_type {config.get('peft_type')}, only LoRA adapters are measured")
    rank, alpha = _lora_numbers(config, config_path)
    base_name = options.base or config.get("base_model_name_or_path")
    if not base_name:
        raise MergeInputError(f"{config_path} names no base model: pass --base MODEL")
    base_dir, base_ref = resolve_base(host, str(base_name), adapter_dir)
    total, largest = safetensors_bytes(host, base_dir)
    if total == 0:
        raise MergeInputError(f"{base_dir}: no safetensors weights")
    python, _ = choose_python(host, options.python, MergeInputError)
    reader = host.open_reader(adapter_file)
    adapter_bytes = reader.size if reader is not None else 0
    if reader is not None:
        reader.close()
    check = MergeCheck(
        adapter=adapter_dir,
        base=str(base_name),
        base_dir=base_dir,
        base_ref=base_ref,
        python=python,
        quant_type=options.quant_type,
        blocksize=options.blocksize,
        double_quant=options.double_quant,
        rank=rank,
        alpha=alpha,
        use_rslora=bool(config.get("use_rslora")),
        use_dora=bool(config.get("use_dora")),
        fan_in_fan_out=bool(config.get("fan_in_fan_out")),
        base_bytes=total,
        largest_tensor_bytes=largest,
        adapter_bytes=adapter_bytes,
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
