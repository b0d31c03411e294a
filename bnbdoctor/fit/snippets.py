"""Python a user can paste: device maps, max_memory dicts and from_pretrained calls.

Runs of numbered siblings (``model.layers.0`` ... ``model.layers.39`` on one device, found as the report
shows them: :func:`bnbdoctor.render.fit_lines.collapse_runs`) are written as dict comprehensions, so an
80-layer map stays a dozen lines and is still exactly the map.
"""

from __future__ import annotations

from collections.abc import Mapping

from bnbdoctor.fit_protocol import QUANT_4BIT, QUANT_8BIT, QUANT_TYPE_FP4
from bnbdoctor.render.fit_lines import collapse_runs
from bnbdoctor.units import GIB, MIB

__all__ = [
    "bnb_config_python",
    "device_literal",
    "device_map_python",
    "from_pretrained_python",
    "max_memory_literal",
    "memory_literal",
]


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
