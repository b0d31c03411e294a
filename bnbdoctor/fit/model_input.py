"""Which model ``bnbdoctor fit MODEL`` means: a model folder, a ``config.json``, a Hugging Face cache folder, or a
model id (``org/name``) found in the local Hugging Face cache (:mod:`bnbdoctor.modelfiles.hub_cache`).

Everything is read through the host, locally: bnbdoctor never contacts the Hub. The checks here are
the ones that need no transformers (a missing folder, a config without ``architectures``, custom
code without ``--trust-remote-code``, a checkpoint quantized by another method); the engine decides
the rest (an unknown ``model_type``) with the user's transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bnbdoctor.fit.options import FitInputError
from bnbdoctor.fit_protocol import QUANT_4BIT, QUANT_8BIT
from bnbdoctor.hosts.base import Host
from bnbdoctor.modelfiles import hub_cache
from bnbdoctor.modelfiles.checkpoint import checkpoint_files, snapshot


@dataclass
class ModelInput:
    """A resolved model: where its config is, what it says, and its safetensors files."""

    given: str
    config_path: str
    model_dir: str
    config: dict[str, Any]
    checkpoint_files: list[str] = field(default_factory=list)
    architecture: str | None = None
    model_type: str | None = None
    remote_code: bool = False  # auto_map names custom classes
    pre_quantized: str | None = None  # "4bit" / "8bit" when the config carries a bnb quantization_config
    pre_quant_type: str | None = None
    pre_double_quant: bool = False
    config_dtype: str | None = None
    from_cache: str | None = None  # the cache's repo folder when MODEL was a Hugging Face cache entry


def cached_repo(host: Host, repo_id: str) -> str:
    """The cache folder of ``repo_id``; raises :class:`FitInputError` (one line) when it is not cached."""
    cache = hub_cache.hub_cache(host)
    folder = host.pathmod.join(cache, hub_cache.repo_folder_name(repo_id))
    if host.is_dir(folder):
        return folder
    raise FitInputError(
        f"{repo_id}: not a local folder and not in the Hugging Face cache ({cache}); bnbdoctor fit works "
        f"offline and needs only the config: {fetch_config_command(repo_id)}"
    )


def fetch_config_command(repo_id: str) -> str:
    """The command that downloads only the model's config.json into the cache."""
    return f"hf download {repo_id} config.json"


def _model_folder(host: Host, path: str, repo_id: str | None = None) -> tuple[str, str | None]:
    """(folder holding config.json, cache repo folder or None) for a folder given as MODEL or found for ``repo_id``."""
    join = host.pathmod.join
    if host.is_file(join(path, "config.json")):
        return path, None
    if host.is_dir(join(path, "snapshots")):
        found = snapshot(host, path, FitInputError)
        if found:
            return found, path
        fetch = fetch_config_command(repo_id) if repo_id else "download the model first"
        raise FitInputError(
            f"{path}: a Hugging Face cache entry without a downloaded config.json "
            f"(bnbdoctor fit works offline; {fetch})"
        )
    entries = host.list_dir(path) or []
    repos = [e for e in entries if e.startswith("models--") and host.is_dir(join(path, e))]
    if len(repos) == 1:
        return _model_folder(host, join(path, repos[0]))
    if repos:
        shown = ", ".join(repos[:4]) + (", ..." if len(repos) > 4 else "")
        raise FitInputError(f"{path}: a Hugging Face cache with {len(repos)} models; pass one of {shown}")
    raise FitInputError(f"{path}: no config.json in this folder")


def resolve_model(host: Host, given: str, trust_remote_code: bool = False) -> ModelInput:
    """Find and read the model's config; raise :class:`FitInputError` (one line) on bad input."""
    path = given.rstrip("/\\") or given
    repo_id = None
    if not host.exists(path):
        if not hub_cache.is_repo_id(given):
            raise FitInputError(f"{given}: no such file or folder")
        repo_id, path = given, cached_repo(host, given)  # as from_pretrained: a local folder first
    cache_repo = None
    if host.is_dir(path):
        folder, cache_repo = _model_folder(host, path, repo_id)
        config_path = host.pathmod.join(folder, "config.json")
    else:
        config_path = path
        folder = host.pathmod.dirname(path) or "."
    text = host.read_text(config_path)
    if text is None:
        raise FitInputError(f"{config_path}: cannot be read")
    try:
        config = json.loads(text)
    except RecursionError:
        raise FitInputError(f"{config_path}: nested too deeply to be a model config") from None
    except ValueError as exc:
        raise FitInputError(f"{config_path}: not valid JSON ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(config, dict):
        raise FitInputError(f"{config_path}: not a model config (a JSON object is expected)")
    architectures = config.get("architectures")
    if not architectures or not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise FitInputError(
            f"{config_path}: no `architectures` list, so the model class is unknown "
            '(add e.g. "architectures": ["LlamaForCausalLM"])'
        )
    auto_map = config.get("auto_map")
    remote_code = isinstance(auto_map, dict) and any(str(k).startswith("AutoModel") for k in auto_map)
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        if remote_code and not trust_remote_code:
            raise FitInputError(
                f"{config_path}: custom model code (auto_map) and no model_type; "
                "pass --trust-remote-code to let its code run"
            )
        raise FitInputError(f"{config_path}: no `model_type`, so transformers cannot pick a config class")
    model = ModelInput(
        given=given,
        config_path=config_path,
        model_dir=folder,
        config=config,
        architecture=architectures[0],
        model_type=model_type,
        remote_code=remote_code,
        from_cache=cache_repo,
    )
    dtype = config.get("dtype") or config.get("torch_dtype")
    model.config_dtype = dtype if isinstance(dtype, str) else None
    quant = config.get("quantization_config")
    if isinstance(quant, dict) and quant:
        method = str(quant.get("quant_method", "")).lower()
        if method != "bitsandbytes":
            raise FitInputError(
                f"{config_path}: the checkpoint is already quantized with "
                f"{method or 'an unknown method'}; bnbdoctor fit models bitsandbytes 4/8-bit "
                "quantization only"
            )
        model.pre_quantized = QUANT_8BIT if quant.get("load_in_8bit") else QUANT_4BIT
        quant_type = quant.get("bnb_4bit_quant_type")
        model.pre_quant_type = quant_type if isinstance(quant_type, str) else None
        model.pre_double_quant = bool(quant.get("bnb_4bit_use_double_quant"))
    model.checkpoint_files = checkpoint_files(host, folder)
    return model
