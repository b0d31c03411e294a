"""What every part of the fit engine shares: its error, conversions between JSON and device keys, record types.

Devices are GPU indices (``int``) or ``"cpu"`` / ``"disk"`` / ``"mps"``, as accelerate keys them; in
JSON every key is a string (``"0"``). The record types exist for the type checker only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias, TypedDict

    #: A JSON object, as the request and the answer are.
    Json: TypeAlias = dict[str, Any]
    #: A GPU index or "cpu" / "disk" / "mps".
    Device: TypeAlias = int | str
    #: A max_memory-like dict: device -> bytes.
    Memory: TypeAlias = dict[Device, int]
    #: (model, hf_quantizer, dtype) as from_pretrained has them before placing the model.
    Built: TypeAlias = tuple[Any, Any, Any]

    class Placement(TypedDict, total=False):
        """One placement: its result and what the recording wrappers saw while transformers computed it."""

        trace: bool  # record the atoms (infer_auto_device_map with clean_result=False)
        adjusted: dict[Device, int]  # the quantizer's adjust_max_memory result
        user: Memory  # get_max_memory: max_memory as given, or as queried
        balanced: Memory  # get_balanced_memory's caps
        budget: Memory | None  # what infer_auto_device_map was given
        no_split: list[str]
        atoms: list[tuple[str, Device]]  # the placement before merging (trace only)
        map: dict[str, Device]  # infer_auto_device_map's result, also when _get_device_map raised after it
        result: dict[str, Device]
        error: str | None
        verdict: str
        raise_site: str | None
        built: Built  # absent when get_hf_quantizer raised


class EngineError(Exception):
    """A failure the host should report as ``kind``; ``fallback`` asks for the approximate mode."""

    def __init__(self, kind: str, message: str, fallback: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.fallback = fallback


def import_required(name: str, kind: str) -> Any:
    """The patient's ``name`` module; when it cannot be imported, the engine error ``kind`` that sends the
    fit to its approximate mode (torch, transformers and accelerate fail the same way)."""
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise EngineError(kind, f"{name} cannot be imported: {short(exc)}", fallback=True) from exc


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
        if not piece.isdigit():
            break
    return tuple(parts)


def jsonable_device(device: Device) -> Device:
    return device if isinstance(device, int) else str(device)


def device_key(device: Device) -> str:
    return str(device)


def memory_from_json(data: dict[str, Any] | None) -> Memory | None:
    if data is None:
        return None
    out: Memory = {}
    for key, value in data.items():
        device: Device = int(key) if str(key).isdigit() else str(key)
        out[device] = int(value)
    return out


def memory_to_json(memory: Memory | None) -> dict[str, int] | None:
    if memory is None:
        return None
    return {str(k): int(v) for k, v in memory.items()}


def device_from_json(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def strip_none(scenario: Json) -> Json:
    return {k: v for k, v in scenario.items() if v is not None}


def short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:400]
