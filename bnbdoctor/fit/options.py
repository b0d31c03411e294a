"""What ``bnbdoctor fit`` is asked, checked before anything runs: memory strings, choices, GPUs.

Memory strings follow accelerate's ``convert_file_size_to_int``, the parser ``from_pretrained``
applies to ``max_memory``: ``GiB``/``MiB``/``KiB`` are powers of two, ``GB``/``MB``/``KB`` powers of
ten, a lower-case ``b`` (``24Gb``) means bits. A bare number is bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bnbdoctor.fit_protocol import DEVICE_MAP_AUTO, DEVICE_MAPS, DTYPES, QUANT_TYPE_NF4, QUANT_TYPES, QUANTS

#: The choices are the protocol's (the engine reads them too); they are offered here with the options.
__all__ = [
    "DEVICE_MAPS",
    "DTYPES",
    "QUANTS",
    "QUANT_TYPES",
    "FitInputError",
    "FitOptions",
    "normalise_dtype",
    "parse_gpus",
    "parse_max_memory",
    "parse_size",
    "validate",
]
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


class FitInputError(ValueError):
    """Bad input: printed as one line, exit 2."""


@dataclass
class FitOptions:
    """One ``bnbdoctor fit`` request. Strings are parsed by :func:`validate`."""

    model: str
    quant: str | None = None  # None: the checkpoint's own bnb config, else 4bit
    double_quant: bool = False
    quant_type: str = QUANT_TYPE_NF4
    dtype: str | None = None  # None: "auto", as from_pretrained
    device_map: str = DEVICE_MAP_AUTO
    max_memory: str | dict[str, int] | None = None  # "0=24GiB,1=24GiB,cpu=64GiB" or parsed
    gpus: str | list[int] | None = None  # "24GiB,24GiB": free memory of simulated GPUs
    cpu_memory: str | int | None = None  # free CPU RAM when max_memory is not given
    fp32_offload: bool = False  # llm_int8_enable_fp32_cpu_offload=True in the user's config
    skip_modules: list[str] = field(default_factory=list)  # llm_int8_skip_modules
    python: str | None = None
    trust_remote_code: bool = False
    compare_transformers: list[str] = field(default_factory=list)  # folders with another transformers
    remedies: bool = True
    timeout_s: float = 180.0
    force_standin: bool = False  # use the bitsandbytes stand-in even when bitsandbytes imports


def parse_size(text: str | int, what: str = "size") -> int:
    """Bytes from ``"24GiB"``, ``"5.5GB"``, ``"512MiB"`` or a plain number of bytes."""
    if isinstance(text, bool):
        raise FitInputError(f"{what}: {text!r} is not a memory size")
    if isinstance(text, int):
        if text < 0:
            raise FitInputError(f"{what}: {text} is negative")
        return text
    raw = text.strip()
    if re.fullmatch(r"\d+", raw):
        return int(raw)
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]i?[Bb])", raw, flags=re.IGNORECASE)
    if not match:
        raise FitInputError(f"{what}: {text!r} is not a memory size (use e.g. 24GiB, 512MiB, 80GB or bytes)")
    number, unit = float(match.group(1)), match.group(2)
    upper = unit.upper()
    scale = {"K": 1, "M": 2, "G": 3, "T": 4}[upper[0]]
    if upper.endswith("IB"):
        return int(number * (1 << (10 * scale)))
    value = int(number * (10 ** (3 * scale)))
    return value // 8 if unit.endswith("b") else value


def parse_max_memory(text: str) -> dict[str, int]:
    """``"0=24GiB,1=24GiB,cpu=64GiB"`` -> ``{"0": ..., "1": ..., "cpu": ...}`` (GPU keys as digits)."""
    out: dict[str, int] = {}
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise FitInputError("--max-memory: empty (use e.g. 0=24GiB,1=24GiB,cpu=64GiB)")
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep:
            key, sep, value = part.partition(":")
        key = key.strip().strip("'\"").lower()
        if not sep or not key or not value.strip():
            raise FitInputError(f"--max-memory: {part!r} is not DEVICE=SIZE (use e.g. 0=24GiB,cpu=64GiB)")
        key = key.removeprefix("cuda:")
        if not (key.isdigit() or key in ("cpu", "disk")):
            raise FitInputError(f"--max-memory: unknown device {key!r} (use GPU indices, cpu or disk)")
        if key in out:
            raise FitInputError(f"--max-memory: device {key} given twice")
        out[key if not key.isdigit() else str(int(key))] = parse_size(value.strip().strip("'\""), f"--max-memory {key}")
    return out


def parse_gpus(text: str) -> list[int]:
    """``"24GiB,24GiB"`` or ``"2x24GiB"`` / ``"8*80GB"`` -> one free-memory size per GPU."""
    sizes: list[int] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        match = re.fullmatch(r"(\d+)\s*[x*]\s*(.+)", part)
        count, size = (int(match.group(1)), match.group(2)) if match else (1, part)
        if count < 1 or count > 1024:
            raise FitInputError(f"--gpus: {part!r} has an unusable GPU count")
        sizes.extend([parse_size(size, "--gpus")] * count)
    if not sizes:
        raise FitInputError("--gpus: empty (use e.g. 24GiB,24GiB or 8x80GB)")
    return sizes


def normalise_dtype(text: str | None) -> str | None:
    if text is None:
        return None
    value = _DTYPE_ALIASES.get(text.strip().lower(), text.strip().lower()).removeprefix("torch.")
    if value not in DTYPES:
        raise FitInputError(f"--dtype: {text!r} is not one of {', '.join(DTYPES)}")
    return value


def validate(options: FitOptions) -> FitOptions:
    """Check choices and parse memory strings; raise :class:`FitInputError` with one line."""
    if options.device_map not in DEVICE_MAPS:
        raise FitInputError(f"--device-map: {options.device_map!r} is not one of {', '.join(DEVICE_MAPS)}")
    if options.quant is not None and options.quant not in QUANTS:
        raise FitInputError(f"--quant: {options.quant!r} is not one of {', '.join(QUANTS)}")
    if options.quant_type not in QUANT_TYPES:
        raise FitInputError(f"--quant-type: {options.quant_type!r} is not one of {', '.join(QUANT_TYPES)}")
    options.dtype = normalise_dtype(options.dtype)
    if isinstance(options.max_memory, str):
        options.max_memory = parse_max_memory(options.max_memory)
    elif isinstance(options.max_memory, dict):
        options.max_memory = {str(k): parse_size(v, f"max_memory {k}") for k, v in options.max_memory.items()}
    if isinstance(options.gpus, str):
        options.gpus = parse_gpus(options.gpus)
    if options.cpu_memory is not None:
        options.cpu_memory = parse_size(options.cpu_memory, "--cpu-memory")
    if options.timeout_s <= 0:
        raise FitInputError("--timeout must be positive")
    return options
