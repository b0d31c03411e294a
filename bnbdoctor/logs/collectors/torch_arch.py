"""torch's own verdict that it has no kernels for a GPU, and the architectures it lists.

torch warns at its first CUDA call when no architecture it was built for runs on a GPU. Two
wordings: up to 2.12, "<GPU> with CUDA capability sm_61 is not compatible with the current PyTorch
installation." followed by "The current PyTorch install supports CUDA capabilities sm_75 sm_80 ..."
(``torch.cuda.get_arch_list()``); from 2.13, "Found GPU0 <GPU> which is of compute capability (CC)
6.1." followed by one "- 7.5 which supports hardware CC ..." line per architecture. Both give the
``torch_gpu_incompatible`` signature and fill the torch architecture list; the GPU and its compute
capability are read by the gpu collector (:mod:`bnbdoctor.logs.gpus`).
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("torch architectures")
collects = COLLECTOR.collects


@collects(
    ("not compatible with the current PyTorch", "which is of compute capability", "does not include kernels"),
    r"with CUDA capability sm_\d{2,3} is not compatible with the current PyTorch installation",
    r"Found GPU\d{1,2} .{1,120}? which is of compute capability \(CC\) \d{1,2}\.\d",
    r"does not include kernels for this GPU",
)
def torch_gpu_incompatible(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.torch.arch_block = number
    state.match(S.TORCH_GPU_INCOMPATIBLE, number, line)


@collects(
    "supports CUDA capabilities",
    r"The current PyTorch install supports CUDA capabilities (?P<list>(?:(?:sm|compute)_\d{2,3}[af]?[ .]{0,2}){1,40})",
)
def torch_arch_list(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    sass: list[int] = []
    ptx: list[int] = []
    for kind, arch in re.findall(r"(sm|compute)_(\d{2,3})", m.group("list")):
        (sass if kind == "sm" else ptx).append(int(arch))
    state.torch.arch_list = (sorted(set(sass)), sorted(set(ptx)))
    state.match(S.TORCH_GPU_INCOMPATIBLE, number, line)


@collects(
    "which supports hardware CC",
    r"^\s{0,8}- (?P<major>\d{1,2})\.(?P<minor>\d) which supports hardware CC",
)
def torch_arch_item(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if state.since(state.torch.arch_block, number) > 40:
        return  # not part of torch's warning
    sass, ptx = state.torch.arch_list or ([], [])
    arch = int(m.group("major")) * 10 + int(m.group("minor"))
    state.torch.arch_list = (sorted({*sass, arch}), ptx)
