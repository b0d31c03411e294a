"""Package versions and the interpreter: bitsandbytes' banner and version lines, torch's version
and CUDA/ROCm build (its version suffix, ``torch.version.cuda``, ``python -m bitsandbytes`` and
``torch.utils.collect_env`` lines), transformers/accelerate/peft/triton/..., the Python version.

Fills the ``python`` evidence and ``facts.log.versions``. A version line of a package being
replaced (``Found existing installation``, ``Uninstalling``) is not the one in use and is skipped.
The ``PyTorch:`` line of ``python -m bitsandbytes`` gives meaning to the ``CUDA:``/``HIP:`` lines
right below it.
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import VER
from bnbdoctor.logs.state import MAX_KEPT, LogState
from bnbdoctor.logs.tokens import cuda_from_torch_version

COLLECTOR = Collector("packages")
collects = COLLECTOR.collects

#: Lines below "PyTorch:" in which "CUDA: 12.6" is still torch's (python -m bitsandbytes).
_PYTORCH_BLOCK_LINES = 3


def _version(
    state: LogState, package: str, version: str, number: int, line: str, signature: SignatureId = S.PACKAGE_VERSION
) -> None:
    lowered = line.lower()
    if "existing installation" in lowered or "uninstall" in lowered:
        return  # the version being replaced, not the one in use
    if package in state.python.versions or len(state.python.versions) < MAX_KEPT:
        state.python.versions[package] = version
    state.match(signature, number, line)


# The banner runs before the generic version line: a banner's version wins over other mentions.
@collects("bitsandbytes v", r"(?<!=)=+\s{0,8}bitsandbytes v(?P<version>\d+\.\d+\.\d+[\w.]{0,20})\s{0,8}=", bnb=True)
def bnb_banner(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.banner_version = m.group("version")
    _version(state, "bitsandbytes", m.group("version"), number, line, S.BNB_VERSION)


@collects(
    "bitsandbytes",
    r"\bbitsandbytes(?:==|-)(?P<version>\d+\.\d+\.\d+(?:\.?(?:dev|post|rc)\d*)?)",
    r"\bbitsandbytes`?\s{0,40}(?:version\s*)?[:=]?\s{0,4}v?(?P<version>\d+\.\d+\.\d+(?:\.?(?:dev|post|rc)\d*)?)\b",
    r"Requirement already satisfied: bitsandbytes in \S{1,500} \((?P<version>\d+\.\d+\.\d+[\w.]{0,10})\)",
)
def bnb_version(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if state.bnb.banner_version:
        return
    state.bnb.seen = True
    _version(state, "bitsandbytes", m.group("version"), number, line, S.BNB_VERSION)


@collects(
    ("torch", "transformers", "accelerate", "peft", "triton", "PyTorch"),
    rf"\b(?P<package>transformers|accelerate|peft|triton|pytorch-triton-rocm|scipy|trl|diffusers|torch)"
    rf"(?:==|-|`?\s{{0,40}}(?:version\s*)?[:=]?\s{{0,4}}v?)(?P<version>{VER})(?![\w.])",
    rf"(?<!used to build )PyTorch(?: version)?(?: \(GPU\?\))?:\s*(?P<version>{VER})",
    rf"^\s{{0,8}}pytorch version:\s*(?P<version>{VER})",  # ComfyUI's start-up banner
    rf"^\s{{0,8}}PyTorch {VER} with CUDA \d{{3,4}} \(you have (?P<version2>{VER})\)",  # xFormers' build check
    rf"Requirement already satisfied: (?P<package>transformers|accelerate|peft|triton|scipy|torch) in \S{{1,500}}"
    rf" \((?P<version>{VER})\)",
)
def package_version(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    package = (m.groupdict().get("package") or "torch").lower()
    version = m.groupdict().get("version") or m.group("version2")
    if package == "torch":
        if not re.match(r"\d+\.\d+\.\d+", version):
            return  # "torch 2.1" in prose is too vague to trust
        cuda, hip, cpu = cuda_from_torch_version(version)
        state.torch.cuda = cuda or state.torch.cuda
        state.torch.hip = hip or state.torch.hip
        state.torch.cpu = state.torch.cpu or cpu
        if "PyTorch:" in line:
            state.recent.pytorch_block = number
    _version(state, package, version, number, line)


@collects(
    "torch.version.cuda",
    r"torch\.version\.cuda\s{0,8}(?:=|==|:|is)?\s{0,8}'?(?P<cuda>None|\d{1,2}\.\d{1,2})",
)
def torch_version_cuda(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    value = m.group("cuda")
    if value == "None":
        state.torch.cpu = True
    else:
        state.torch.cuda = value
    state.match(S.TORCH_CUDA_SETTINGS, number, line)


@collects(
    "used to build PyTorch",
    r"^\s{0,8}(?P<kind>CUDA|ROCM) used to build PyTorch:\s*"
    r"(?P<version>\d{1,2}\.\d{1,2}[\w.-]{0,40}|None|N/A)\s*$",
)
def torch_built_with(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """``python -m torch.utils.collect_env``: "CUDA used to build PyTorch: 12.1" (None for a CPU build)."""
    value = m.group("version")
    if m.group("kind") == "CUDA":
        if value == "None":
            state.torch.cpu = True
        elif value != "N/A":
            state.torch.cuda = value
    elif value[0].isdigit():
        state.torch.hip = ".".join(value.split(".")[:2])
    state.match(S.TORCH_CUDA_SETTINGS, number, line)


@collects(("CUDA:", "HIP:"), r"^\s{0,8}(?P<kind>CUDA|HIP|XPU): (?P<version>\d[\w.]{0,20}|N/A|None)\s*$")
def diagnostics_runtime(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if state.since(state.recent.pytorch_block, number) > _PYTORCH_BLOCK_LINES:
        return  # "CUDA: 12.6" is torch's only right under the "PyTorch:" line of python -m bitsandbytes
    value = m.group("version")
    if not value[0].isdigit():
        return
    if m.group("kind") == "CUDA":
        state.torch.cuda = value
    elif m.group("kind") == "HIP":
        state.torch.hip = value
    state.match(S.TORCH_CUDA_SETTINGS, number, line)


# Runs before the platform's path hints, which read a Python version from a Windows folder name
# only when no version is known yet.
@collects(
    ("Python", "python3", "Python3"),
    r"\bPython(?: version)?:?\s(?P<version>3\.\d{1,2}\.\d{1,2})",
    r"python(?P<version>3\.\d{1,2})[/\\]",
    r"[/\\]Python3(?P<minor>\d{1,2})[/\\]",
    evidence=20,
)
def python_version(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    groups = m.groupdict()
    if groups.get("minor"):
        version, strong = f"3.{groups['minor']}", False
    else:
        version = groups["version"]
        strong = version.count(".") == 2
    if strong or not state.python.version_strong:
        if state.python.version != version:
            state.match(S.PYTHON_VERSION, number, line)
        state.python.version = version
        state.python.version_strong = strong


# pip finds no bitsandbytes it can install here (issue 24): the requirement, the releases it offers, a wheel's tag.
@collects(
    ("the requirement bitsandbytes", "distribution found for bitsandbytes", "bitsandbytes-"),
    r"Could not find a version that satisfies the requirement bitsandbytes\b",
    r"No matching distribution found for bitsandbytes\b",
    r"bitsandbytes-\d+\.\d+[\w.+]{0,40}-py3-none-[\w.]{1,80}\.whl is not a supported wheel on this platform",
)
def pip_no_bnb_wheel(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """pip's list of the releases it could install is long; the line is kept with its first and last release, so
    that the newest one pip offers survives the cut of a recorded line."""
    offered = re.search(r"\(from versions: ([^)]{0,4000})\)", line)
    releases = [v.strip() for v in offered.group(1).split(",")] if offered else []
    if offered is not None and len(releases) > 3:
        line = line[: offered.start(1)] + f"{releases[0]}, ..., {releases[-1]}" + line[offered.end(1) :]
    state.match(S.PIP_NO_BNB_WHEEL, number, line)
