"""The stand-in for bitsandbytes, used when it is missing or broken (the usual reason to run bnbdoctor).

transformers only needs bitsandbytes' ``Linear4bit`` / ``Linear8bitLt`` classes to exist to select
and build the modules it would quantize; the stand-in provides them as plain ``nn.Linear``
subclasses and lets transformers' own bnb code run against them.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def install_bnb_standin(torch: Any) -> Any:
    """A ``bitsandbytes`` module whose Linear4bit/Linear8bitLt are plain nn.Linear subclasses.

    transformers only needs the classes to exist (``replace_with_bnb_linear`` constructs them on
    meta, ``param_needs_quantization`` tests ``isinstance``); shapes and dtypes of their tensors
    are those of nn.Linear, as in bitsandbytes before the weights are quantized."""

    class Linear4bit(torch.nn.Linear):  # type: ignore[misc]  # torch is the patient's: Any here
        def __init__(
            self,
            input_features: int,
            output_features: int,
            bias: bool = True,
            compute_dtype: Any = None,
            compress_statistics: bool = True,
            quant_type: str = "fp4",
            quant_storage: Any = None,
            device: Any = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(input_features, output_features, bias, device=device)

    class Linear8bitLt(torch.nn.Linear):  # type: ignore[misc]
        def __init__(
            self,
            input_features: int,
            output_features: int,
            bias: bool = True,
            has_fp16_weights: bool = True,
            threshold: float = 0.0,
            index: Any = None,
            device: Any = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(input_features, output_features, bias, device=device)

    import importlib.machinery

    bnb: Any = types.ModuleType("bitsandbytes")
    bnb_nn: Any = types.ModuleType("bitsandbytes.nn")
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


def activate_standin(tf_modules: tuple[Any, ...], bnb: Any) -> None:
    """Let transformers' own bnb code run against the stand-in: its availability checks are
    answered yes and the backend check (which needs a real device list) is skipped."""
    import transformers.integrations.bitsandbytes as tib_module
    from transformers import integrations as integrations_module

    tib: Any = tib_module  # the patient's transformers: patched here, not type-checked
    integrations: Any = integrations_module
    tib.bnb = bnb
    integrations.validate_bnb_backend_availability = lambda raise_exception=False: True
    tib.validate_bnb_backend_availability = integrations.validate_bnb_backend_availability
    for module in tf_modules:
        if hasattr(module, "is_bitsandbytes_available"):
            module.is_bitsandbytes_available = lambda *args, **kwargs: True
