"""What the gpu rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

from bnbdoctor.facts import GpuDevice
from bnbdoctor.knowledge.releases import kernel_runs_on, recorded_wheels
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.common import index_list


def newest_release_with_kernels(cc: tuple[int, int], os_name: str, torch_cuda: str | None) -> str | None:
    """The newest recorded wheel that ships a library for torch's CUDA major that runs on ``cc``."""
    runtime = major_minor(torch_cuda)
    best = None
    for wheel in recorded_wheels():
        if wheel.os != os_name:
            continue
        for lib in wheel.libraries.values():
            if lib.backend != "cuda" or not lib.cuda_toolkit:
                continue
            if runtime and major_minor(lib.cuda_toolkit)[0] != runtime[0]:  # type: ignore[index]
                continue
            if kernel_runs_on(lib, cc):
                if best is None or release_tuple(wheel.version) > release_tuple(best):  # type: ignore[operator]
                    best = wheel.version
                break
    return best


def _group(devices: list[GpuDevice]) -> list[list[GpuDevice]]:
    """Identical GPUs (same name and capability) reported once."""
    groups: dict[tuple[str, tuple[int, int] | None], list[GpuDevice]] = {}
    for device in devices:
        groups.setdefault((device.name, device.cc), []).append(device)
    return list(groups.values())


def _group_label(devices: list[GpuDevice]) -> str:
    first = devices[0]
    indices = index_list([d.index for d in devices])
    return f"GPU{'s' if len(devices) > 1 else ''} {indices} ({first.name}, compute capability {first.cc_text})"
