"""The least GPU memory that fits, and the fewest GPUs of the given size that do: placements re-run by bisection.

Each step is a full placement by transformers (``Engine.place`` on the already built model), so
the answers are transformers' own, found to 0.1% (at least 1 MiB) and rounded up to a MiB.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...fit_protocol import DEVICE_MAP_AUTO, REMEDY_MIN_GPU_MEMORY, REMEDY_MORE_GPUS, VERDICT_FITS
from .common import jsonable_device, memory_from_json, memory_to_json, strip_none
from .sizes import module_sizes

if TYPE_CHECKING:
    from .common import Json, Memory, Placement
    from .replica import Engine


def minimum_memory(engine: Engine, main_scenario: Json, main_rec: Placement, more_gpus: bool = True) -> list[Json]:
    """Bisect the per-GPU memory (same number of GPUs, same device_map) to 0.1% (at least 1 MiB); then count
    how many GPUs of the given size would do."""
    out: list[Json] = []
    scenario = dict(main_scenario)
    max_memory = memory_from_json(scenario.get("max_memory"))
    detected = memory_from_json(scenario.get("detected"))
    field = "max_memory" if max_memory is not None else "detected"
    base = max_memory if max_memory is not None else detected
    if base is None:
        return out
    gpus = sorted(k for k in base if isinstance(k, int))
    n = max(1, len(gpus))
    model_bytes = module_sizes(engine, main_rec["built"]).get("", 0)
    device_map = scenario.get("device_map") or DEVICE_MAP_AUTO
    built = main_rec["built"]
    started = time.perf_counter()
    steps = [0]

    def fits(per_gpu: int, count: int) -> tuple[bool, Placement]:
        steps[0] += 1
        mm: Memory = {k: v for k, v in base.items() if not isinstance(k, int)}
        for i in range(count):
            mm[i] = int(per_gpu)
        args = (mm, None) if field == "max_memory" else (None, mm)
        rec = engine.place(built, device_map, args[0], args[1])
        return rec["verdict"] == VERDICT_FITS, rec

    def remedy(kind: str, per_gpu: int, count: int, rec: Placement) -> Json:
        """The remedy as reported: ``count`` GPUs of ``per_gpu`` bytes in the scenario, and where it places."""
        memory: Memory = {k: v for k, v in base.items() if not isinstance(k, int)}
        memory.update(dict.fromkeys(range(count), per_gpu))
        return {
            "kind": kind,
            "scenario": strip_none(dict(scenario, **{field: memory_to_json(memory)})),
            "verdict": rec["verdict"],
            "error": rec.get("error"),
            "device_map": {k: jsonable_device(v) for k, v in rec["result"].items()},
            "per_gpu_bytes": int(per_gpu),
            "gpus": count,
            "field": field,
        }

    mib = 1 << 20
    hi = max(64 * mib, int(model_bytes / n))
    ok, rec = fits(hi, n)
    while not ok and hi < (1 << 50):
        hi *= 2
        ok, rec = fits(hi, n)
    if ok:
        lo = 0
        while hi - lo > max(mib, hi // 1024):  # to 0.1% (at least 1 MiB): the answer is rounded anyway
            mid = (lo + hi) // 2
            good, _ = fits(mid, n)
            if good:
                hi = mid
            else:
                lo = mid
        hi = ((hi + mib - 1) // mib) * mib
        good, rec = fits(hi, n)
        out.append(remedy(REMEDY_MIN_GPU_MEMORY, hi, n, rec))
    if gpus and more_gpus:
        size = min(base[k] for k in gpus)
        for count in range(n + 1, max(n + 1, 16) + 1):
            good, rec = fits(size, count)
            if good:
                out.append(dict(remedy(REMEDY_MORE_GPUS, size, count, rec), original_gpus=len(gpus)))
                break
    engine.timings["min_memory"] = round(time.perf_counter() - started, 4)
    engine.timings["min_memory_steps"] = steps[0]
    return out
