"""Derived facts: pure functions of Facts that probes and rules both need.

They never read the machine, so a replayed report derives exactly what the live run did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def visible_indices(devices: Sequence[tuple[int, str | None]], mask: str | None) -> set[int]:
    """Which NVML indices (with their UUIDs) CUDA will see under ``CUDA_VISIBLE_DEVICES`` = ``mask``. CUDA stops
    at the first entry it cannot match. The gpu probe applies it, and so does the replay of an ``export``."""
    all_indices = {index for index, _ in devices}
    if mask is None:
        return all_indices
    visible: set[int] = set()
    for raw in mask.split(","):
        entry = raw.strip()
        if not entry:
            break
        if entry.lstrip("-").isdigit():
            index = int(entry)
            if index < 0 or index not in all_indices:
                break
            visible.add(index)
            continue
        matches = [
            index
            for index, uuid in devices
            if uuid and entry.startswith(("GPU-", "MIG-")) and (uuid.startswith(entry) or entry.startswith(uuid))
        ]
        if len(matches) != 1:
            break
        visible.add(matches[0])
    return visible


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


#: The channels a component can come from; a fix keeps the one it came from.
PYPI, CONDA, VENDOR, SOURCE, DISTRO = "pypi", "conda", "vendor", "source", "distro"

#: conda-meta names that mean conda owns torch (conda-forge's ``pytorch``, the pytorch channel's, libtorch).
_CONDA_TORCH = ("pytorch", "pytorch-gpu", "pytorch-cpu", "torch")
#: Where Debian and Ubuntu's ``apt install python3-torch`` put a package.
_DISTRO_SITES = ("/usr/lib/python3/dist-packages",)


@dataclass(frozen=True)
class Channel:
    """Where a component came from, and the fact that says so. ``kind`` is one of PYPI, CONDA, VENDOR,
    SOURCE, DISTRO; PYPI is also what nothing contradicts (a wheel installed by pip or uv from an index)."""

    kind: str
    why: str

    @property
    def pip_owned(self) -> bool:
        return self.kind == PYPI


def torch_channel(facts: Facts) -> Channel | None:
    """Who owns the installed torch (None: torch is not installed or the facts do not show it).

    A conda record (``conda-meta/pytorch-*.json`` or INSTALLER ``conda``) wins: pip would install over
    conda's files and leave conda's record behind. A PEP 610 record of a checkout or a ``+git`` version is
    a source build; a pre-release with a local label (NVIDIA's containers ``2.2.0a0+81ea7a4``, JetPack's
    ``2.1.0a0+41361538.nv23.06``) is a vendor build, which PyPI never published."""
    python = facts.python
    torch = python.torch if python else None
    if python is None or torch is None or not torch.installed:
        return None
    conda = next((name for name in _CONDA_TORCH if name in python.conda_packages), None)
    if conda or torch.installer == "conda":
        shown = f"conda-meta records {conda} {python.conda_packages[conda]}" if conda else "its INSTALLER is conda"
        return Channel(CONDA, f"torch is conda's ({shown})")
    version = torch.version or ""
    if torch.direct_url is not None and not torch.direct_url.url.endswith(".whl"):
        return Channel(SOURCE, f"torch was installed from {torch.direct_url.url}, a source tree")
    if re.search(r"\+git", version):
        return Channel(SOURCE, f"torch {version} was built from a git checkout")
    if vendor_torch_version(version):
        return Channel(VENDOR, f"torch {version} is a vendor build (a pre-release with a local label; PyPI has none)")
    if any((torch.location or "").startswith(site) for site in _DISTRO_SITES) and torch.installer in (None, "debian"):
        return Channel(DISTRO, f"torch is the distribution's package ({torch.location})")
    return Channel(PYPI, "torch is a wheel installed by " + (torch.installer or "pip"))


def bnb_channel(facts: Facts) -> Channel | None:
    """Who owns the installed bitsandbytes (None: not installed or not shown)."""
    python = facts.python
    bnb = python.bitsandbytes if python else None
    if python is None or bnb is None or not bnb.installed:
        return None
    if "bitsandbytes" in python.conda_packages or bnb.installer == "conda":
        version = python.conda_packages.get("bitsandbytes")
        return Channel(
            CONDA,
            f"bitsandbytes is conda's (conda-meta records bitsandbytes {version})"
            if version
            else "bitsandbytes is conda's (its INSTALLER is conda)",
        )
    local = built_locally(bnb)
    if local is not None:
        return Channel(SOURCE, f"bitsandbytes is a local build: {local}")
    return Channel(PYPI, "bitsandbytes is a wheel installed by " + (bnb.installer or "pip"))


def vendor_torch_version(version: str | None) -> bool:
    """A pre-release or locally built torch (NVIDIA's containers: ``2.2.0a0+81ea7a4``), not a PyPI release:
    PyTorch's own local labels (``+cu121``, ``+cpu``, ``+rocm6.2``, ``+xpu``) are not vendor builds."""
    if not version:
        return False
    public, _, local = version.partition("+")
    return bool(re.search(r"(a|b|rc|dev)\d*", public)) or (
        bool(local) and not re.fullmatch(r"(cu\d+|cpu|rocm[\d.]+|xpu)", local)
    )
