"""CUDA versions as bitsandbytes and PyTorch publish them: torch's CUDA wheel indexes, the oldest
CUDA any bitsandbytes build supports, and how NVIDIA's pip wheels are named per CUDA major."""

from __future__ import annotations

#: CUDA versions PyTorch publishes wheel indexes for (download.pytorch.org/whl/cuXYZ).
TORCH_CUDA_INDEXES = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))
TORCH_INDEX_URL = "https://download.pytorch.org/whl/cu{major}{minor}"
#: PyTorch's CPU-only wheels (pytorch.org/get-started/locally, "Compute Platform: CPU"). On Linux, PyPI's own
#: torch is the CUDA build, which pulls the nvidia-* wheels (several GB) whether or not there is a GPU.
TORCH_CPU_INDEX_URL = "https://download.pytorch.org/whl/cpu"

#: No bitsandbytes release ships a library for CUDA below 11 (bnb_internals.md §7: the oldest build is
#: cuda110; the legacy setup says "CUDA version lower than 11 are currently not supported").
OLDEST_CUDA_MAJOR = 11
#: The torch CUDA builds texts suggest when torch's CUDA is too old for any bitsandbytes build:
#: every release since 0.46 ships 11.8 and 12.x libraries (bnb_internals.md §7).
SUGGESTED_TORCH_CUDA = ("11.8", "12.x")

#: CUDA majors whose NVIDIA pip wheels carry a -cuNN suffix (nvidia-cuda-runtime-cu12); CUDA 13's
#: wheels are unsuffixed (nvidia-cuda-runtime). Source: the PyPI project names.
SUFFIXED_WHEEL_MAJORS = ("11", "12")


def torch_index_for(driver_cuda: tuple[int, int] | None) -> str | None:
    """The newest PyTorch CUDA wheel index a driver supporting ``driver_cuda`` can run."""
    if driver_cuda is None:
        return None
    usable = [v for v in TORCH_CUDA_INDEXES if v[0] == driver_cuda[0] and v <= driver_cuda] or [
        v for v in TORCH_CUDA_INDEXES if v < driver_cuda
    ]
    if not usable:
        return None
    major, minor = max(usable)
    return TORCH_INDEX_URL.format(major=major, minor=minor)
