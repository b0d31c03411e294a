"""Small helpers shared by rule modules: fact accessors and evidence builders."""

from __future__ import annotations

from bnbdoctor.facts import BnbFacts, Facts, GpuDevice, TorchFacts
from bnbdoctor.knowledge.selection import LibrarySelection, select_library
from bnbdoctor.rules.base import Evidence

BNB_DOCS_INSTALL = "https://huggingface.co/docs/bitsandbytes/main/en/installation"
BNB_ISSUES = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/"
TORCH_GET_STARTED = "https://pytorch.org/get-started/locally/"
#: CUDA versions PyTorch publishes wheel indexes for (download.pytorch.org/whl/cuXYZ).
TORCH_CUDA_INDEXES = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))


def ev(label: str, value: object, fact: str | None = None) -> Evidence:
    return Evidence(label, "unknown" if value is None else str(value), fact)


def torch_of(facts: Facts) -> TorchFacts | None:
    return facts.python.torch if facts.python else None


def bnb_of(facts: Facts) -> BnbFacts | None:
    return facts.python.bitsandbytes if facts.python else None


def visible_gpus(facts: Facts) -> list[GpuDevice]:
    return facts.gpu.visible if facts.gpu else []


def gpu_label(device: GpuDevice) -> str:
    return f"GPU {device.index} ({device.name}, compute capability {device.cc_text})"


def torch_index_for(driver_cuda: tuple[int, int] | None) -> str | None:
    """The newest PyTorch CUDA wheel index a driver supporting ``driver_cuda`` can run."""
    if driver_cuda is None:
        return None
    usable = [v for v in TORCH_CUDA_INDEXES if v[0] == driver_cuda[0] and v <= driver_cuda] or [
        v for v in TORCH_CUDA_INDEXES if v < driver_cuda]
    if not usable:
        return None
    major, minor = max(usable)
    return f"https://download.pytorch.org/whl/cu{major}{minor}"


def predicted_selection(facts: Facts) -> LibrarySelection | None:
    """What the installed bitsandbytes will try to load, from the facts alone."""
    torch, bnb = torch_of(facts), bnb_of(facts)
    if not (torch and bnb and bnb.installed and facts.platform):
        return None
    gpus = visible_gpus(facts)
    gpu_available = bool(torch.hip) or bool(torch.cuda and gpus)
    return select_library(
        bnb_version=bnb.version,
        os_name=facts.platform.os,
        shipped=bnb.native_libraries,
        torch_cuda=torch.cuda,
        torch_hip=torch.hip,
        torch_xpu=torch.xpu,
        gpu_available=gpu_available,
        highest_cc=facts.gpu.highest_cc if facts.gpu else None,
        bnb_cuda_version=facts.env.get("BNB_CUDA_VERSION"),
        bnb_rocm_version=facts.env.get("BNB_ROCM_VERSION"),
    )
