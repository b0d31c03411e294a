"""Small helpers shared by rule modules: fact accessors and evidence builders."""

from __future__ import annotations

from bnbdoctor.derive import predict_selection
from bnbdoctor.facts import BnbFacts, Facts, GpuDevice, TorchFacts
from bnbdoctor.findings import Evidence
from bnbdoctor.knowledge.selection import LibrarySelection

BNB_DOCS_INSTALL = "https://huggingface.co/docs/bitsandbytes/main/en/installation"
BNB_ISSUES = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/"
TORCH_GET_STARTED = "https://pytorch.org/get-started/locally/"
#: CUDA versions PyTorch publishes wheel indexes for (download.pytorch.org/whl/cuXYZ).
TORCH_CUDA_INDEXES = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))


def unknown_version(facts: Facts) -> str:
    """How a finding says that a version is not among the facts (a log often does not show it)."""
    return "version not in the log" if facts.log is not None else "version unknown"


def versioned(facts: Facts, name: str, version: str | None) -> str:
    """``name version`` in a finding's text, one wording for every rule when the version is unknown."""
    return f"{name} {version}" if version else f"{name} ({unknown_version(facts)})"


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


#: 0.43.0+ Linux wheels are tagged manylinux_2_24: pip refuses them on an older glibc.
MANYLINUX_GLIBC = (2, 24)


def wheel_upgrade_blocked(facts: Facts) -> str | None:
    """Why `pip install -U bitsandbytes` cannot work on this machine, or None."""
    platform = facts.platform
    if platform is None or platform.os != "linux" or not platform.libc_version:
        return None
    from bnbdoctor.knowledge.versions import major_minor

    glibc = major_minor(platform.libc_version)
    if glibc is not None and glibc < MANYLINUX_GLIBC:
        return (f"bitsandbytes 0.43+ ships manylinux_2_24 wheels, which pip will not install on glibc "
                f"{platform.libc_version} ({platform.distro_name or 'this OS'}): build bitsandbytes from source here, "
                "or run in a container/OS with glibc 2.24 or newer")
    return None


def predicted_selection(facts: Facts) -> LibrarySelection | None:
    """What the installed bitsandbytes will try to load, from the facts alone."""
    return predict_selection(facts)
