"""The gpu probe: NVIDIA driver and GPUs from NVML, with CUDA_VISIBLE_DEVICES applied."""

from __future__ import annotations

from bnbdoctor.derive import visible_indices
from bnbdoctor.facts import GpuDevice, GpuFacts
from bnbdoctor.probes.base import ProbeContext

NVML_TIMEOUT_S = 5.0


def cuda_version_text(encoded: int | None) -> str | None:
    """NVML's 12020 -> "12.2" (major*1000 + minor*10)."""
    if not encoded:
        return None
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def gather_gpu(ctx: ProbeContext) -> GpuFacts:
    answer = ctx.host.nvml(timeout=NVML_TIMEOUT_S)
    mask = ctx.host.getenv("CUDA_VISIBLE_DEVICES")
    facts = GpuFacts(
        nvml_available=answer.available,
        nvml_error=answer.error,
        nvml_error_kind=answer.error_kind,
        driver_version=answer.driver_version,
        driver_cuda_version=cuda_version_text(answer.cuda_driver_version),
        cuda_visible_devices=mask,
    )
    shown = visible_indices([(d.index, d.uuid) for d in answer.devices], mask)
    for device in answer.devices:
        facts.devices.append(
            GpuDevice(
                index=device.index,
                name=device.name,
                compute_capability=list(device.compute_capability) if device.compute_capability else None,
                memory_total_bytes=device.memory_total_bytes,
                memory_free_bytes=device.memory_free_bytes,
                uuid=device.uuid,
                pci_bus_id=device.pci_bus_id,
                visible=device.index in shown,
            )
        )
    return facts
