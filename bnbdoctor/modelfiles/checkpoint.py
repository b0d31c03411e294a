"""A model's weights on disk as from_pretrained finds them: the cache snapshot, the safetensors files, their headers.

Everything is read through the host and treated as untrusted: an index that is not one names no shards,
a header that is not JSON (or claims more than :data:`HEADER_LIMIT` bytes) is no header.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

from bnbdoctor.hosts.base import Host

#: Weight files from_pretrained would read, in its order of preference.
_INDEX = "model.safetensors.index.json"
_SINGLE = "model.safetensors"
#: Longest file name believed in an index's weight_map.
_MAX_NAME = 255
#: Largest safetensors header believed (real ones are kilobytes to a few megabytes).
HEADER_LIMIT = 100 * 1024 * 1024


def snapshot(host: Host, repo_dir: str, error: type[Exception]) -> str | None:
    """The snapshot a Hugging Face cache entry (``models--org--name``) points at: refs/main, else the only one.

    A refs/main whose snapshot lacks config.json counts as no snapshot: offline, from_pretrained reads that one.
    Several snapshots and no refs/main raise ``error`` (the command's one-line error): which one is meant?"""
    join: Callable[..., str] = host.pathmod.join
    snapshots = join(repo_dir, "snapshots")
    names = host.list_dir(snapshots) or []
    ref = (host.read_text(join(repo_dir, "refs", "main")) or "").strip()
    if ref and ref in names:
        return join(snapshots, ref) if host.is_file(join(snapshots, ref, "config.json")) else None
    with_config = [n for n in names if host.is_file(join(snapshots, n, "config.json"))]
    if len(with_config) == 1:
        return join(snapshots, with_config[0])
    if with_config:
        raise error(f"{repo_dir}: {len(with_config)} snapshots and no refs/main; pass one folder under {snapshots}")
    return None


def _shards(index: str) -> list[str]:
    """The shard file names an index's ``weight_map`` names (none when the index is not one)."""
    try:
        data = json.loads(index)
    except (ValueError, RecursionError):
        return []
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        return []
    return sorted({v for v in weight_map.values() if isinstance(v, str) and v and len(v) <= _MAX_NAME})


def checkpoint_files(host: Host, folder: str) -> list[str]:
    """The safetensors files from_pretrained reads in ``folder``: the index's shards, else
    ``model.safetensors``, else every ``*.safetensors``."""
    join = host.pathmod.join
    index = host.read_text(join(folder, _INDEX))
    if index is not None:
        shards = _shards(index)
        files = [join(folder, s) for s in shards if host.is_file(join(folder, s))]
        if files:
            return files
    if host.is_file(join(folder, _SINGLE)):
        return [join(folder, _SINGLE)]
    return [join(folder, n) for n in (host.list_dir(folder) or []) if n.endswith(".safetensors")]


def safetensors_header(host: Host, path: str) -> dict[str, Any] | None:
    """The JSON header of a safetensors file, or None when it is not one."""
    head = host.read_bytes(path, 8)
    if head is None or len(head) < 8:
        return None
    (length,) = struct.unpack("<Q", head)
    if length == 0 or length > HEADER_LIMIT:
        return None
    data = host.read_bytes(path, 8 + length)
    if data is None or len(data) < 8 + length:
        return None
    try:
        header = json.loads(data[8:].decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return header if isinstance(header, dict) else None
