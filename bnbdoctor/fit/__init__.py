"""``bnbdoctor fit``: will a bitsandbytes 4/8-bit ``from_pretrained`` place this model on the GPUs?

transformers raises ``ValueError: Some modules are dispatched on the CPU or the disk`` when the
device map it computes for a bnb-quantized model puts modules on cpu or disk. That placement is
size arithmetic on a meta-device model, so it can be computed offline, without a GPU, in seconds:
:func:`run_fit` runs the user's own transformers and accelerate in the patient interpreter (the
engine: ``engine_parts/``, assembled into one script by ``script_assembly.py``, speaking the
vocabulary of ``bnbdoctor/fit_protocol.py``), and the BNB4xx rules explain the verdict and the
remedies that pass.

UI-independent entry point (the CLI and a TUI tab use the same call)::

    from bnbdoctor.fit import FitOptions, run_fit
    report = run_fit(FitOptions(model="path/to/model", gpus="24GiB,24GiB"))
    report.facts.fit.verdict  # "fits" | "raises" | "all_cpu" | "fp32_offload" | "likely_*" | "unknown"
"""

from __future__ import annotations

from typing import Any

__all__ = ["FitInputError", "FitOptions", "run_fit"]


def __getattr__(name: str) -> Any:
    # Lazy: importing a submodule (the TUI's snippets, the engine parts) should not import run_fit's dependencies.
    if name == "run_fit":
        from bnbdoctor.fit.core import run_fit

        return run_fit
    if name in ("FitInputError", "FitOptions"):
        from bnbdoctor.fit import options

        return getattr(options, name)
    raise AttributeError(name)
