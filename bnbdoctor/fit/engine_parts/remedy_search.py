"""The remedies for a placement that does not fit, each simulated by re-running the engine with the change.

In order: device_map="sequential"; an explicit max_memory where from_pretrained would query the
driver; an explicit device map (checked the way from_pretrained checks a dict); 4-bit instead of
8-bit; the least GPU memory and the fewest GPUs that fit; fp32 CPU offload with a custom map.
bnbdoctor turns the entries into titled, pasteable remedies (``bnbdoctor/fit/remedies.py``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ...fit_protocol import (
    DEVICE_MAP_AUTO,
    DEVICE_MAP_SEQUENTIAL,
    ORIGIN_FULL_BUDGET,
    ORIGIN_MAX_MEMORY_SEQUENTIAL,
    QUANT_4BIT,
    QUANT_8BIT,
    REMEDY_EXPLICIT_MAP,
    REMEDY_FP32_OFFLOAD,
    REMEDY_MAX_MEMORY,
    REMEDY_QUANT_4BIT,
    REMEDY_SEQUENTIAL,
    VERDICT_ERROR,
    VERDICT_FITS,
    VERDICT_RAISES,
)
from .common import int_or_none, jsonable_device, short, strip_none
from .minimum import minimum_memory
from .replica import scenario_result
from .sizes import module_sizes

if TYPE_CHECKING:
    from .common import Device, Json, Placement
    from .replica import Engine


def remedies(engine: Engine, main_scenario: Json, main_rec: Placement) -> list[Json]:
    req = engine.request
    found: list[Json] = []
    quant = main_scenario.get("quant") or req["quant"]
    device_map = main_scenario.get("device_map") or DEVICE_MAP_AUTO
    max_memory = main_scenario.get("max_memory")
    detected = main_scenario.get("detected")
    sizes = module_sizes(engine, main_rec["built"])

    def attempt(kind: str, scenario: Json, **extra: Any) -> Placement | None:
        started = time.perf_counter()
        try:
            rec = engine.run_scenario(scenario)
        except Exception as exc:  # noqa: BLE001 - a remedy that cannot be simulated is reported, not fatal
            found.append(
                {
                    "kind": kind,
                    "scenario": strip_none(scenario),
                    "verdict": VERDICT_ERROR,
                    "error": f"{type(exc).__name__}: {short(exc)}",
                }
            )
            return None
        entry = {"kind": kind, "scenario": strip_none(scenario), **scenario_result(rec), **extra}
        entry["seconds"] = round(time.perf_counter() - started, 4)
        found.append(entry)
        return rec

    passing_maps: list[tuple[str, Placement]] = []
    # 1. sequential: no balancing caps
    if device_map != DEVICE_MAP_SEQUENTIAL:
        rec = attempt(REMEDY_SEQUENTIAL, dict(main_scenario, device_map=DEVICE_MAP_SEQUENTIAL))
        if rec and rec["verdict"] == VERDICT_FITS:
            passing_maps.append((REMEDY_SEQUENTIAL, rec))
    # 2. an explicit max_memory, when from_pretrained would otherwise ask the driver
    if detected is not None and max_memory is None:
        mib = 1 << 20
        explicit = {k: (int(v) // mib) * mib for k, v in detected.items()}
        rec = attempt(REMEDY_MAX_MEMORY, dict(main_scenario, max_memory=explicit, detected=None))
        if rec and rec["verdict"] == VERDICT_FITS:
            passing_maps.append((REMEDY_MAX_MEMORY, rec))
        elif device_map != DEVICE_MAP_SEQUENTIAL:
            rec = attempt(
                REMEDY_MAX_MEMORY,
                dict(main_scenario, max_memory=explicit, detected=None, device_map=DEVICE_MAP_SEQUENTIAL),
            )
            if rec and rec["verdict"] == VERDICT_FITS:
                passing_maps.append((ORIGIN_MAX_MEMORY_SEQUENTIAL, rec))
    # 3. an explicit device map, checked the way from_pretrained checks a dict
    source: Placement | None = passing_maps[0][1] if passing_maps else None
    origin = passing_maps[0][0] if passing_maps else None
    if source is None:
        full = full_budgets(main_rec)
        if full:
            model, hf_quantizer, _ = main_rec["built"]
            try:
                packed = engine.tia.infer_auto_device_map(
                    model,
                    max_memory=full,
                    no_split_module_classes=model._no_split_modules,
                    hf_quantizer=hf_quantizer,
                    **no_placement(engine, model),
                )
                if set(packed.values()) and not ({"cpu", "disk"} & set(packed.values())):
                    source = {"result": packed}
                    origin = ORIGIN_FULL_BUDGET
            except Exception:  # noqa: BLE001
                source = None
    if source is not None:
        explicit_map = {k: jsonable_device(v) for k, v in source["result"].items()}
        use: dict[str, int] = {}
        for name, device in explicit_map.items():
            use[str(device)] = use.get(str(device), 0) + int(sizes.get(name, 0))
        attempt(
            REMEDY_EXPLICIT_MAP,
            dict(main_scenario, device_map=explicit_map, max_memory=None, detected=None),
            origin=origin,
            gpu_use=use,
        )
    # 4. 4-bit instead of 8-bit
    if quant == QUANT_8BIT and not req.get("pre_quantized"):
        rec = attempt(REMEDY_QUANT_4BIT, dict(main_scenario, quant=QUANT_4BIT))
        if rec and rec["verdict"] != VERDICT_FITS and device_map != DEVICE_MAP_SEQUENTIAL:
            attempt(REMEDY_QUANT_4BIT, dict(main_scenario, quant=QUANT_4BIT, device_map=DEVICE_MAP_SEQUENTIAL))
    # 5. the least GPU memory that fits, and (when nothing above keeps the model on these GPUs)
    #    the fewest GPUs of this size
    found.extend(minimum_memory(engine, main_scenario, main_rec, more_gpus=not passing_maps))
    # 6. fp32 CPU offload with a custom map, when nothing keeps the model on these GPUs
    # (a pre-quantized checkpoint's own quantization_config wins over the one passed: the flag would be ignored)
    if main_rec["verdict"] == VERDICT_RAISES and not passing_maps and not req.get("pre_quantized"):
        offload_map = None
        for entry in found:
            if (
                entry["kind"] == REMEDY_SEQUENTIAL
                and entry.get("device_map")
                and {"cpu", "disk"} & set(entry["device_map"].values())
            ):
                offload_map = entry["device_map"]
        if offload_map is None:
            offload_map = {k: jsonable_device(v) for k, v in main_rec["result"].items()}
        rec = attempt(
            REMEDY_FP32_OFFLOAD,
            dict(main_scenario, fp32_offload=True, device_map=offload_map, max_memory=None, detected=None),
        )
        if rec is not None and rec.get("built") is not None:
            off_sizes = module_sizes(engine, rec["built"])
            entry = found[-1]
            entry["cpu_bytes"] = int(sum(off_sizes.get(k, 0) for k, v in offload_map.items() if v == "cpu"))
            entry["disk_bytes"] = int(sum(off_sizes.get(k, 0) for k, v in offload_map.items() if v == "disk"))
            entry["cpu_bytes_quantized"] = int(sum(sizes.get(k, 0) for k, v in offload_map.items() if v == "cpu"))
            user = main_rec.get("user") or {}
            entry["cpu_budget_bytes"] = int_or_none(user.get("cpu"))
    return found


def no_placement(engine: Engine, model: Any) -> dict[str, Any]:
    """``no_placement_params=`` for infer_auto_device_map, where this transformers takes it."""
    import inspect

    try:
        params = inspect.signature(engine.tia.infer_auto_device_map).parameters
    except (TypeError, ValueError):
        return {}
    if "no_placement_params" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
        value = getattr(model, "_no_placement_params", None)
        return {"no_placement_params": value} if value is not None else {}
    return {}


def full_budgets(rec: Placement) -> dict[Device, int] | None:
    """The GPU budgets as given (and the CPU's), without transformers' reductions."""
    user = rec.get("user") or {}
    gpus: dict[Device, int] = {k: v for k, v in user.items() if isinstance(k, int) and v > 0}
    if not gpus:
        return None
    full = dict(gpus)
    if "cpu" in user:
        full["cpu"] = user["cpu"]
    return full
