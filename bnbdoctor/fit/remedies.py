"""Turn the engine's simulated remedies into :class:`FitRemedy` records with a title, detail and code.

Every remedy here was re-run through the same placement engine; ``status`` is ``passes`` only
when that run's verdict is the one the remedy promises. Renderers show passing remedies only;
the JSON keeps all of them with their verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Simulated:
    """What every remedy entry of the engine carries, read once for the describers."""

    kind: str
    verdict: Any
    scenario: dict[str, Any]
    placed: dict[str, Any]  # the device map the re-run produced
    entry: dict[str, Any]  # the raw entry, for the fields one kind has

    @property
    def passes(self) -> bool:
        return bool(self.verdict == VERDICT_FITS)

    @property
    def status(self) -> str:
        return STATUS_PASSES if self.passes else STATUS_FAILS

    @property
    def max_memory(self) -> dict[str, int] | None:
        return _memory(self.scenario.get("max_memory"))

    def device_map_arg(self, fit: FitFacts) -> str:
        return str(self.scenario.get("device_map") or fit.device_map)

    def remedy(self, **fields: Any) -> FitRemedy:
        """The remedy this run describes: its kind, status, verdict and device map, and ``fields``."""
        return FitRemedy(
            **{"kind": self.kind, "status": self.status, "verdict": self.verdict, "device_map": self.placed, **fields}
        )

    def keeping_device_map(self, fit: FitFacts, change: str, detail: str, quant: str | None = None) -> FitRemedy:
        """A remedy that keeps the user's device_map and changes one thing (an explicit max_memory, 4-bit):
        its title names the change and the map, and where the model lands when it fits."""
        arg = self.device_map_arg(fit)
        return self.remedy(
            quant=quant,
            device_map_arg=arg,
            max_memory=self.max_memory,
            title=f'{change} (device_map="{arg}")' + (f": fits on {_where(self.placed)}" if self.passes else ""),
            detail=detail,
            code=_call(fit, device_map=f'"{arg}"', max_memory=self.max_memory, quant=quant),
        )


def _sequential(fit: FitFacts, run: _Simulated) -> FitRemedy:
    return run.remedy(
        device_map_arg=DEVICE_MAP_SEQUENTIAL,
        max_memory=run.max_memory,
        title='device_map="sequential"' + (f" fits on {_where(run.placed)}" if run.passes else ""),
        detail="sequential fills each GPU to its budget in order, without get_balanced_memory's per-GPU caps.",
        code=_call(fit, device_map='"sequential"', max_memory=run.max_memory),
    )


def _max_memory(fit: FitFacts, run: _Simulated) -> FitRemedy:
    return run.keeping_device_map(
        fit,
        "pass max_memory explicitly",
        "With max_memory=None, from_pretrained takes 90% of the free memory it queries, and the bnb "
        "quantizer takes 90% again; an explicit max_memory is only reduced once.",
    )


def _explicit_map(fit: FitFacts, run: _Simulated) -> FitRemedy:
    origin = run.entry.get("origin")
    use = {str(k): int(v) for k, v in (run.entry.get("gpu_use") or {}).items()}
    usage = ", ".join(f"GPU {k}: {human(v)}" for k, v in sorted(use.items(), key=lambda kv: int(kv[0])) if k.isdigit())
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
    status = run.status
    if run.passes and over:
        status = STATUS_FAILS
        detail += (
            f" It leaves no room for the quantization state on GPU {', '.join(over)} "
            f"({human(state)} in all), so loading would run out of memory."
        )
    return run.remedy(
        status=status,
        gpu_use=use,
        title=f"pass an explicit device_map{headroom}" + (f" (on {_where(run.placed)}{fill})" if run.passes else ""),
        detail=detail,
        code=snippets.device_map_python(run.placed) + "\n" + _call(fit, device_map="device_map", max_memory=None),
    )


def _quant_4bit(fit: FitFacts, run: _Simulated) -> FitRemedy:
    return run.keeping_device_map(
        fit,
        "load in 4-bit instead of 8-bit",
        "4-bit counts 0.5 byte per quantized weight instead of 1; embeddings, lm_head and fused experts "
        "stay in the model dtype either way.",
        quant=QUANT_4BIT,
    )


def _gpu_hardware(fit: FitFacts, run: _Simulated) -> FitRemedy:
    """The smallest GPUs (REMEDY_MIN_GPU_MEMORY) or the fewest GPUs (REMEDY_MORE_GPUS) that fit."""
    per_gpu, gpus = int(run.entry.get("per_gpu_bytes") or 0), int(run.entry.get("gpus") or 0)
    field = run.entry.get("field")
    memory = _memory(run.scenario.get(field)) if field else None
    if run.kind == REMEDY_MIN_GPU_MEMORY:
        what = "max_memory" if field == "max_memory" else "free memory"
        title = f"{gpus} GPU{'s' if gpus != 1 else ''} with at least {human(per_gpu)} {what} each"
        detail = (
            f'The smallest per-GPU {what} (found to 0.1%) for which device_map="{fit.device_map}" '
            f"keeps every module on a GPU, with {gpus} GPU{'s' if gpus != 1 else ''}."
        )
    else:
        title = f"{gpus} GPUs of {human(per_gpu)} instead of {int(run.entry.get('original_gpus') or 1)}"
        detail = f'The fewest GPUs of this size for which device_map="{fit.device_map}" keeps every module on a GPU.'
    return run.remedy(
        per_gpu_bytes=per_gpu,
        gpus=gpus,
        max_memory=memory,
        device_map_arg=fit.device_map,
        title=title,
        detail=detail,
        code=_call(fit, device_map=f'"{fit.device_map}"', max_memory=memory) if field == "max_memory" else "",
    )


def _fp32_offload(fit: FitFacts, run: _Simulated) -> FitRemedy:
    cpu_bytes = int(run.entry.get("cpu_bytes") or 0)
    budget = run.entry.get("cpu_budget_bytes")
    disk = int(run.entry.get("disk_bytes") or 0)
    ok = run.verdict == VERDICT_FP32_OFFLOAD and (budget is None or cpu_bytes <= int(budget)) and not disk
    available = f" ({human(int(budget))} available)" if budget is not None else ""
    detail = (
        f"The modules mapped to cpu are not quantized (they stay in {fit.dtype or 'the model dtype'}) and "
        f"need {human(cpu_bytes)} of CPU RAM{available}; they run on the CPU, so generation is many times "
        "slower than on the GPU."
    )
    if disk:
        detail += f" {human(disk)} would go to disk, which also needs offload_folder=."
    return run.remedy(
        status=STATUS_PASSES if ok else STATUS_FAILS,
        cpu_bytes=cpu_bytes,
        title=f"llm_int8_enable_fp32_cpu_offload=True with a custom device_map ({human(cpu_bytes)} on the CPU, slow)",
        detail=detail,
        code=snippets.device_map_python(run.placed)
        + "\n"
        + _call(fit, device_map="device_map", max_memory=None, fp32_offload=True),
    )


#: How each kind of simulated remedy is described (a kind not here is dropped).
_DESCRIBERS: dict[str, Callable[[FitFacts, _Simulated], FitRemedy]] = {
    REMEDY_SEQUENTIAL: _sequential,
    REMEDY_MAX_MEMORY: _max_memory,
    REMEDY_EXPLICIT_MAP: _explicit_map,
    REMEDY_QUANT_4BIT: _quant_4bit,
    REMEDY_MIN_GPU_MEMORY: _gpu_hardware,
    REMEDY_MORE_GPUS: _gpu_hardware,
    REMEDY_FP32_OFFLOAD: _fp32_offload,
}


def _describe(fit: FitFacts, entry: dict[str, Any]) -> FitRemedy | None:
    kind = str(entry.get("kind"))
    if entry.get("verdict") == VERDICT_ERROR:
        return FitRemedy(
            kind=kind, status=STATUS_ERROR, title=f"{kind} could not be simulated", error=entry.get("error")
        )
    describer = _DESCRIBERS.get(kind)
    if describer is None:
        return None
    placed = {str(k): v for k, v in (entry.get("device_map") or {}).items()}
    return describer(fit, _Simulated(kind, entry.get("verdict"), entry.get("scenario") or {}, placed, entry))
