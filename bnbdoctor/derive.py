"""Derived facts: pure functions of Facts that probes and rules both need.

They never read the machine, so a replayed report derives exactly what the live run did.
"""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.knowledge.selection import LibrarySelection, SelectionInput, underlying_selection


def cuda_expected(facts: Facts) -> bool:
    """Whether torch.cuda.is_available() would be True: a CUDA/ROCm torch and a GPU CUDA sees.
    Jetson's integrated GPU is invisible to NVML but visible to CUDA."""
    python, platform = facts.python, facts.platform
    if python is None:
        return False
    torch = python.torch
    gpus = facts.gpu.visible if facts.gpu else []
    jetson = bool(platform and platform.jetson_release)
    return bool(torch.hip) or bool(torch.cuda and (gpus or jetson))


def selection_input(facts: Facts) -> SelectionInput | None:
    """What the installed release's library choice depends on, from the facts alone."""
    python, platform = facts.python, facts.platform
    if python is None or platform is None or not python.bitsandbytes.installed:
        return None
    bnb, torch = python.bitsandbytes, python.torch
    return SelectionInput(
        bnb_version=bnb.version,
        os_name=platform.os,
        shipped=tuple(bnb.native_libraries),
        torch_cuda=torch.cuda,
        torch_hip=torch.hip,
        torch_xpu=torch.xpu,
        gpu_available=cuda_expected(facts),
        highest_cc=facts.gpu.highest_cc if facts.gpu else None,
        bnb_cuda_version=facts.env.get("BNB_CUDA_VERSION"),
        bnb_rocm_version=facts.env.get("BNB_ROCM_VERSION"),
    )


def predict_selection(facts: Facts) -> LibrarySelection | None:
    """The library the installed bitsandbytes release will pick, from the facts alone."""
    inputs = selection_input(facts)
    return inputs.select() if inputs else None


def predict_without_override(facts: Facts) -> LibrarySelection | None:
    """What the release would pick with the ``BNB_*_VERSION`` override unset; None when none is in force."""
    inputs = selection_input(facts)
    return underlying_selection(inputs) if inputs else None
