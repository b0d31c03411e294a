"""A fix keeps the channel a component came from (``bnbdoctor.derive.torch_channel``/``bnb_channel``).

Rules write ``pip install`` because that is how most people install torch and bitsandbytes. On a machine
where conda, a vendor (NVIDIA's containers, JetPack) or a source build owns the component, that pip line
would put PyPI's files over the owner's, leaving two owners and, for a vendor torch, a build without the
vendor's patches. This pass, run by :func:`bnbdoctor.remedy.fitting.fit_remedies`, rewrites each such pip
call for the owner's channel, or leaves it out, and always says why:

- conda owns it: ``conda install -c conda-forge "<name><spec>"`` (conda-forge's package names:
  ``pytorch``, ``bitsandbytes``), and, for bitsandbytes, the way out when conda-forge has no build new
  enough (remove conda's package, then pip);
- a vendor build of torch: no PyPI or PyTorch-index torch over it (the vendor's own index stays);
- a source build: torch is rebuilt from its checkout; a pip install of bitsandbytes over a local build is
  kept (PyPI's wheel is the usual cure for a broken build) but the note says it replaces the build and how
  to rebuild it for this GPU instead;
- the distribution's package (``python3-torch``): no pip over apt's files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bnbdoctor.derive import CONDA, DISTRO, SOURCE, VENDOR, bnb_channel, torch_channel
from bnbdoctor.facts import Facts
from bnbdoctor.remedy.commands import PipCall, requirement_text

_PUBLIC_INDEX = re.compile(r"download\.pytorch\.org|pypi\.org")
#: conda-forge's names for the patients.
_CONDA_NAMES = {"torch": "pytorch", "bitsandbytes": "bitsandbytes"}


@dataclass(frozen=True)
class ChannelFix:
    """What a pip call becomes for the component's owner: ``lines`` in its place ([] leaves it out,
    None keeps it), and the sentence that says why."""

    lines: list[str] | None
    note: str


def channel_fix(call: PipCall, facts: Facts) -> ChannelFix | None:
    """The rewrite of one ``pip install`` for the owners of what it installs; None when pip owns them."""
    packages = call.packages()
    torch_req, bnb_req = packages.get("torch"), packages.get("bitsandbytes")
    if torch_req is not None:
        fix = _torch_fix(call, facts)
        if fix is not None:
            return fix
    if bnb_req is not None:
        return _bnb_fix(call, facts)
    return None


def _conda_line(call: PipCall) -> str:
    """The same requirements for conda (conda-forge's names; a MatchSpec takes pip's version operators)."""
    specs = []
    for name, req in call.packages().items():
        text = requirement_text(req)
        specs.append(f'"{_CONDA_NAMES.get(name, name)}{text[len(req.name) :]}"')
    return "conda install -c conda-forge " + " ".join(specs)


def _torch_fix(call: PipCall, facts: Facts) -> ChannelFix | None:
    channel = torch_channel(facts)
    if channel is None or channel.pip_owned:
        return None
    index = next((t for t in call.tokens if "://" in t), None)
    if channel.kind == CONDA:
        return ChannelFix(
            [_conda_line(call)],
            f"{sentence(channel.why)}: install torch with conda, so conda's record of it stays true (pip would "
            "put PyPI's files over conda's); conda-forge picks the CUDA build the driver can run.",
        )
    if index is not None and not _PUBLIC_INDEX.search(index):
        if channel.kind == SOURCE:  # the platform vendor's build (JetPack's index) over the user's own
            return ChannelFix(
                None,
                f"{sentence(channel.why)}: the pip command replaces that build with the wheel of {index}; to keep "
                "your build, rebuild it from that checkout with CUDA (USE_CUDA=1, this GPU in TORCH_CUDA_ARCH_LIST).",
            )
        return None  # the vendor's own index (JetPack's, a company mirror): the owner's channel
    if channel.kind == VENDOR:
        return ChannelFix(
            [],
            f"{sentence(channel.why)}: no pip command replaces it here (pip would put PyPI's build, without the "
            "vendor's patches, over it). Get a newer torch from the same vendor: a newer NGC container, or "
            "NVIDIA's wheel index for this JetPack.",
        )
    if channel.kind == SOURCE:
        return ChannelFix(
            [],
            f"{sentence(channel.why)}: rebuild it from that checkout (with this GPU in TORCH_CUDA_ARCH_LIST) "
            "rather than installing PyPI's build over it.",
        )
    if channel.kind == DISTRO:
        return ChannelFix(
            [],
            f"{sentence(channel.why)}: pip would write over apt's files. Create a virtual environment "
            "(python3 -m venv) and install torch there instead.",
        )
    return None


def _bnb_fix(call: PipCall, facts: Facts) -> ChannelFix | None:
    channel = bnb_channel(facts)
    if channel is None or channel.pip_owned:
        return None
    if channel.kind == CONDA:
        return ChannelFix(
            [_conda_line(call)],
            f"{sentence(channel.why)}: update it with conda. If conda-forge has no build that new, remove conda's "
            "package first (conda remove --force bitsandbytes) and then install PyPI's wheel with pip.",
        )
    if channel.kind == SOURCE:
        gpu = facts.gpu
        devices = gpu.visible if gpu else []
        ccs = sorted({f"{d.compute_capability[0]}{d.compute_capability[1]}" for d in devices if d.compute_capability})
        built = channel.why.split(": ", 1)[-1]
        if not ccs:  # no GPU to build for is known (a Jetson's integrated GPU is not in NVML): say what it replaces
            return ChannelFix(None, f"The pip command replaces this local build ({built}) with PyPI's wheel.")
        return ChannelFix(
            None,
            f"The pip command replaces this local build ({built}) with PyPI's wheel; to keep your build, rebuild it "
            f'instead (cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY="{";".join(ccs)}" -S . -B build && '
            "cmake --build build).",
        )
    return None


def sentence(text: str) -> str:
    """Capitalised, except a name written in lower case (bitsandbytes, torch)."""
    return text if text.startswith(("bitsandbytes", "torch")) else text[:1].upper() + text[1:]
