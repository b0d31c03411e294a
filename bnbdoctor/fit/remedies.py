"""Turn the engine's simulated remedies into :class:`FitRemedy` records with a title, detail and code.

Every remedy here was re-run through the same placement engine; ``status`` is ``passes`` only
when that run's verdict is the one the remedy promises. Renderers show passing remedies only;
the JSON keeps all of them with their verdicts.
"""

from __future__ import annotations

from typing import Any

from bnbdoctor.facts import FitFacts, FitRemedy
from bnbdoctor.fit import snippets
from bnbdoctor.fit_protocol import (
    DEVICE_MAP_SEQUENTIAL,
    ORIGIN_FULL_BUDGET,
    QUANT_4BIT,
    REMEDY_EXPLICIT_MAP,
    REMEDY_FP32_OFFLOAD,
    REMEDY_MAX_MEMORY,
    REMEDY_MIN_GPU_MEMORY,
    REMEDY_MORE_GPUS,
    REMEDY_ORDER,
    REMEDY_QUANT_4BIT,
    REMEDY_SEQUENTIAL,
    STATUS_ERROR,
    STATUS_FAILS,
    STATUS_PASSES,
    VERDICT_ERROR,
    VERDICT_FITS,
    VERDICT_FP32_OFFLOAD,
)
from bnbdoctor.units import human


def _memory(data: dict[str, Any] | None) -> dict[str, int] | None:
    return None if data is None else {str(k): int(v) for k, v in data.items()}


def _call(
    fit: FitFacts,
    *,
    device_map: str,
    max_memory: dict[str, int] | None,
    quant: str | None = None,
    fp32_offload: bool = False,
) -> str:
    bnb = snippets.bnb_config_python(
        quant or fit.quant,
        double_quant=fit.double_quant,
        quant_type=fit.quant_type,
        fp32_offload=fp32_offload or fit.fp32_offload,
        skip_modules=fit.skip_modules,
    )
    return snippets.from_pretrained_python(fit.model, bnb, device_map, max_memory)


def _gpu_only(device_map: dict[str, Any]) -> bool:
    return bool(device_map) and not ({"cpu", "disk"} & {str(v) for v in device_map.values()})


def _where(device_map: dict[str, Any]) -> str:
    devices = sorted(
        {str(v) for v in device_map.values()}, key=lambda d: (not d.isdigit(), int(d) if d.isdigit() else 0, d)
    )
    gpus = [d for d in devices if d.isdigit()]
    text = ("GPU " if len(gpus) == 1 else "GPUs ") + ", ".join(gpus) if gpus else ""
    rest = [d for d in devices if not d.isdigit()]
    return ", ".join([t for t in [text, *rest] if t])


def convert(fit: FitFacts, raw: list[dict[str, Any]]) -> list[FitRemedy]:
    out = []
    for entry in raw:
        remedy = _convert_one(fit, entry)
        if remedy is not None:
            out.append(remedy)
    out.sort(key=lambda r: REMEDY_ORDER.index(r.kind) if r.kind in REMEDY_ORDER else len(REMEDY_ORDER))
    return out


def _convert_one(fit: FitFacts, entry: dict[str, Any]) -> FitRemedy | None:
    remedy = _describe(fit, entry)
    if remedy is None:
        return None
    scenario = entry.get("scenario") or {}
    arg = scenario.get("device_map")
    remedy.device_map_arg = arg if isinstance(arg, str) else None
    remedy.max_memory = _memory(scenario.get("max_memory"))
    remedy.free_memory = _memory(scenario.get("detected"))
    remedy.quant = scenario.get("quant") or fit.quant
    remedy.fp32_offload = bool(scenario.get("fp32_offload"))
    return remedy


def _describe(fit: FitFacts, entry: dict[str, Any]) -> FitRemedy | None:
    kind = str(entry.get("kind"))
    verdict = entry.get("verdict")
    scenario = entry.get("scenario") or {}
    placed = {str(k): v for k, v in (entry.get("device_map") or {}).items()}
    if verdict == VERDICT_ERROR:
        return FitRemedy(
            kind=kind, status=STATUS_ERROR, title=f"{kind} could not be simulated", error=entry.get("error")
        )
    passes = verdict == VERDICT_FITS
    status = STATUS_PASSES if passes else STATUS_FAILS
    max_memory = _memory(scenario.get("max_memory"))
    if kind == REMEDY_SEQUENTIAL:
        return FitRemedy(
            kind=kind,
            status=status,
            verdict=verdict,
            device_map=placed,
            device_map_arg=DEVICE_MAP_SEQUENTIAL,
            max_memory=max_memory,
            title='device_map="sequential"' + (f" fits on {_where(placed)}" if passes else ""),
            detail="sequential fills each GPU to its budget in order, without get_balanced_memory's per-GPU caps.",
            code=_call(fit, device_map='"sequential"', max_memory=max_memory),
        )
    if kind == REMEDY_MAX_MEMORY:
        arg = str(scenario.get("device_map") or fit.device_map)
        return FitRemedy(
            kind=kind,
            status=status,
            verdict=verdict,
            device_map=placed,
            device_map_arg=arg,
            max_memory=max_memory,
            title=f'pass max_memory explicitly (device_map="{arg}")'
            + (f": fits on {_where(placed)}" if passes else ""),
            detail="With max_memory=None, from_pretrained takes 90% of the free memory it queries, and the bnb "
            "quantizer takes 90% again; an explicit max_memory is only reduced once.",
            code=_call(fit, device_map=f'"{arg}"', max_memory=max_memory),
        )
    if kind == REMEDY_EXPLICIT_MAP:
        origin = entry.get("origin")
        use = {str(k): int(v) for k, v in (entry.get("gpu_use") or {}).items()}
        usage = ", ".join(
            f"GPU {k}: {human(v)}" for k, v in sorted(use.items(), key=lambda kv: int(kv[0])) if k.isdigit()
        )
        given = fit.max_memory if fit.max_memory is not None else (fit.free_memory or {})
        shares = [use[k] / given[k] for k in use if k.isdigit() and given.get(k)]
        fill = f", {max(shares):.0%} of the fullest GPU's memory" if shares else ""
        headroom = " without headroom" if origin == ORIGIN_FULL_BUDGET else ""
        # a dict map skips transformers' 10% margin: it must leave room for the quantization state
        state = fit.quant_state_bytes or 0
        over = [
            k
            for k in use
            if k.isdigit() and given.get(k) and fit.model_bytes and use[k] + state * use[k] / fit.model_bytes > given[k]
        ]
        source = (
            "the sequential placement"
            if origin != ORIGIN_FULL_BUDGET
            else "a packing at 100% of the given memory, without transformers' 10% margin"
        )
        detail = (
            "A dict device_map is used as given: from_pretrained checks only that no module is on cpu or disk. "
            f"This map is {source}" + (f" ({usage})." if usage else ".")
        )
        if passes and over:
            status = STATUS_FAILS
            detail += (
                f" It leaves no room for the quantization state on GPU {', '.join(over)} "
                f"({human(state)} in all), so loading would run out of memory."
            )
        code = snippets.device_map_python(placed) + "\n" + _call(fit, device_map="device_map", max_memory=None)
        title = f"pass an explicit device_map{headroom}" + (f" (on {_where(placed)}{fill})" if passes else "")
        return FitRemedy(
            kind=kind,
            status=status,
            verdict=verdict,
            device_map=placed,
            gpu_use=use,
            title=title,
            detail=detail,
            code=code,
        )
    if kind == REMEDY_QUANT_4BIT:
        arg = str(scenario.get("device_map") or fit.device_map)
        return FitRemedy(
            kind=kind,
            status=status,
            verdict=verdict,
            device_map=placed,
            quant=QUANT_4BIT,
            device_map_arg=arg,
            max_memory=max_memory,
            title=f'load in 4-bit instead of 8-bit (device_map="{arg}")'
            + (f": fits on {_where(placed)}" if passes else ""),
            detail="4-bit counts 0.5 byte per quantized weight instead of 1; embeddings, lm_head and fused experts "
            "stay in the model dtype either way.",
            code=_call(fit, device_map=f'"{arg}"', max_memory=max_memory, quant=QUANT_4BIT),
        )
    if kind in (REMEDY_MIN_GPU_MEMORY, REMEDY_MORE_GPUS):
        per_gpu, gpus = int(entry.get("per_gpu_bytes") or 0), int(entry.get("gpus") or 0)
        field = entry.get("field")
        memory = _memory(scenario.get(field)) if field else None
        if kind == REMEDY_MIN_GPU_MEMORY:
            what = "max_memory" if field == "max_memory" else "free memory"
            title = f"{gpus} GPU{'s' if gpus != 1 else ''} with at least {human(per_gpu)} {what} each"
            detail = (
                f'The smallest per-GPU {what} (found to 0.1%) for which device_map="{fit.device_map}" '
                f"keeps every module on a GPU, with {gpus} GPU{'s' if gpus != 1 else ''}."
            )
        else:
            title = f"{gpus} GPUs of {human(per_gpu)} instead of {int(entry.get('original_gpus') or 1)}"
            detail = (
                f'The fewest GPUs of this size for which device_map="{fit.device_map}" keeps every module on a GPU.'
            )
        code = _call(fit, device_map=f'"{fit.device_map}"', max_memory=memory) if field == "max_memory" else ""
        return FitRemedy(
            kind=kind,
            status=status,
            verdict=verdict,
            device_map=placed,
            per_gpu_bytes=per_gpu,
            gpus=gpus,
            max_memory=memory,
            device_map_arg=fit.device_map,
            title=title,
            detail=detail,
            code=code,
        )
    if kind == REMEDY_FP32_OFFLOAD:
        cpu_bytes = int(entry.get("cpu_bytes") or 0)
        budget = entry.get("cpu_budget_bytes")
        disk = int(entry.get("disk_bytes") or 0)
        ok = verdict == VERDICT_FP32_OFFLOAD and (budget is None or cpu_bytes <= int(budget)) and not disk
        available = f" ({human(int(budget))} available)" if budget is not None else ""
        detail = (
            f"The modules mapped to cpu are not quantized (they stay in {fit.dtype or 'the model dtype'}) and "
            f"need {human(cpu_bytes)} of CPU RAM{available}; they run on the CPU, so generation is many times "
            "slower than on the GPU."
        )
        if disk:
            detail += f" {human(disk)} would go to disk, which also needs offload_folder=."
        code = (
            snippets.device_map_python(placed)
            + "\n"
            + _call(fit, device_map="device_map", max_memory=None, fp32_offload=True)
        )
        return FitRemedy(
            kind=kind,
            status=STATUS_PASSES if ok else STATUS_FAILS,
            verdict=verdict,
            device_map=placed,
            cpu_bytes=cpu_bytes,
            title="llm_int8_enable_fp32_cpu_offload=True with a custom device_map "
            f"({human(cpu_bytes)} on the CPU, slow)",
            detail=detail,
            code=code,
        )
    return None
