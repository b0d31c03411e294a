"""Python a user can paste: device maps, max_memory dicts and from_pretrained calls; device maps as display rows.

Runs of numbered siblings (``model.layers.0`` ... ``model.layers.39`` on one device) are written
as dict comprehensions, so an 80-layer map stays a dozen lines and is still exactly the map.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from bnbdoctor.fit_protocol import QUANT_4BIT, QUANT_8BIT, QUANT_TYPE_FP4
from bnbdoctor.units import GIB, MIB

__all__ = [
    "bnb_config_python",
    "collapse_runs",
    "device_literal",
    "device_map_lines",
    "device_map_python",
    "from_pretrained_python",
    "max_memory_literal",
    "memory_literal",
]

_NUMBERED = re.compile(r"^(?P<prefix>.*\.)(?P<index>\d+)$")


def memory_literal(size: int) -> str:
    """A max_memory value that parses back to exactly ``size`` bytes."""
    if size % GIB == 0:
        return f'"{size // GIB}GiB"'
    if size % MIB == 0:
        return f'"{size // MIB}MiB"'
    return str(int(size))


def device_literal(device: str | int) -> str:
    text = str(device)
    return text if text.isdigit() else f'"{text}"'


def max_memory_literal(memory: Mapping[str, int]) -> str:
    def order(key: str) -> tuple[int, int]:
        return (0, int(key)) if key.isdigit() else (1, {"mps": 0, "cpu": 1, "disk": 2}.get(key, 3))

    items = [f"{device_literal(k)}: {memory_literal(int(memory[k]))}" for k in sorted(memory, key=order)]
    return "{" + ", ".join(items) + "}"


def collapse_runs(device_map: Mapping[str, int | str]) -> list[tuple[str, int | str, int | None, int | None]]:
    """(prefix or key, device, first, last) groups: consecutive numbered siblings on one device."""
    groups: list[tuple[str, int | str, int | None, int | None]] = []
    for key, device in device_map.items():
        match = _NUMBERED.match(key)
        if match and groups:
            prefix, index = match.group("prefix"), int(match.group("index"))
            last_prefix, last_device, first, last = groups[-1]
            if last is not None and last_prefix == prefix and last_device == device and index == last + 1:
                groups[-1] = (prefix, device, first, index)
                continue
        if match:
            groups.append((match.group("prefix"), device, int(match.group("index")), int(match.group("index"))))
        else:
            groups.append((key, device, None, None))
    return groups


def device_map_lines(device_map: Mapping[str, int | str]) -> list[tuple[str, str]]:
    """(module or range, device) rows for display: ``model.layers.0-15`` -> ``1``."""
    rows = []
    for prefix, device, first, last in collapse_runs(device_map):
        if first is None:
            rows.append((prefix or '""', str(device)))
        elif first == last:
            rows.append((f"{prefix}{first}", str(device)))
        else:
            rows.append((f"{prefix}{first}-{last}", str(device)))
    return rows


def device_map_python(device_map: Mapping[str, int | str], name: str = "device_map") -> str:
    """``device_map = {...}`` as Python; equal, key for key, to ``device_map``."""
    lines = [f"{name} = {{"]
    for prefix, device, first, last in collapse_runs(device_map):
        value = device_literal(device)
        if first is None or last is None:
            lines.append(f'    "{prefix}": {value},')
        elif first == last:
            lines.append(f'    "{prefix}{first}": {value},')
        else:
            lines.append(f'    **{{f"{prefix}{{i}}": {value} for i in range({first}, {last + 1})}},')
    lines.append("}")
    return "\n".join(lines)


def bnb_config_python(
    quant: str,
    *,
    double_quant: bool = False,
    quant_type: str | None = None,
    fp32_offload: bool = False,
    skip_modules: list[str] | None = None,
) -> str:
    args = ["load_in_8bit=True"] if quant == QUANT_8BIT else ["load_in_4bit=True"]
    if quant == QUANT_4BIT and quant_type and quant_type != QUANT_TYPE_FP4:
        args.append(f'bnb_4bit_quant_type="{quant_type}"')
    if quant == QUANT_4BIT and double_quant:
        args.append("bnb_4bit_use_double_quant=True")
    if skip_modules:
        args.append(f"llm_int8_skip_modules={list(skip_modules)!r}")
    if fp32_offload:
        args.append("llm_int8_enable_fp32_cpu_offload=True")
    return f"BitsAndBytesConfig({', '.join(args)})"


def from_pretrained_python(
    model: str,
    bnb_config: str,
    device_map: str,
    max_memory: Mapping[str, int] | None,
    auto_class: str = "AutoModelForCausalLM",
) -> str:
    """A from_pretrained call; ``device_map`` is a Python expression (a string literal or a name)."""
    lines = [
        f"model = {auto_class}.from_pretrained(",
        f"    {model!r},",
        f"    quantization_config={bnb_config},",
        f"    device_map={device_map},",
    ]
    if max_memory:
        lines.append(f"    max_memory={max_memory_literal(max_memory)},")
    lines.append(")")
    return "\n".join(lines)
