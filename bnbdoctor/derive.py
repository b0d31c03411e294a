"""Derived facts: pure functions of Facts that probes and rules both need.

They never read the machine, so a replayed report derives exactly what the live run did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bnbdoctor.facts import BnbFacts, Facts
from bnbdoctor.knowledge.selection import LibrarySelection, SelectionInput, underlying_selection


@dataclass(frozen=True)
class GpuSighting:
    """One trace of a GPU in the facts, and where it was seen.

    ``vendor`` is "nvidia", "amd", "apple" or "unknown" (WSL2's /dev/dxg is any GPU Windows shares)."""

    vendor: str
    label: str  # what a finding names: "NVIDIA GeForce RTX 4090", "Jetson integrated GPU (L4T R36)"
    source: str  # where it was seen: "NVML", "/etc/nv_tegra_release", "/dev/kfd", ...
    fact: str  # the dotted fact it rests on


def conda_env(facts: Facts) -> bool | None:
    """Whether the examined interpreter is a conda env's: chosen by ``CONDA_PREFIX``, or its prefix is that
    folder; from a log, whether the log shows ``CONDA_PREFIX`` at all. None when nothing says."""
    python = facts.python
    if python is not None and python.selected_by != "log":
        return python.selected_by == "CONDA_PREFIX" or bool(
            python.prefix and facts.env.get("CONDA_PREFIX") == python.prefix
        )
    return True if "CONDA_PREFIX" in facts.env else None


def l4t_release(line: str) -> str:
    """``# R36 (release), REVISION: 3.0, ...`` -> ``"R36.3.0"`` (the first line of /etc/nv_tegra_release)."""
    major = re.search(r"\bR(\d+)", line)
    revision = re.search(r"REVISION:\s*([\d.]+)", line)
    if major is None:
        return line.strip("# ")[:40]
    return f"R{major.group(1)}" + (f".{revision.group(1)}" if revision else "")


def gpu_sightings(facts: Facts) -> list[GpuSighting]:
    """Every GPU the facts show, from every source they have, not NVML alone: NVML's visible devices,
    a Jetson's /etc/nv_tegra_release (its integrated GPU is invisible to NVML), WSL2's /dev/dxg, the
    ROCm kernel driver's /dev/kfd, NVIDIA's /dev/nvidiactl, and the GPU of every Apple-silicon Mac."""
    found = [
        GpuSighting("nvidia", device.name, "NVML", f"gpu.devices[{device.index}].name")
        for device in (facts.gpu.visible if facts.gpu else [])
    ]
    platform = facts.platform
    if platform is None:
        return found
    if platform.jetson_release:
        release = l4t_release(platform.jetson_release)
        found.append(
            GpuSighting(
                "nvidia", f"a Jetson integrated GPU (L4T {release})", "/etc/nv_tegra_release", "platform.jetson_release"
            )
        )
    nodes = platform.gpu_device_nodes
    if "nvidiactl" in nodes and not found:
        found.append(GpuSighting("nvidia", "an NVIDIA GPU (kernel driver loaded)", "/dev/nvidiactl", "platform"))
    if "kfd" in nodes:
        found.append(GpuSighting("amd", "an AMD GPU (ROCm kernel driver)", "/dev/kfd", "platform.gpu_device_nodes"))
    if "dxg" in nodes and platform.wsl and not found:
        found.append(GpuSighting("unknown", "a GPU shared by Windows (WSL2)", "/dev/dxg", "platform.gpu_device_nodes"))
    if platform.os == "macos" and platform.arch in ("aarch64", "arm64"):
        found.append(GpuSighting("apple", "the Apple-silicon GPU (MPS)", "macOS on arm64", "platform.arch"))
    return found


def built_locally(bnb: BnbFacts) -> str | None:
    """Why this bitsandbytes was not installed from a PyPI wheel, or None when nothing says so: an egg
    or egg-info (setup.py), a wheel built on the machine (``linux_*`` tag, never on PyPI), an install from
    a path or URL (PEP 610 direct_url.json), or a package without metadata (a source checkout)."""
    if not bnb.installed:
        return None
    if bnb.dist_format in ("egg", "egg-info"):
        return f"installed as an {bnb.dist_format} (setup.py), not from a wheel"
    tag = bnb.wheel_tag or ""
    if tag and not any(word in tag for word in ("manylinux", "musllinux", "win", "macosx", "any")):
        return f"a wheel built for this machine (tag {tag}; PyPI's are manylinux)"
    if bnb.direct_url:
        return f"installed from {bnb.direct_url}, not from an index"
    if not bnb.has_metadata:
        return "a source checkout without package metadata"
    return None


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
