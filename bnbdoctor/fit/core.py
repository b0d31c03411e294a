"""``run_fit``: options in, :class:`~bnbdoctor.report.Report` out, with no UI (the CLI and a TUI tab call it).

1. Check the options and resolve MODEL (one-line :class:`FitInputError` on bad input).
2. Decide the memory: the user's ``max_memory``, simulated GPUs (``--gpus``) or the GPUs the gpu
   probe detects, as the free memory from_pretrained would query.
3. Run the engine in the patient interpreter; fall back to the approximate mode when it cannot
   run the user's transformers.
4. When the installed transformers predates the under-packing fixes, re-run the placement with a
   newer transformers if one is available locally, to verify that upgrading changes the verdict.
5. Run the placement rules (BNB4xx) on the facts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from packaging.version import InvalidVersion, Version

from bnbdoctor.facts import Facts, FitDevice, FitFacts, FitRemedy, FitTensor
from bnbdoctor.fit import approx, remedies
from bnbdoctor.fit.engine import EngineAnswer, run_engine
from bnbdoctor.fit.model_input import ModelInput, resolve_model
from bnbdoctor.fit.options import FitInputError, FitOptions, validate
from bnbdoctor.fit_protocol import (
    BALANCED_MAPS,
    BNB_REAL,
    DTYPE_AUTO,
    ENGINE_APPROXIMATE,
    ENGINE_STANDIN,
    ENGINE_TRANSFORMERS,
    ERROR_REMOTE_CODE,
    INPUT_ERRORS,
    QUANT_4BIT,
    QUANT_TYPE_FP4,
    REMEDY_ORDER,
    REMEDY_UPGRADE_TRANSFORMERS,
    STATUS_FAILS,
    STATUS_PASSES,
    STATUS_UNVERIFIED,
    VERDICT_ALL_CPU,
    VERDICT_FITS,
    VERDICT_RAISES,
    VERDICT_UNKNOWN,
)
from bnbdoctor.hosts.base import Host
from bnbdoctor.modelfiles.interpreter import choose_python
from bnbdoctor.report import Report, build_report
from bnbdoctor.serde import from_dict

#: transformers releases that fixed get_balanced_memory's under-packing (transformers #46823).
UNDERPACKING_FIXES = (
    ("5.14.0", "#47203", "the balanced buffer covers the largest block of every no-split class"),
    ("5.18.0", "#47211", "the balanced buffer also covers the largest leaf (embed_tokens, lm_head)"),
)

Progress = Callable[[str], None]


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def detect_gpus(host: Host) -> tuple[dict[str, int], str]:
    """Free memory of the visible NVIDIA GPUs, from the gpu probe (NVML)."""
    from bnbdoctor.probes.base import ProbeContext
    from bnbdoctor.probes.gpu import gather_gpu

    gpu = gather_gpu(ProbeContext(host))
    visible = [d for d in gpu.devices if d.visible]
    free = {}
    for position, device in enumerate(visible):  # CUDA renumbers the visible GPUs from 0
        amount = device.memory_free_bytes if device.memory_free_bytes is not None else device.memory_total_bytes
        if amount:
            free[str(position)] = int(amount)
    if not free:
        why = gpu.nvml_error or "no visible NVIDIA GPU"
        raise FitInputError(
            f"no NVIDIA GPU detected on this machine ({why}); simulate the target with "
            "--gpus 24GiB,24GiB or pass --max-memory 0=24GiB,cpu=64GiB"
        )
    names = ", ".join(f"{d.name}" for d in visible)
    return free, names


MemoryPlan = tuple[dict[str, int] | None, dict[str, int] | None, str, list[str]]


def _memory_plan(host: Host, options: FitOptions) -> MemoryPlan:
    """(max_memory, free memory, source, notes), from validated options (sizes already parsed to bytes)."""
    notes = []
    max_memory = cast("dict[str, int] | None", options.max_memory)
    gpus = cast("list[int] | None", options.gpus)
    if max_memory:
        if gpus:
            notes.append(
                "--gpus is ignored for the placement: from_pretrained does not query the GPUs when max_memory is given"
            )
        return dict(max_memory), None, "max_memory", notes
    if gpus:
        free = {str(i): int(size) for i, size in enumerate(gpus)}
        source = "--gpus"
    else:
        free, names = detect_gpus(host)
        source = "detected"
        notes.append(
            f"free memory of the GPUs detected here ({names}) as NVML reports it now; from_pretrained "
            "reads it after creating its CUDA context, so its figure is lower by the context's size"
        )
    if options.cpu_memory is not None:
        free["cpu"] = cast(int, options.cpu_memory)
    return None, free, source, notes


def _quant(options: FitOptions, model: ModelInput, notes: list[str]) -> tuple[str, bool, str]:
    if model.pre_quantized:
        notes.append(
            f"the checkpoint is pre-quantized with bitsandbytes ({model.pre_quantized}): from_pretrained uses "
            "its quantization_config and ignores a BitsAndBytesConfig passed to it"
            + (
                " (--quant, --double-quant, --fp32-offload and --skip-modules have no effect)"
                if options.quant or options.double_quant or options.fp32_offload or options.skip_modules
                else ""
            )
        )
        return model.pre_quantized, model.pre_double_quant, model.pre_quant_type or QUANT_TYPE_FP4
    return options.quant or QUANT_4BIT, options.double_quant, options.quant_type


def build_request(
    options: FitOptions,
    model: ModelInput,
    max_memory: dict[str, int] | None,
    free: dict[str, int] | None,
    quant: str,
    double_quant: bool,
    quant_type: str,
    dtype: str,
) -> dict[str, Any]:
    in_folder = model.config_path.replace("\\", "/").rsplit("/", 1)[-1] == "config.json"
    return {
        "config_source": model.model_dir if in_folder else model.config_path,
        "model_dir": model.model_dir,
        "model_type": model.model_type,
        "trust_remote_code": options.trust_remote_code,
        "quant": quant,
        "double_quant": double_quant,
        "quant_type": quant_type,
        "skip_modules": list(options.skip_modules),
        "pre_quantized": bool(model.pre_quantized),
        "dtype": dtype,
        "checkpoint_files": model.checkpoint_files or None,
        "force_standin": options.force_standin,
        "details": True,
        "remedies": options.remedies,
        "scenarios": [
            {
                "id": "main",
                "device_map": options.device_map,
                "max_memory": max_memory,
                "detected": free,
                "fp32_offload": options.fp32_offload,
            }
        ],
    }


def _engine_facts(fit: FitFacts, answer: EngineAnswer) -> list[dict[str, Any]]:
    """Fill ``fit`` from the engine's answer; return the raw remedies."""
    data = answer.data
    item = (data.get("results") or [{}])[0]
    fit.engine = ENGINE_TRANSFORMERS if data.get("bnb_mode") == BNB_REAL else ENGINE_STANDIN
    if data.get("bnb_mode") != BNB_REAL:
        fit.engine_note = (
            f"bitsandbytes could not be used ({data.get('bnb_error')}); a stand-in selected the "
            "modules transformers would quantize"
        )
    fit.versions = {k: str(v) for k, v in (data.get("versions") or {}).items() if v}
    fit.model_class = data.get("model_class")
    fit.verdict = item.get("verdict", VERDICT_UNKNOWN)
    fit.error_text = item.get("error")
    fit.raise_site = item.get("raise_site")
    fit.placement = dict(item.get("device_map") or {})
    if item.get("free_memory") is not None:
        fit.free_memory = {str(k): int(v) for k, v in item["free_memory"].items()}
    fit.devices = [from_dict(FitDevice, d) for d in item.get("devices") or []]
    inv = item.get("inventory") or {}
    fit.model_bytes = inv.get("model_bytes")
    fit.quantized_bytes = inv.get("quantized_bytes")
    fit.unquantized_bytes = inv.get("unquantized_bytes")
    fit.unquantized_by_kind = {str(k): int(v) for k, v in (inv.get("unquantized_by_kind") or {}).items()}
    fit.quant_state_bytes = inv.get("quant_state_bytes")
    fit.largest_unquantized = [from_dict(FitTensor, t) for t in inv.get("largest_unquantized") or []]
    fit.no_split_modules = list(inv.get("no_split_modules") or [])
    if inv.get("dtype"):
        fit.dtype = inv["dtype"]
    balance = item.get("balance") or {}
    fit.biggest_no_split = balance.get("biggest_no_split")
    fit.biggest_no_split_bytes = balance.get("biggest_no_split_bytes")
    fit.biggest_leaf = balance.get("biggest_leaf")
    fit.biggest_leaf_bytes = balance.get("biggest_leaf_bytes")
    fit.timings.update({f"engine.{k}": float(v) for k, v in (data.get("timings") or {}).items()})
    fit.peak_rss_bytes = data.get("peak_rss_bytes")
    return list(item.get("remedies") or [])


def _approximate(host: Host, fit: FitFacts, model: ModelInput, why: str) -> None:
    fit.engine = ENGINE_APPROXIMATE
    fit.engine_note = why
    sizes = approx.estimate(
        host,
        model.config,
        model.checkpoint_files,
        fit.quant,
        fit.dtype if fit.dtype not in (None, DTYPE_AUTO) else None,
        fit.double_quant,
    )
    if sizes is None:
        fit.verdict = VERDICT_UNKNOWN
        fit.notes.append("neither the safetensors headers nor the config give the model's sizes")
        return
    fit.notes.append(f"approximate sizes from the {sizes['source']}, by tensor name; no device map was computed")
    fit.model_bytes = sizes["model_bytes"]
    fit.quantized_bytes = sizes["quantized_bytes"]
    fit.unquantized_bytes = sizes["unquantized_bytes"]
    fit.unquantized_by_kind = sizes["unquantized_by_kind"]
    fit.quant_state_bytes = sizes["quant_state_bytes"]
    fit.largest_unquantized = sizes["largest_unquantized"]
    budgets = fit.max_memory if fit.max_memory is not None else (fit.free_memory or {})
    fit.verdict, fit.devices = approx.approximate_verdict(
        sizes["model_bytes"], sizes["largest_bytes"], budgets, fit.device_map, fit.max_memory is None
    )


def _upgrade_check(
    host: Host,
    options: FitOptions,
    fit: FitFacts,
    answer: EngineAnswer,
    python: str,
    request: dict[str, Any],
    progress: Progress | None,
) -> FitRemedy | None:
    """Claim "upgrade transformers" only when a newer transformers, run here, changes the verdict."""
    installed = _version(fit.versions.get("transformers"))
    if installed is None or fit.device_map not in BALANCED_MAPS or fit.verdict not in (VERDICT_RAISES, VERDICT_ALL_CPU):
        return None
    missing = [(v, pr, what) for v, pr, what in UNDERPACKING_FIXES if installed < Version(v)]
    if not missing:
        return None
    fixes = ", ".join(f"{pr} (in {v})" for v, pr, _ in missing)
    candidates: list[tuple[Version | None, str]] = []
    for other in answer.data.get("other_transformers") or []:
        version = _version(other.get("version"))
        if version is not None and version > installed:
            candidates.append((version, str(other.get("location"))))
    for folder in options.compare_transformers:
        candidates.append((None, folder))
    candidates.sort(key=lambda c: c[0] or Version("0"), reverse=True)
    title = f"upgrade transformers (installed {installed} lacks {fixes})"
    if not candidates:
        return FitRemedy(
            kind=REMEDY_UPGRADE_TRANSFORMERS,
            status=STATUS_UNVERIFIED,
            title=title,
            detail=(
                "Whether a newer transformers changes the verdict cannot be verified offline: no "
                "newer transformers is available locally. To check, install one into a folder and "
                "re-run: pip install --target DIR transformers, then "
                "bnbdoctor fit ... --compare-transformers DIR."
            ),
            transformers_version=str(installed),
        )
    tried = []
    for _, location in candidates:
        if progress:
            progress(f"bnbdoctor fit: re-running the placement with the transformers in {location}")
        again = dict(request, details=False, remedies=False, sys_path_first=[location])
        result = run_engine(host, python, again, options.timeout_s)
        got = result.data.get("versions", {}).get("transformers") if result.ok else None
        if not result.ok:
            tried.append(f"{location}: {result.error}")
            continue
        item = (result.data.get("results") or [{}])[0]
        verdict = item.get("verdict")
        if verdict == VERDICT_FITS:
            placed = dict(item.get("device_map") or {})
            return FitRemedy(
                kind=REMEDY_UPGRADE_TRANSFORMERS,
                status=STATUS_PASSES,
                verdict=verdict,
                device_map=placed,
                title=f"upgrade transformers to {got} or newer: verified, it fits",
                detail=(
                    f"transformers {got} (found in {location}) places the same model with the same arguments "
                    f"without the error; the installed {installed} lacks {fixes}."
                ),
                code=f'pip install -U "transformers>={got}"',
                transformers_version=got,
                transformers_location=location,
            )
        tried.append(f"transformers {got} in {location}: {verdict}")
    return FitRemedy(
        kind=REMEDY_UPGRADE_TRANSFORMERS,
        status=STATUS_FAILS,
        title=title,
        detail="A newer transformers does not change the verdict: " + "; ".join(tried),
        transformers_version=str(installed),
    )


def run_fit(options: FitOptions, host: Host | None = None, progress: Progress | None = None) -> Report:
    """Predict the placement of one bnb-quantized from_pretrained call; UI-independent.

    Raises :class:`FitInputError` (one line) for bad input; everything else is in the report."""
    started = time.perf_counter()
    options = validate(options)
    if host is None:
        from bnbdoctor.hosts.live import LiveHost

        host = LiveHost()
    model = resolve_model(host, options.model, options.trust_remote_code)
    if progress:
        progress("bnbdoctor fit: choosing the Python whose transformers to run")
    python, selected_by = choose_python(host, options.python, FitInputError)
    max_memory, free, source, notes = _memory_plan(host, options)
    quant, double_quant, quant_type = _quant(options, model, notes)
    dtype = options.dtype or DTYPE_AUTO
    if dtype == DTYPE_AUTO and not model.config_dtype and not model.checkpoint_files:
        dtype = "float32"
        notes.append(
            "config.json names no dtype and there are no weights to read it from: float32 assumed (pass --dtype)"
        )
    fit = FitFacts(
        model=options.model,
        config_path=model.config_path,
        model_dir=model.model_dir,
        model_type=model.model_type,
        architecture=model.architecture,
        quant=quant,
        quant_type=quant_type if quant == QUANT_4BIT else None,
        double_quant=double_quant,
        pre_quantized=bool(model.pre_quantized),
        fp32_offload=options.fp32_offload,
        skip_modules=list(options.skip_modules),
        dtype=dtype if dtype != DTYPE_AUTO else model.config_dtype,
        device_map=options.device_map,
        max_memory=max_memory,
        memory_source=source,
        free_memory=free,
        python=python,
        python_selected_by=selected_by,
        notes=notes,
    )
    request = build_request(options, model, max_memory, free, quant, double_quant, quant_type, dtype)
    if progress:
        progress(f"bnbdoctor fit: building {options.model} on the meta device with {python}")
    answer = run_engine(host, python, request, options.timeout_s)
    fit.timings["engine.wall"] = round(answer.duration_s, 4)
    if answer.ok:
        raw = _engine_facts(fit, answer)
        converted = remedies.convert(fit, raw)
        upgrade = _upgrade_check(host, options, fit, answer, python, request, progress)
        if upgrade is not None:
            converted.append(upgrade)
            converted.sort(key=lambda r: REMEDY_ORDER.index(r.kind) if r.kind in REMEDY_ORDER else 99)
        fit.remedies = converted
    elif answer.error_kind in INPUT_ERRORS:
        message = answer.error or answer.error_kind
        if answer.error_kind == ERROR_REMOTE_CODE and not options.trust_remote_code:
            message = (
                f"{model.config_path}: the model needs its own code (trust_remote_code); "
                "pass --trust-remote-code to run it"
            )
        raise FitInputError(message)
    else:
        fit.versions = {k: str(v) for k, v in (answer.data.get("versions") or {}).items() if v}
        why = answer.error or "the engine did not answer"
        _approximate(host, fit, model, f"the placement engine could not run: {why}")
    fit.timings["total"] = round(time.perf_counter() - started, 4)
    facts = Facts(source={"kind": "fit", "label": options.model}, fit=fit)
    from bnbdoctor.rules import all_rules
    from bnbdoctor.rules.engine import FIT, run_rules

    report = build_report(facts, run_rules(facts, all_rules(), FIT), started)
    report.timings.update(fit.timings)
    return report
