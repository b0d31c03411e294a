"""The plain-string pieces of a ``bnbdoctor fit`` report, shared by its text and Markdown and the app's Fit tab.

The verdict line, the request as from_pretrained sees it, the engine that computed the placement, the
model's sizes, a device's label, the device map as rows. No ``rich`` here: the app and Markdown use these
without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from bnbdoctor.facts import FitDevice, FitFacts
from bnbdoctor.units import human

#: FitFacts.verdict -> (the line shown, its rich style).
VERDICT_LINE: dict[str, tuple[str, str]] = {
    "fits": ("✔ fits: every module is placed on a GPU", "bold green"),
    "raises": ("✖ raises ValueError: modules are dispatched on the CPU or the disk", "bold red"),
    "all_cpu": ("▲ no error, but the whole model is placed on the CPU", "bold yellow"),
    "fp32_offload": ("▲ no error: modules are offloaded to the CPU (llm_int8_enable_fp32_cpu_offload)", "bold yellow"),
    "likely_fits": ("✔ probably fits (approximate: no device map computed)", "green"),
    "likely_raises": ("✖ probably raises ValueError (approximate: no device map computed)", "red"),
    "unknown": ("? unknown: the model's sizes could not be read", "yellow"),
}


_NUMBERED = re.compile(r"^(?P<prefix>.*\.)(?P<index>\d+)$")


def device_label(device: str) -> str:
    """A device as shown: "GPU 0" for a GPU index, the name itself for cpu and disk."""
    return f"GPU {device}" if device.isdigit() else device


#: The columns of the per-device budget table (text, Markdown and the app show the same ones).
BUDGET_COLUMNS = ("device", "given", "balanced cap", "x0.9", "reserved", "used", "why the packer moved on")


def budget_rows(devices: list[FitDevice], module: Callable[[str], str] = str) -> list[tuple[str, ...]]:
    """One row per device under :data:`BUDGET_COLUMNS`; ``module`` formats the module the packer
    moved on at (Markdown puts it in backticks)."""
    rows: list[tuple[str, ...]] = []
    for d in devices:
        why = (
            f"{module(d.skipped_at)} ({human(d.skipped_atom_bytes)}) > {human(d.remaining_bytes)} left"
            if d.skipped_at
            else ""
        )
        rows.append(
            (
                device_label(d.device),
                human(d.given_bytes) if d.given_bytes is not None else "-",
                human(d.balanced_cap_bytes) if d.balanced_cap_bytes is not None else "-",
                human(d.budget_bytes) if d.budget_bytes is not None else "-",
                human(d.reserved_bytes) if d.reserved_bytes else "-",
                human(d.used_bytes),
                why,
            )
        )
    return rows


def request_line(fit: FitFacts) -> str:
    """The from_pretrained call that was simulated: quantization, device_map, memory, bnb options."""
    quant = "8-bit" if fit.quant == "8bit" else f"4-bit {fit.quant_type or ''}".strip()
    if fit.double_quant:
        quant += " + double quant"
    parts = [quant, f'device_map="{fit.device_map}"']
    if fit.max_memory is not None:
        shown = ", ".join(f"{k}: {human(v)}" for k, v in fit.max_memory.items())
        parts.append(f"max_memory={{{shown}}}")
    elif fit.free_memory is not None:
        gpus = [human(v) for k, v in sorted(fit.free_memory.items()) if k.isdigit()]
        source = "simulated" if fit.memory_source == "--gpus" else "detected"
        parts.append(
            f"max_memory=None ({source} free GPU memory: {', '.join(gpus)}"
            + (f"; cpu {human(fit.free_memory['cpu'])}" if "cpu" in fit.free_memory else "")
            + ")"
        )
    if fit.fp32_offload:
        parts.append("llm_int8_enable_fp32_cpu_offload=True")
    if fit.skip_modules:
        parts.append(f"llm_int8_skip_modules={fit.skip_modules}")
    return ", ".join(parts)


def engine_line(fit: FitFacts) -> str:
    """What computed the placement (transformers itself, or the approximation), its versions and time."""
    v = fit.versions
    names = ", ".join(f"{k} {v[k]}" for k in ("transformers", "accelerate", "bitsandbytes", "torch") if v.get(k))
    kinds = {
        "transformers": "transformers' own placement",
        "transformers+standin": "transformers' own placement, bitsandbytes stand-in",
        "approximate": "APPROXIMATE",
    }
    kind = kinds.get(fit.engine, fit.engine)
    seconds = fit.timings.get("total")
    return f"{kind}: {names or 'no packages'}" + (f" · {seconds:.1f} s" if seconds else "")


def size_line(fit: FitFacts) -> str:
    """The model's size, quantized and not, with the unquantized kinds above 1%."""
    if fit.model_bytes is None:
        return "unknown"
    kinds = ", ".join(
        f"{k} {human(v)}"
        for k, v in sorted(fit.unquantized_by_kind.items(), key=lambda kv: -kv[1])
        if v >= (fit.unquantized_bytes or 0) * 0.01
    )
    return (
        f"{human(fit.model_bytes)} = quantized Linear {human(fit.quantized_bytes)} + unquantized "
        f"{human(fit.unquantized_bytes)}" + (f" ({kinds})" if kinds else "")
    )


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
