"""Runs inside the *patient* interpreter: predicts where ``from_pretrained`` puts a bnb-quantized model.

bnbdoctor sends this file's source, followed by one JSON request, to ``python -B -c``. The script
imports the patient's own torch, transformers and accelerate, builds the model on the meta device
exactly as ``PreTrainedModel.from_pretrained`` does (``get_hf_quantizer``, ``_get_dtype``,
``get_init_context``, the model class, ``preprocess_model``) and calls the same
``transformers.integrations.accelerate._get_device_map``. It never loads a weight, never touches a
GPU (``CUDA_VISIBLE_DEVICES`` is emptied before torch is imported) and never uses the network.

Only transformers' own functions decide sizes and placement. This script wraps a few of them
(``get_max_memory``, ``get_balanced_memory``, ``infer_auto_device_map``, the quantizer's
``adjust_max_memory``) to record the budgets they compute, and patches ``accelerate_max_memory`` to
stand in for ``torch.cuda.mem_get_info`` when GPUs are simulated. When bitsandbytes is missing or
broken, a stand-in module provides ``bitsandbytes.nn.Linear4bit`` / ``Linear8bitLt`` as plain
``nn.Linear`` subclasses, so transformers' ``replace_with_bnb_linear`` selects the same modules.

The answer is one line on stdout: ``@@BNBDOCTOR-FIT@@`` followed by a JSON object.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
import types
import warnings

SCRIPT_VERSION = 1
MARKER = "@@BNBDOCTOR-FIT@@"
#: transformers releases whose from_pretrained pipeline this script replicates (5.12 to 5.x).
SUPPORTED_MIN = (5, 12)
SUPPORTED_BELOW = (6, 0)
#: Quantization state that transformers does not count: NF4/FP4 absmax (fp32 per 64 weights)
#: and, with double quant, 8-bit absmax plus one fp32 per 256 blocks (measured, bnb 0.50.2).
QUANT_STATE_4BIT = 0.0625
QUANT_STATE_4BIT_DOUBLE = 0.0159
DISPATCH_PREFIX = "Some modules are dispatched on the CPU or the disk"
LARGEST_TENSORS = 8


class EngineError(Exception):
    """A failure the host should report as ``kind``; ``fallback`` asks for the approximate mode."""

    def __init__(self, kind, message, fallback=False):
        super().__init__(message)
        self.kind = kind
        self.fallback = fallback


def _version_tuple(text):
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
        if not piece.isdigit():
            break
    return tuple(parts)


def _jsonable_device(device):
    return device if isinstance(device, int) else str(device)


def _device_key(device):
    return str(device)


# -- the stand-in for bitsandbytes ------------------------------------------------------------


def _install_bnb_standin(torch):
    """A ``bitsandbytes`` module whose Linear4bit/Linear8bitLt are plain nn.Linear subclasses.

    transformers only needs the classes to exist (``replace_with_bnb_linear`` constructs them on
    meta, ``param_needs_quantization`` tests ``isinstance``); shapes and dtypes of their tensors
    are those of nn.Linear, as in bitsandbytes before the weights are quantized."""

    class Linear4bit(torch.nn.Linear):
        def __init__(self, input_features, output_features, bias=True, compute_dtype=None,
                     compress_statistics=True, quant_type="fp4", quant_storage=None, device=None, **kwargs):
            super().__init__(input_features, output_features, bias, device=device)

    class Linear8bitLt(torch.nn.Linear):
        def __init__(self, input_features, output_features, bias=True, has_fp16_weights=True,
                     threshold=0.0, index=None, device=None, **kwargs):
            super().__init__(input_features, output_features, bias, device=device)

    import importlib.machinery

    bnb = types.ModuleType("bitsandbytes")
    bnb_nn = types.ModuleType("bitsandbytes.nn")
    bnb.__spec__ = importlib.machinery.ModuleSpec("bitsandbytes", None, is_package=True)
    bnb_nn.__spec__ = importlib.machinery.ModuleSpec("bitsandbytes.nn", None)
    bnb.__path__ = []
    bnb_nn.Linear4bit = Linear4bit
    bnb_nn.Linear8bitLt = Linear8bitLt
    bnb.nn = bnb_nn
    bnb.__version__ = "0.0.0+bnbdoctor-standin"
    bnb.supported_torch_devices = {"cpu", "cuda"}
    bnb.__bnbdoctor_standin__ = True
    sys.modules["bitsandbytes"] = bnb
    sys.modules["bitsandbytes.nn"] = bnb_nn
    return bnb


def _activate_standin(tf_modules, bnb):
    """Let transformers' own bnb code run against the stand-in: its availability checks are
    answered yes and the backend check (which needs a real device list) is skipped."""
    import transformers.integrations.bitsandbytes as tib
    from transformers import integrations

    tib.bnb = bnb
    integrations.validate_bnb_backend_availability = lambda raise_exception=False: True
    tib.validate_bnb_backend_availability = integrations.validate_bnb_backend_availability
    for module in tf_modules:
        if hasattr(module, "is_bitsandbytes_available"):
            module.is_bitsandbytes_available = lambda *args, **kwargs: True


# -- the engine -------------------------------------------------------------------------------


_ACTIVE = [None]


class Engine:
    def __init__(self, request, out):
        self.request = request
        self.out = out
        self.timings = out.setdefault("timings", {})
        self._builds = {}
        self.recording = None  # dict while a placement records its budgets
        self.detected = None  # {device: bytes} standing in for mem_get_info / psutil

    # .. imports ..............................................................................

    def import_stack(self):
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
        try:
            import torch
        except Exception as exc:  # noqa: BLE001
            raise EngineError("no_torch", f"torch cannot be imported: {_short(exc)}", fallback=True)
        versions["torch"] = torch.__version__
        self.torch = torch
        try:
            import transformers
        except Exception as exc:  # noqa: BLE001
            raise EngineError("no_transformers", f"transformers cannot be imported: {_short(exc)}", fallback=True)
        versions["transformers"] = transformers.__version__
        self.out["transformers_location"] = os.path.dirname(os.path.dirname(os.path.abspath(transformers.__file__)))
        self.out["other_transformers"] = _other_installs("transformers", self.out["transformers_location"])
        tv = _version_tuple(transformers.__version__)
        if not (SUPPORTED_MIN <= tv[:2] < SUPPORTED_BELOW):
            raise EngineError(
                "unsupported_transformers",
                f"transformers {transformers.__version__} is outside the range bnbdoctor fit replicates (5.12 to 5.x)",
                fallback=True,
            )
        self.timings["import"] = round(time.perf_counter() - started, 4)

    def import_rest(self):
        """accelerate, bitsandbytes (or the stand-in) and the transformers internals the engine calls."""
        started = time.perf_counter()
        import transformers

        versions = self.out["versions"]
        try:
            import accelerate
        except Exception as exc:  # noqa: BLE001
            raise EngineError("no_accelerate", f"accelerate cannot be imported: {_short(exc)}", fallback=True)
        versions["accelerate"] = accelerate.__version__
        self.bnb_mode, self.bnb_error = self._import_bnb()
        try:
            import transformers.integrations.accelerate as tia
            import transformers.modeling_utils as mu
            import transformers.quantizers.auto as qauto
            import transformers.quantizers.quantizer_bnb_4bit as q4
            import transformers.quantizers.quantizer_bnb_8bit as q8
            from transformers import BitsAndBytesConfig
            from transformers.utils import ContextManagers

            self.tia, self.mu, self.qauto = tia, mu, qauto
            self.BitsAndBytesConfig, self.ContextManagers = BitsAndBytesConfig, ContextManagers
            needed = [(tia, "_get_device_map"), (tia, "get_balanced_memory"), (tia, "get_max_memory"),
                      (tia, "infer_auto_device_map"), (tia, "compute_module_sizes"), (tia, "accelerate_max_memory"),
                      (tia, "get_max_layer_size"), (mu, "_get_dtype"), (qauto, "get_hf_quantizer")]
            missing = [name for module, name in needed if not hasattr(module, name)]
            if missing:
                raise AttributeError(", ".join(missing))
        except Exception as exc:  # noqa: BLE001
            raise EngineError("unsupported_transformers",
                              f"transformers {transformers.__version__} lacks a function bnbdoctor fit calls: "
                              f"{_short(exc)}", fallback=True) from None
        if self.bnb_mode == "standin":
            _activate_standin((q4, q8, qauto), sys.modules["bitsandbytes"])
        self._install_wrappers()
        self.timings["import_rest"] = round(time.perf_counter() - started, 4)

    def _import_bnb(self):
        versions = self.out["versions"]
        if self.request.get("force_standin"):
            _install_bnb_standin(self.torch)
            return "standin", "stand-in requested"
        try:
            import bitsandbytes

            versions["bitsandbytes"] = getattr(bitsandbytes, "__version__", None)
            if not (hasattr(bitsandbytes.nn, "Linear4bit") and hasattr(bitsandbytes.nn, "Linear8bitLt")):
                raise ImportError("bitsandbytes.nn has no Linear4bit / Linear8bitLt")
        except Exception as exc:  # noqa: BLE001 - missing or broken: both are why people run bnbdoctor
            for name in [n for n in sys.modules if n == "bitsandbytes" or n.startswith("bitsandbytes.")]:
                del sys.modules[name]
            _install_bnb_standin(self.torch)
            return "standin", f"{type(exc).__name__}: {_short(exc)}"
        try:
            from transformers.utils import is_bitsandbytes_available

            if not is_bitsandbytes_available():
                _install_bnb_standin(self.torch)
                return "standin", f"bitsandbytes {versions['bitsandbytes']} is older than this transformers accepts"
        except Exception:  # noqa: BLE001, S110 - the version check is advisory; transformers re-checks
            pass
        return "real", None

    # .. recording wrappers ....................................................................

    def _install_wrappers(self):
        _ACTIVE[0] = self
        if getattr(self.tia, "_bnbdoctor_wrapped", False):
            return
        tia = self.tia

        class _Current:  # the engine of the request being answered (one process may answer several)
            def __getattr__(self, name):
                return getattr(_ACTIVE[0], name)

            def __setattr__(self, name, value):
                setattr(_ACTIVE[0], name, value)

        engine = _Current()
        original_accelerate_max_memory = tia.accelerate_max_memory
        original_get_max_memory = tia.get_max_memory
        original_balanced = tia.get_balanced_memory
        original_infer = tia.infer_auto_device_map

        def accelerate_max_memory(max_memory=None):
            if max_memory is None and engine.detected is not None:
                return dict(engine.detected)
            return original_accelerate_max_memory(max_memory)

        def get_max_memory(max_memory=None):
            result = original_get_max_memory(max_memory)
            rec = engine.recording
            if rec is not None and "user" not in rec:
                rec["user"] = dict(result)
            return result

        def get_balanced_memory(*args, **kwargs):
            result = original_balanced(*args, **kwargs)
            if engine.recording is not None:
                engine.recording["balanced"] = dict(result)
            return result

        def infer_auto_device_map(model, *args, **kwargs):
            rec = engine.recording
            if rec is not None:
                budget = kwargs.get("max_memory", args[0] if args else None)
                rec["budget"] = dict(budget) if budget is not None else None
                rec["no_split"] = list(kwargs.get("no_split_module_classes") or [])
                if rec.get("trace"):
                    detailed = dict(kwargs)
                    detailed["clean_result"] = False
                    rec["atoms"] = list(original_infer(model, *args, **detailed).items())
            result = original_infer(model, *args, **kwargs)
            if rec is not None:
                rec["map"] = dict(result)
            return result

        tia.accelerate_max_memory = accelerate_max_memory
        tia.get_max_memory = get_max_memory
        tia.get_balanced_memory = get_balanced_memory
        tia.infer_auto_device_map = infer_auto_device_map
        tia._bnbdoctor_original_infer = original_infer
        tia._bnbdoctor_wrapped = True

    # .. the model .............................................................................

    def load_config(self):
        started = time.perf_counter()
        req = self.request
        from transformers import AutoConfig

        kwargs = {"trust_remote_code": bool(req.get("trust_remote_code")), "local_files_only": True}
        try:
            config = AutoConfig.from_pretrained(req["config_source"], **kwargs)
        except Exception as exc:  # noqa: BLE001
            text = str(exc)
            if "trust_remote_code" in text or "contains custom code" in text:
                raise EngineError("remote_code", _short(exc))
            if "does not recognize this architecture" in text or "Unrecognized model" in text or (
                    isinstance(exc, KeyError)):
                version = self.out["versions"]["transformers"]
                wanted = req.get("model_type")
                raise EngineError("unknown_model_type",
                                  f"transformers {version} does not know model_type {wanted!r}") from None
            raise EngineError("config_error", f"transformers could not read the config: {_short(exc)}")
        self.config = config
        self.out["model_type"] = getattr(config, "model_type", None)
        self.timings["config"] = round(time.perf_counter() - started, 4)

    def load_class(self):
        self.model_cls = self._model_class(self.config)
        self.out["model_class"] = self.model_cls.__name__

    def _model_class(self, config):
        import transformers

        req = self.request
        auto_map = getattr(config, "auto_map", None) or {}
        architectures = list(getattr(config, "architectures", None) or [])
        if req.get("trust_remote_code") and auto_map:
            from transformers.dynamic_module_utils import get_class_from_dynamic_module

            keys = [k for k in ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSeq2SeqLM",
                                "AutoModel") if k in auto_map] + [k for k in auto_map if k.startswith("AutoModel")]
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
            raise EngineError("unknown_architecture", f"transformers {version} has no model class {names} for "
                              f"model_type {getattr(config, 'model_type', None)!r}") from None

    def quant_config(self, quant, fp32_offload):
        req = self.request
        if req.get("pre_quantized"):
            return None  # the checkpoint's own quantization_config is used, as from_pretrained does
        kwargs = {"llm_int8_enable_fp32_cpu_offload": bool(fp32_offload)}
        if req.get("skip_modules"):
            kwargs["llm_int8_skip_modules"] = list(req["skip_modules"])
        if quant == "8bit":
            kwargs["load_in_8bit"] = True
        else:
            kwargs["load_in_4bit"] = True
            kwargs["bnb_4bit_use_double_quant"] = bool(req.get("double_quant"))
            kwargs["bnb_4bit_quant_type"] = req.get("quant_type") or "nf4"
        return self.BitsAndBytesConfig(**kwargs)

    def build(self, quant, fp32_offload=False, device_map="auto"):
        """The meta-device model after the quantizer's preprocessing, as from_pretrained builds it.

        Returns (model, hf_quantizer, dtype) or raises ValueError from get_hf_quantizer (raise
        site (a): a dict device_map with cpu/disk entries)."""
        key = (quant, bool(fp32_offload), json.dumps(device_map, sort_keys=True) if isinstance(device_map, dict)
               else "string")
        if key in self._builds:
            return self._builds[key]
        started = time.perf_counter()
        mu, req = self.mu, self.request
        config = copy.deepcopy(self.config)
        hf_quantizer, config, device_map_after = self.qauto.get_hf_quantizer(
            config, self.quant_config(quant, fp32_offload), device_map, True, {})
        dtype_arg = req.get("dtype") or "auto"
        config, dtype = mu._get_dtype(dtype_arg, req.get("checkpoint_files"), config, req.get("sharded_metadata"),
                                      None, True, hf_quantizer)
        is_quantized = hf_quantizer is not None
        contexts = self.model_cls.get_init_context(dtype, is_quantized, False, False)
        config = copy.deepcopy(config)
        with self.ContextManagers(contexts):
            model = self.model_cls(config)
            if hf_quantizer is not None:
                hf_quantizer.preprocess_model(model=model, dtype=dtype, device_map=device_map_after,
                                              checkpoint_files=req.get("checkpoint_files"), use_kernels=False)
        built = (model, hf_quantizer, dtype)
        self._builds[key] = built
        self.timings["build.{}{}".format(quant, "+fp32" if fp32_offload else "")] = round(
            time.perf_counter() - started, 4)
        return built

    # .. placement .............................................................................

    def place(self, built, device_map, max_memory, detected, trace=False):
        """Run transformers' _get_device_map; return the verdict and what was recorded."""
        model, hf_quantizer, _ = built
        rec = {"trace": trace}
        self.recording = rec
        self.detected = detected
        original_adjust = hf_quantizer.adjust_max_memory if hf_quantizer is not None else None

        def adjust(mm):
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

    def run_scenario(self, scenario, trace=False):
        """One placement: a string device_map through _get_device_map, or a dict through
        get_hf_quantizer's validation (raise site a) and back unchanged."""
        quant = scenario.get("quant") or self.request["quant"]
        fp32 = bool(scenario.get("fp32_offload"))
        device_map = scenario.get("device_map") or "auto"
        max_memory = _memory_from_json(scenario.get("max_memory"))
        detected = _memory_from_json(scenario.get("detected"))
        if detected is not None and "cpu" not in detected and not scenario.get("no_cpu"):
            import psutil  # accelerate's own source for the CPU budget when max_memory is None

            detected["cpu"] = int(psutil.virtual_memory().available)
            scenario["detected"] = _memory_to_json(detected)
        if isinstance(device_map, dict):
            device_map = {k: _device_from_json(v) for k, v in device_map.items()}
            try:
                built = self.build(quant, fp32, device_map)
            except ValueError as exc:
                if DISPATCH_PREFIX not in str(exc):
                    raise
                return {"verdict": "raises", "error": str(exc), "result": device_map, "raise_site": "get_hf_quantizer"}
            rec = {"result": dict(device_map), "error": None, "raise_site": None}
            rec["verdict"] = verdict_of(rec["result"], None, built[1])
            rec["built"] = built
            return rec
        built = self.build(quant, fp32)
        rec = self.place(built, device_map, max_memory, detected, trace=trace)
        rec["raise_site"] = "_get_device_map" if rec["error"] else None
        rec["built"] = built
        return rec


def verdict_of(device_map, error, hf_quantizer):
    if error:
        return "raises"
    values = set(device_map.values())
    if not values:
        return "fits"
    if values == {"cpu"}:
        return "all_cpu"
    if "cpu" in values or "disk" in values:
        return "fp32_offload"
    return "fits"


# -- analysis of one placement ------------------------------------------------------------------


def _sizes(engine, built):
    model, hf_quantizer, _ = built
    cache = getattr(model, "_bnbdoctor_sizes", None)
    if cache is None:
        cache = engine.tia.compute_module_sizes(model, hf_quantizer, only_modules=False)[0]
        model._bnbdoctor_sizes = cache
    return cache


def _ordered_devices(budget):
    gpus = sorted(k for k in budget if isinstance(k, int))
    rest = [k for k in ("mps", "cpu") if k in budget]
    return gpus + rest + ["disk"]


def explain_devices(engine, rec):
    """Per-device budgets and use; for each device the packer left, the atom that did not fit."""
    model, _hf_quantizer, _ = rec["built"]
    sizes = _sizes(engine, rec["built"])
    budget = rec.get("budget") or {}
    user = rec.get("user") or {}
    balanced = rec.get("balanced")
    atoms = rec.get("atoms") or list(rec["result"].items())
    devices = _ordered_devices(budget) if budget else sorted({d for _, d in atoms}, key=str)
    gpus = [d for d in devices if isinstance(d, int)]
    main = {gpus[0], "cpu"} if gpus else {"cpu"}
    index = {d: i for i, d in enumerate(devices)}
    no_split = rec.get("no_split") or list(getattr(model, "_no_split_modules", None) or [])
    used = {}
    state_by_module = quant_state_by_module(engine, rec["built"])
    state = {}
    for name, device in atoms:
        used[device] = used.get(device, 0) + sizes.get(name, 0)
        state[device] = state.get(device, 0) + state_by_module.get(name, 0)
    # the reservation on a main device before anything is placed: the largest layer overall
    top = [(n, m) for n, m in model.named_children()]
    initial_reserved, _ = engine.tia.get_max_layer_size(top, sizes, no_split)
    rows = []
    for device in devices:
        if device == "disk" and not used.get("disk"):
            continue
        row = {
            "device": _device_key(device),
            "given_bytes": _int_or_none(user.get(device)),
            "balanced_cap_bytes": _int_or_none(balanced.get(device)) if balanced is not None else None,
            "budget_bytes": _int_or_none(budget.get(device)),
            "reserved_bytes": int(initial_reserved) if device in main and gpus else 0,
            "used_bytes": int(used.get(device, 0)),
            "quant_state_bytes": int(state.get(device, 0)),
            "skipped_at": None,
            "skipped_atom_bytes": None,
            "remaining_bytes": None,
        }
        later = [(i, (n, d)) for i, (n, d) in enumerate(atoms) if index.get(d, -1) > index[device]]
        if later and device != "disk":
            position, (name, _) = later[0]
            row["skipped_at"] = name
            row["skipped_atom_bytes"] = int(sizes.get(name, 0))
            reserved = 0
            if device in main:
                remaining_modules = []
                for n, _d in atoms[position + 1:]:
                    try:
                        remaining_modules.append((n, model.get_submodule(n)))
                    except Exception:  # noqa: BLE001, S112 - a parameter or buffer, not a module
                        continue
                reserved, _ = engine.tia.get_max_layer_size(remaining_modules, sizes, no_split)
                row["reserved_bytes"] = int(reserved)
            placed_before = sum(sizes.get(n, 0) for n, d in atoms[:position] if d == device)
            if row["budget_bytes"] is not None:
                row["remaining_bytes"] = max(0, int(row["budget_bytes"] - reserved - placed_before))
        rows.append(row)
    return rows


def _state_of(hf_quantizer, module, tensor, linear8):
    """Bytes of quantization state one quantized weight adds (NF4/FP4 absmax; int8 SCB per row)."""
    if isinstance(module, linear8):
        return 4 * int(tensor.shape[0])
    config = hf_quantizer.quantization_config
    per = QUANT_STATE_4BIT_DOUBLE if getattr(config, "bnb_4bit_use_double_quant", False) else QUANT_STATE_4BIT
    return int(tensor.numel() * per)


def quant_state_by_module(engine, built):
    """{module or parameter name: quantization-state bytes under it}, like compute_module_sizes."""
    model, hf_quantizer, _ = built
    cache = getattr(model, "_bnbdoctor_state", None)
    if cache is not None:
        return cache
    cache = {}
    if hf_quantizer is not None:
        modules = dict(model.named_modules())
        linear8 = sys.modules["bitsandbytes"].nn.Linear8bitLt
        tied = set(getattr(model, "all_tied_weights_keys", {}) or {})
        for name, tensor in model.named_parameters():
            if name in tied or not hf_quantizer.param_needs_quantization(model, name):
                continue
            owner = modules.get(name.rsplit(".", 1)[0] if "." in name else "")
            size = _state_of(hf_quantizer, owner, tensor, linear8)
            parts = name.split(".")
            for i in range(len(parts) + 1):
                key = ".".join(parts[:i])
                cache[key] = cache.get(key, 0) + size
    model._bnbdoctor_state = cache
    return cache


def inventory(engine, built):
    """Totals and the largest tensors transformers keeps in the model dtype."""
    model, hf_quantizer, dtype = built
    torch = engine.torch
    tied = set(getattr(model, "all_tied_weights_keys", {}) or {})
    try:
        out_emb = model.get_output_embeddings()
    except Exception:  # noqa: BLE001
        out_emb = None
    modules = dict(model.named_modules())
    skip = set(getattr(hf_quantizer, "modules_to_not_convert", None) or [])
    quantized = unquantized = 0
    tensors = []
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        if name in tied:
            continue
        element = hf_quantizer.param_element_size(model, name, tensor) if hf_quantizer else tensor.element_size()
        size = int(tensor.numel() * element)
        owner_name = name.rsplit(".", 1)[0] if "." in name else ""
        owner = modules.get(owner_name)
        if hf_quantizer is not None and hf_quantizer.param_needs_quantization(model, name):
            quantized += size
            continue
        unquantized += size
        kind = "other"
        if owner is not None and out_emb is not None and owner is out_emb:
            kind = "lm_head"
        elif isinstance(owner, torch.nn.Embedding):
            kind = "embedding"
        elif tensor.dim() >= 3 or type(owner).__name__.lower().endswith("experts"):
            kind = "experts"
        elif any(owner_name == s or owner_name.startswith(s + ".") or owner_name.endswith("." + s) for s in skip) \
                and isinstance(owner, torch.nn.Linear):
            kind = "skipped"
        elif "norm" in type(owner).__name__.lower():
            kind = "norm"
        tensors.append({"name": name, "kind": kind, "shape": [int(s) for s in tensor.shape],
                        "dtype": str(tensor.dtype).replace("torch.", ""), "bytes": size,
                        "module_class": type(owner).__name__ if owner is not None else ""})
    tensors.sort(key=lambda t: -t["bytes"])
    state = quant_state_by_module(engine, built).get("", 0)
    by_kind = {}
    for t in tensors:
        by_kind[t["kind"]] = by_kind.get(t["kind"], 0) + t["bytes"]
    return {
        "model_bytes": int(_sizes(engine, built).get("", quantized + unquantized)),
        "quantized_bytes": int(quantized),
        "unquantized_bytes": int(unquantized),
        "unquantized_by_kind": by_kind,
        "quant_state_bytes": int(state),
        "largest_unquantized": tensors[:LARGEST_TENSORS],
        "dtype": str(dtype).replace("torch.", ""),
        "no_split_modules": list(getattr(model, "_no_split_modules", None) or []),
        "modules_to_not_convert": sorted(skip),
        "keep_in_fp32_modules": list(getattr(model, "_keep_in_fp32_modules", None) or []),
    }


def balance_inputs(engine, built):
    """The two sizes get_balanced_memory's buffer comes from (largest no-split block, largest leaf)."""
    model, hf_quantizer, _ = built
    sizes, leaves = engine.tia.compute_module_sizes(model, hf_quantizer)
    no_split = set(getattr(model, "_no_split_modules", None) or [])
    biggest_block, block_name = 0, None
    for name, module in model.named_modules():
        if module.__class__.__name__ in no_split and sizes.get(name, 0) > biggest_block:
            biggest_block, block_name = sizes[name], name
    leaf_name = max(leaves, key=lambda k: leaves[k]) if leaves else None
    return {"biggest_no_split_bytes": int(biggest_block), "biggest_no_split": block_name,
            "biggest_leaf_bytes": int(leaves[leaf_name]) if leaf_name else 0, "biggest_leaf": leaf_name}


# -- remedies -----------------------------------------------------------------------------------


def _scenario_result(rec):
    return {"verdict": rec["verdict"], "error": rec.get("error"),
            "device_map": {k: _jsonable_device(v) for k, v in rec["result"].items()}}


def remedies(engine, main_scenario, main_rec):
    req = engine.request
    found = []
    quant = main_scenario.get("quant") or req["quant"]
    device_map = main_scenario.get("device_map") or "auto"
    max_memory = main_scenario.get("max_memory")
    detected = main_scenario.get("detected")
    sizes = _sizes(engine, main_rec["built"])

    def attempt(kind, scenario, **extra):
        started = time.perf_counter()
        try:
            rec = engine.run_scenario(scenario)
        except Exception as exc:  # noqa: BLE001 - a remedy that cannot be simulated is reported, not fatal
            found.append({"kind": kind, "scenario": _strip(scenario), "verdict": "error",
                          "error": f"{type(exc).__name__}: {_short(exc)}"})
            return None
        entry = {"kind": kind, "scenario": _strip(scenario), **_scenario_result(rec), **extra}
        entry["seconds"] = round(time.perf_counter() - started, 4)
        found.append(entry)
        return rec

    passing_maps = []
    # 1. sequential: no balancing caps
    if device_map != "sequential":
        rec = attempt("sequential", dict(main_scenario, device_map="sequential"))
        if rec and rec["verdict"] == "fits":
            passing_maps.append(("sequential", rec))
    # 2. an explicit max_memory, when from_pretrained would otherwise ask the driver
    if detected is not None and max_memory is None:
        mib = 1 << 20
        explicit = {k: (int(v) // mib) * mib for k, v in detected.items()}
        rec = attempt("max_memory", dict(main_scenario, max_memory=explicit, detected=None))
        if rec and rec["verdict"] == "fits":
            passing_maps.append(("max_memory", rec))
        elif device_map != "sequential":
            rec = attempt("max_memory", dict(main_scenario, max_memory=explicit, detected=None,
                                             device_map="sequential"))
            if rec and rec["verdict"] == "fits":
                passing_maps.append(("max_memory+sequential", rec))
    # 3. an explicit device map, checked the way from_pretrained checks a dict
    source = passing_maps[0][1] if passing_maps else None
    origin = passing_maps[0][0] if passing_maps else None
    if source is None:
        full = _full_budgets(main_rec)
        if full:
            model, hf_quantizer, _ = main_rec["built"]
            try:
                packed = engine.tia.infer_auto_device_map(
                    model, max_memory=full, no_split_module_classes=model._no_split_modules,
                    hf_quantizer=hf_quantizer, **_no_placement(engine, model))
                if set(packed.values()) and not ({"cpu", "disk"} & set(packed.values())):
                    source = {"result": packed}
                    origin = "full_budget"
            except Exception:  # noqa: BLE001
                source = None
    if source is not None:
        explicit_map = {k: _jsonable_device(v) for k, v in source["result"].items()}
        use = {}
        for name, device in explicit_map.items():
            use[str(device)] = use.get(str(device), 0) + int(sizes.get(name, 0))
        attempt("explicit_map", dict(main_scenario, device_map=explicit_map, max_memory=None, detected=None),
                origin=origin, gpu_use=use)
    # 4. 4-bit instead of 8-bit
    if quant == "8bit" and not req.get("pre_quantized"):
        rec = attempt("quant_4bit", dict(main_scenario, quant="4bit"))
        if rec and rec["verdict"] != "fits" and device_map != "sequential":
            attempt("quant_4bit", dict(main_scenario, quant="4bit", device_map="sequential"))
    # 5. the least GPU memory that fits, and (when nothing above keeps the model on these GPUs)
    #    the fewest GPUs of this size
    found.extend(minimum_memory(engine, main_scenario, main_rec, more_gpus=not passing_maps))
    # 6. fp32 CPU offload with a custom map, when nothing keeps the model on these GPUs
    # (a pre-quantized checkpoint's own quantization_config wins over the one passed: the flag would be ignored)
    if main_rec["verdict"] == "raises" and not passing_maps and not req.get("pre_quantized"):
        offload_map = None
        for entry in found:
            if entry["kind"] == "sequential" and entry.get("device_map") and \
                    {"cpu", "disk"} & set(entry["device_map"].values()):
                offload_map = entry["device_map"]
        if offload_map is None:
            offload_map = {k: _jsonable_device(v) for k, v in main_rec["result"].items()}
        rec = attempt("fp32_offload", dict(main_scenario, fp32_offload=True, device_map=offload_map,
                                           max_memory=None, detected=None))
        if rec is not None and rec.get("built") is not None:
            off_sizes = _sizes(engine, rec["built"])
            entry = found[-1]
            entry["cpu_bytes"] = int(sum(off_sizes.get(k, 0) for k, v in offload_map.items() if v == "cpu"))
            entry["disk_bytes"] = int(sum(off_sizes.get(k, 0) for k, v in offload_map.items() if v == "disk"))
            entry["cpu_bytes_quantized"] = int(sum(sizes.get(k, 0) for k, v in offload_map.items() if v == "cpu"))
            user = main_rec.get("user") or {}
            entry["cpu_budget_bytes"] = _int_or_none(user.get("cpu"))
    return found


def _no_placement(engine, model):
    import inspect

    try:
        params = inspect.signature(engine.tia.infer_auto_device_map).parameters
    except (TypeError, ValueError):
        return {}
    if "no_placement_params" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
        value = getattr(model, "_no_placement_params", None)
        return {"no_placement_params": value} if value is not None else {}
    return {}


def _full_budgets(rec):
    user = rec.get("user") or {}
    gpus = {k: v for k, v in user.items() if isinstance(k, int) and v > 0}
    if not gpus:
        return None
    full = dict(gpus)
    if "cpu" in user:
        full["cpu"] = user["cpu"]
    return full


def minimum_memory(engine, main_scenario, main_rec, more_gpus=True):
    """Bisect the per-GPU memory (same number of GPUs, same device_map) to 0.1% (at least 1 MiB); then count
    how many GPUs of the given size would do."""
    out = []
    scenario = dict(main_scenario)
    max_memory = _memory_from_json(scenario.get("max_memory"))
    detected = _memory_from_json(scenario.get("detected"))
    field = "max_memory" if max_memory is not None else "detected"
    base = max_memory if max_memory is not None else detected
    if base is None:
        return out
    gpus = sorted(k for k in base if isinstance(k, int))
    n = max(1, len(gpus))
    model_bytes = _sizes(engine, main_rec["built"]).get("", 0)
    device_map = scenario.get("device_map") or "auto"
    built = main_rec["built"]
    started = time.perf_counter()
    steps = [0]

    def fits(per_gpu, count):
        steps[0] += 1
        mm = {k: v for k, v in base.items() if not isinstance(k, int)}
        for i in range(count):
            mm[i] = int(per_gpu)
        args = (mm, None) if field == "max_memory" else (None, mm)
        rec = engine.place(built, device_map, args[0], args[1])
        return rec["verdict"] == "fits", rec

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
        out.append({"kind": "min_gpu_memory", "scenario": _strip(dict(scenario, **{field: _memory_to_json(
            {**{k: v for k, v in base.items() if not isinstance(k, int)}, **{i: hi for i in range(n)}})})),
                    "verdict": rec["verdict"], "error": rec.get("error"),
                    "device_map": {k: _jsonable_device(v) for k, v in rec["result"].items()},
                    "per_gpu_bytes": int(hi), "gpus": n, "field": field})
    if gpus and more_gpus:
        size = min(base[k] for k in gpus)
        for count in range(n + 1, max(n + 1, 16) + 1):
            good, rec = fits(size, count)
            if good:
                out.append({"kind": "more_gpus", "scenario": _strip(dict(scenario, **{field: _memory_to_json(
                    {**{k: v for k, v in base.items() if not isinstance(k, int)},
                     **{i: size for i in range(count)}})})),
                            "verdict": rec["verdict"], "error": rec.get("error"),
                            "device_map": {k: _jsonable_device(v) for k, v in rec["result"].items()},
                            "per_gpu_bytes": int(size), "gpus": count, "original_gpus": len(gpus), "field": field})
                break
    engine.timings["min_memory"] = round(time.perf_counter() - started, 4)
    engine.timings["min_memory_steps"] = steps[0]
    return out


# -- helpers ------------------------------------------------------------------------------------


def _memory_from_json(data):
    if data is None:
        return None
    out = {}
    for key, value in data.items():
        device = int(key) if str(key).isdigit() else str(key)
        out[device] = int(value)
    return out


def _memory_to_json(memory):
    if memory is None:
        return None
    return {str(k): int(v) for k, v in memory.items()}


def _device_from_json(value):
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def _int_or_none(value):
    return None if value is None else int(value)


def _strip(scenario):
    return {k: v for k, v in scenario.items() if v is not None}


def _short(exc):
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:400]


def _other_installs(name, active_location):
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
                version = item[len(prefix):-len(".dist-info")]
                location = os.path.abspath(entry)
                if location == active_location or (location, version) in seen:
                    continue
                if os.path.isdir(os.path.join(entry, name)):
                    seen.add((location, version))
                    found.append({"version": version, "location": location})
    return found


def answer(request):
    """One request: a model and its scenarios; returns the JSON-ready answer."""
    started = time.perf_counter()
    out = {"script_version": SCRIPT_VERSION, "ok": False, "versions": {}, "timings": {}}
    engine = Engine(request, out)
    try:
        engine.import_stack()
        engine.load_config()
        engine.import_rest()
        out["bnb_mode"] = engine.bnb_mode
        out["bnb_error"] = engine.bnb_error
        engine.load_class()
        results = []
        for i, scenario in enumerate(request.get("scenarios") or []):
            item = {"id": scenario.get("id", str(i))}
            rec = engine.run_scenario(scenario, trace=bool(request.get("details")))
            item.update(_scenario_result(rec))
            item["raise_site"] = rec.get("raise_site")
            item["free_memory"] = scenario.get("detected")
            if request.get("details") and rec.get("built") is not None:
                built = rec["built"]
                item["inventory"] = inventory(engine, built)
                item["balance"] = balance_inputs(engine, built)
                if rec.get("raise_site") != "get_hf_quantizer" and "budget" in rec:
                    item["devices"] = explain_devices(engine, rec)
                else:
                    item["devices"] = []
            if request.get("remedies") and rec["verdict"] != "fits":
                item["remedies"] = remedies(engine, scenario, rec)
            results.append(item)
        out["results"] = results
        out["ok"] = True
    except EngineError as exc:
        out["error_kind"] = exc.kind
        out["error"] = str(exc)
        out["fallback"] = exc.fallback
    except Exception as exc:  # noqa: BLE001 - reported to the host, which falls back
        import traceback

        out["error_kind"] = "engine_failed"
        out["error"] = f"{type(exc).__name__}: {_short(exc)}"
        out["traceback"] = traceback.format_exc()[-4000:]
        out["fallback"] = True
    out["timings"]["total"] = round(time.perf_counter() - started, 4)
    return out


def main(request):
    """Answer ``request``, or each of ``request["batch"]`` (several models, one import of the stack),
    and print the answer on one marked line."""
    if request.get("batch"):
        out = {"script_version": SCRIPT_VERSION, "ok": True,
               "batch": [answer(dict(sub, sys_path_first=request.get("sys_path_first")))
                         for sub in request["batch"]]}
    else:
        out = answer(request)
    try:
        import resource

        out["peak_rss_bytes"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except Exception:  # noqa: BLE001, S110 - no resource module (Windows): the figure is optional
        pass
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written: skip the interpreter's teardown (torch's takes about a second). This
    # process was started for this answer alone and holds no files open for writing.
    os._exit(0)
