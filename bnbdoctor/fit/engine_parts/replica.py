"""The from_pretrained replica: the patient's stack imported, the model built on meta, placed by transformers.

:class:`Engine` follows ``PreTrainedModel.from_pretrained`` step by step with the patient's own
transformers: ``AutoConfig``, the model class, ``get_hf_quantizer``, ``_get_dtype``,
``get_init_context``, ``preprocess_model`` and ``_get_device_map``. A placement's verdict is read
from the map it computes, or from the dispatch ValueError it raises.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
import warnings
from typing import TYPE_CHECKING, Any

from ...fit_protocol import (
    BNB_REAL,
    BNB_STANDIN,
    DEVICE_MAP_AUTO,
    DTYPE_AUTO,
    ERROR_CONFIG,
    ERROR_NO_ACCELERATE,
    ERROR_NO_TORCH,
    ERROR_NO_TRANSFORMERS,
    ERROR_REMOTE_CODE,
    ERROR_UNKNOWN_ARCHITECTURE,
    ERROR_UNKNOWN_MODEL_TYPE,
    ERROR_UNSUPPORTED_TRANSFORMERS,
    QUANT_8BIT,
    QUANT_TYPE_NF4,
    RAISE_SITE_GET_DEVICE_MAP,
    RAISE_SITE_GET_HF_QUANTIZER,
    SUPPORTED_TRANSFORMERS_BELOW,
    SUPPORTED_TRANSFORMERS_MIN,
    VERDICT_ALL_CPU,
    VERDICT_FITS,
    VERDICT_FP32_OFFLOAD,
    VERDICT_RAISES,
)
from .common import (
    EngineError,
    device_from_json,
    import_required,
    jsonable_device,
    memory_from_json,
    memory_to_json,
    short,
    version_tuple,
)
from .recording import install_wrappers
from .standin import activate_standin, install_bnb_standin

if TYPE_CHECKING:
    from .common import Built, Json, Memory, Placement

#: transformers releases whose from_pretrained pipeline this script replicates (5.12 to 5.x).
SUPPORTED_MIN = SUPPORTED_TRANSFORMERS_MIN
SUPPORTED_BELOW = SUPPORTED_TRANSFORMERS_BELOW
DISPATCH_PREFIX = "Some modules are dispatched on the CPU or the disk"


class Engine:
    """One request's replica of from_pretrained; ``out`` is the answer it fills in."""

    torch: Any
    tia: Any  # transformers.integrations.accelerate
    mu: Any  # transformers.modeling_utils
    qauto: Any  # transformers.quantizers.auto
    BitsAndBytesConfig: Any
    ContextManagers: Any
    config: Any
    model_cls: Any
    bnb_mode: str
    bnb_error: str | None

    def __init__(self, request: Json, out: Json) -> None:
        self.request = request
        self.out = out
        self.timings: dict[str, Any] = out.setdefault("timings", {})
        self._builds: dict[tuple[str, bool, str], Built] = {}
        self.recording: Placement | None = None  # while a placement records its budgets
        self.detected: Memory | None = None  # {device: bytes} standing in for mem_get_info / psutil

    # .. imports ..............................................................................

    def import_stack(self) -> None:
        started = time.perf_counter()
        for path in reversed(self.request.get("sys_path_first") or []):
            sys.path.insert(0, path)
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
        warnings.simplefilter("ignore")
        versions = self.out["versions"]
        versions["python"] = sys.version.split()[0]
        torch = import_required("torch", ERROR_NO_TORCH)
        versions["torch"] = torch.__version__
        self.torch = torch
        transformers = import_required("transformers", ERROR_NO_TRANSFORMERS)
        versions["transformers"] = transformers.__version__
        self.out["transformers_location"] = os.path.dirname(os.path.dirname(os.path.abspath(transformers.__file__)))
        self.out["other_transformers"] = other_installs("transformers", self.out["transformers_location"])
        tv = version_tuple(transformers.__version__)
        if not (SUPPORTED_MIN <= tv[:2] < SUPPORTED_BELOW):
            raise EngineError(
                ERROR_UNSUPPORTED_TRANSFORMERS,
                f"transformers {transformers.__version__} is outside the range bnbdoctor fit replicates (5.12 to 5.x)",
                fallback=True,
            )
        self.timings["import"] = round(time.perf_counter() - started, 4)

    def import_rest(self) -> None:
        """accelerate, bitsandbytes (or the stand-in) and the transformers internals the engine calls."""
        started = time.perf_counter()
        import transformers

        versions = self.out["versions"]
        accelerate = import_required("accelerate", ERROR_NO_ACCELERATE)
        versions["accelerate"] = accelerate.__version__
        self.bnb_mode, self.bnb_error = self._import_bnb()
        try:
            import transformers.integrations.accelerate as tia
            import transformers.modeling_utils as mu
            import transformers.quantizers.auto as qauto
            import transformers.quantizers.quantizer_bnb_4bit as q4
            import transformers.quantizers.quantizer_bnb_8bit as q8
            from transformers import BitsAndBytesConfig
            from transformers.utils import ContextManagers  # type: ignore[attr-defined, unused-ignore]  # lazy

            self.tia, self.mu, self.qauto = tia, mu, qauto
            self.BitsAndBytesConfig, self.ContextManagers = BitsAndBytesConfig, ContextManagers
            needed = [
                (tia, "_get_device_map"),
                (tia, "get_balanced_memory"),
                (tia, "get_max_memory"),
                (tia, "infer_auto_device_map"),
                (tia, "compute_module_sizes"),
                (tia, "accelerate_max_memory"),
                (tia, "get_max_layer_size"),
                (mu, "_get_dtype"),
                (qauto, "get_hf_quantizer"),
            ]
            missing = [name for module, name in needed if not hasattr(module, name)]
            if missing:
                raise AttributeError(", ".join(missing))
        except Exception as exc:  # noqa: BLE001
            raise EngineError(
                ERROR_UNSUPPORTED_TRANSFORMERS,
                f"transformers {transformers.__version__} lacks a function bnbdoctor fit calls: {short(exc)}",
                fallback=True,
            ) from None
        if self.bnb_mode == BNB_STANDIN:
            activate_standin((q4, q8, qauto), sys.modules["bitsandbytes"])
        install_wrappers(self)
        self.timings["import_rest"] = round(time.perf_counter() - started, 4)

    def _import_bnb(self) -> tuple[str, str | None]:
        versions = self.out["versions"]
        if self.request.get("force_standin"):
            install_bnb_standin(self.torch)
            return BNB_STANDIN, "stand-in requested"
        try:
            import bitsandbytes

            versions["bitsandbytes"] = getattr(bitsandbytes, "__version__", None)
            if not (hasattr(bitsandbytes.nn, "Linear4bit") and hasattr(bitsandbytes.nn, "Linear8bitLt")):
                raise ImportError("bitsandbytes.nn has no Linear4bit / Linear8bitLt")
        except Exception as exc:  # noqa: BLE001 - missing or broken: both are why people run bnbdoctor
            for name in [n for n in sys.modules if n == "bitsandbytes" or n.startswith("bitsandbytes.")]:
                del sys.modules[name]
            install_bnb_standin(self.torch)
            return BNB_STANDIN, f"{type(exc).__name__}: {short(exc)}"
        try:
            from transformers.utils import (  # type: ignore[attr-defined, unused-ignore]  # exported lazily
                is_bitsandbytes_available,
            )

            if not is_bitsandbytes_available():
                install_bnb_standin(self.torch)
                return BNB_STANDIN, f"bitsandbytes {versions['bitsandbytes']} is older than this transformers accepts"
        except Exception:  # noqa: BLE001, S110 - the version check is advisory; transformers re-checks
            pass
        return BNB_REAL, None

    # .. the model .............................................................................

    def load_config(self) -> None:
        started = time.perf_counter()
        req = self.request
        from transformers import AutoConfig

        kwargs = {"trust_remote_code": bool(req.get("trust_remote_code")), "local_files_only": True}
        try:
            config = AutoConfig.from_pretrained(req["config_source"], **kwargs)
        except Exception as exc:
            text = str(exc)
            if "trust_remote_code" in text or "contains custom code" in text:
                raise EngineError(ERROR_REMOTE_CODE, short(exc)) from exc
            if (
                "does not recognize this architecture" in text
                or "Unrecognized model" in text
                or (isinstance(exc, KeyError))
            ):
                version = self.out["versions"]["transformers"]
                wanted = req.get("model_type")
                raise EngineError(
                    ERROR_UNKNOWN_MODEL_TYPE, f"transformers {version} does not know model_type {wanted!r}"
                ) from None
            raise EngineError(ERROR_CONFIG, f"transformers could not read the config: {short(exc)}") from exc
        self.config = config
        self.out["model_type"] = getattr(config, "model_type", None)
        self.timings["config"] = round(time.perf_counter() - started, 4)

    def load_class(self) -> None:
        self.model_cls = self._model_class(self.config)
        self.out["model_class"] = self.model_cls.__name__

    def _model_class(self, config: Any) -> Any:
        import transformers

        req = self.request
        auto_map = getattr(config, "auto_map", None) or {}
        architectures = list(getattr(config, "architectures", None) or [])
        if req.get("trust_remote_code") and auto_map:
            from transformers.dynamic_module_utils import get_class_from_dynamic_module

            keys = [
                k
                for k in ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSeq2SeqLM", "AutoModel")
                if k in auto_map
            ] + [k for k in auto_map if k.startswith("AutoModel")]
            if keys:
                ref = auto_map[keys[0]]
                ref = ref[0] if isinstance(ref, (list, tuple)) else ref
                return get_class_from_dynamic_module(ref, req["model_dir"], local_files_only=True)
        for name in architectures:
            cls = getattr(transformers, name, None)
            if isinstance(cls, type):
                return cls
        from transformers import AutoModelForCausalLM

        try:
            return AutoModelForCausalLM._model_mapping[type(config)]
        except Exception:  # noqa: BLE001
            version = self.out["versions"]["transformers"]
            names = ", ".join(architectures) or "(none)"
            raise EngineError(
                ERROR_UNKNOWN_ARCHITECTURE,
                f"transformers {version} has no model class {names} for "
                f"model_type {getattr(config, 'model_type', None)!r}",
            ) from None

    def quant_config(self, quant: str, fp32_offload: bool) -> Any:
        req = self.request
        if req.get("pre_quantized"):
            return None  # the checkpoint's own quantization_config is used, as from_pretrained does
        kwargs: dict[str, Any] = {"llm_int8_enable_fp32_cpu_offload": bool(fp32_offload)}
        if req.get("skip_modules"):
            kwargs["llm_int8_skip_modules"] = list(req["skip_modules"])
        if quant == QUANT_8BIT:
            kwargs["load_in_8bit"] = True
        else:
            kwargs["load_in_4bit"] = True
            kwargs["bnb_4bit_use_double_quant"] = bool(req.get("double_quant"))
            kwargs["bnb_4bit_quant_type"] = req.get("quant_type") or QUANT_TYPE_NF4
        return self.BitsAndBytesConfig(**kwargs)

    def build(self, quant: str, fp32_offload: bool = False, device_map: Any = DEVICE_MAP_AUTO) -> Built:
        """The meta-device model after the quantizer's preprocessing, as from_pretrained builds it.

        Returns (model, hf_quantizer, dtype) or raises ValueError from get_hf_quantizer (raise
        site (a): a dict device_map with cpu/disk entries)."""
        key = (
            quant,
            bool(fp32_offload),
            json.dumps(device_map, sort_keys=True) if isinstance(device_map, dict) else "string",
        )
        if key in self._builds:
            return self._builds[key]
        started = time.perf_counter()
        mu, req = self.mu, self.request
        config = copy.deepcopy(self.config)
        hf_quantizer, config, device_map_after = self.qauto.get_hf_quantizer(
            config, self.quant_config(quant, fp32_offload), device_map, True, {}
        )
        dtype_arg = req.get("dtype") or DTYPE_AUTO
        config, dtype = mu._get_dtype(
            dtype_arg, req.get("checkpoint_files"), config, req.get("sharded_metadata"), None, True, hf_quantizer
        )
        is_quantized = hf_quantizer is not None
        contexts = self.model_cls.get_init_context(dtype, is_quantized, False, False)
        config = copy.deepcopy(config)
        with self.ContextManagers(contexts):
            model = self.model_cls(config)
            if hf_quantizer is not None:
                hf_quantizer.preprocess_model(
                    model=model,
                    dtype=dtype,
                    device_map=device_map_after,
                    checkpoint_files=req.get("checkpoint_files"),
                    use_kernels=False,
                )
        built = (model, hf_quantizer, dtype)
        self._builds[key] = built
        self.timings["build.{}{}".format(quant, "+fp32" if fp32_offload else "")] = round(
            time.perf_counter() - started, 4
        )
        return built

    # .. placement .............................................................................

    def place(
        self, built: Built, device_map: Any, max_memory: Memory | None, detected: Memory | None, trace: bool = False
    ) -> Placement:
        """Run transformers' _get_device_map; return the verdict and what was recorded."""
        model, hf_quantizer, _ = built
        rec: Placement = {"trace": trace}
        self.recording = rec
        self.detected = detected
        original_adjust: Any = hf_quantizer.adjust_max_memory if hf_quantizer is not None else None

        def adjust(mm: Any) -> Any:
            result = original_adjust(mm)
            rec["adjusted"] = dict(result)
            return result

        if hf_quantizer is not None:
            hf_quantizer.adjust_max_memory = adjust
        error = None
        try:
            result = self.tia._get_device_map(model, device_map, copy.deepcopy(max_memory), hf_quantizer)
        except ValueError as exc:
            if DISPATCH_PREFIX not in str(exc):
                raise
            error = str(exc)
            result = rec.get("map")
        finally:
            self.recording = None
            self.detected = None
            if hf_quantizer is not None:
                del hf_quantizer.adjust_max_memory
        rec["result"] = dict(result) if result is not None else {}
        rec["error"] = error
        rec["verdict"] = verdict_of(rec["result"], error, hf_quantizer)
        return rec

    def run_scenario(self, scenario: Json, trace: bool = False) -> Placement:
        """One placement: a string device_map through _get_device_map, or a dict through
        get_hf_quantizer's validation (raise site a) and back unchanged."""
        quant = scenario.get("quant") or self.request["quant"]
        fp32 = bool(scenario.get("fp32_offload"))
        device_map = scenario.get("device_map") or DEVICE_MAP_AUTO
        max_memory = memory_from_json(scenario.get("max_memory"))
        detected = memory_from_json(scenario.get("detected"))
        if detected is not None and "cpu" not in detected and not scenario.get("no_cpu"):
            import psutil  # accelerate's own source for the CPU budget when max_memory is None

            detected["cpu"] = int(psutil.virtual_memory().available)
            scenario["detected"] = memory_to_json(detected)
        if isinstance(device_map, dict):
            device_map = {k: device_from_json(v) for k, v in device_map.items()}
            try:
                built = self.build(quant, fp32, device_map)
            except ValueError as exc:
                if DISPATCH_PREFIX not in str(exc):
                    raise
                return {
                    "verdict": VERDICT_RAISES,
                    "error": str(exc),
                    "result": device_map,
                    "raise_site": RAISE_SITE_GET_HF_QUANTIZER,
                }
            rec: Placement = {"result": dict(device_map), "error": None, "raise_site": None}
            rec["verdict"] = verdict_of(rec["result"], None, built[1])
            rec["built"] = built
            return rec
        built = self.build(quant, fp32)
        rec = self.place(built, device_map, max_memory, detected, trace=trace)
        rec["raise_site"] = RAISE_SITE_GET_DEVICE_MAP if rec["error"] else None
        rec["built"] = built
        return rec


def verdict_of(device_map: dict[str, Any], error: str | None, hf_quantizer: Any) -> str:
    if error:
        return VERDICT_RAISES
    values = set(device_map.values())
    if not values:
        return VERDICT_FITS
    if values == {"cpu"}:
        return VERDICT_ALL_CPU
    if "cpu" in values or "disk" in values:
        return VERDICT_FP32_OFFLOAD
    return VERDICT_FITS


def scenario_result(rec: Placement) -> Json:
    """A placement's verdict, error and device map as the answer carries them."""
    return {
        "verdict": rec["verdict"],
        "error": rec.get("error"),
        "device_map": {k: jsonable_device(v) for k, v in rec["result"].items()},
    }


def other_installs(name: str, active_location: str) -> list[dict[str, str]]:
    """Other copies of ``name`` on sys.path (a PYTHONPATH folder shadowing site-packages, ...)."""
    found = []
    seen = set()
    prefix = name.replace("-", "_").lower() + "-"
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            listing = os.listdir(entry)
        except OSError:
            continue
        for item in listing:
            low = item.lower()
            if low.startswith(prefix) and low.endswith(".dist-info"):
                version = item[len(prefix) : -len(".dist-info")]
                location = os.path.abspath(entry)
                if location == active_location or (location, version) in seen:
                    continue
                if os.path.isdir(os.path.join(entry, name)):
                    seen.add((location, version))
                    found.append({"version": version, "location": location})
    return found
