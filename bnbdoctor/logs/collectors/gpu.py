"""GPU names (``nvidia-smi -L``, the ``nvidia-smi`` table and query output, torch's device names
and old-GPU warning, free text), mapped to compute capability by :mod:`bnbdoctor.logs.gpus`.

Fills the ``gpu`` evidence with at most :data:`_MAX_GPUS` distinct GPUs; a GPU below compute
capability 6.0 is also recorded as ``gpu_below_minimum_cc``. (bitsandbytes' own "highest compute
capability" lines are read by :mod:`~bnbdoctor.logs.collectors.bnb_loader`.)
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.gpus import find_gpus
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("gpu")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises

_MAX_GPUS = 16


@collects(
    ("NVIDIA", "Tesla", "GeForce", "GPU", "Quadro", "TITAN"),
    r"(?:NVIDIA|Tesla|GeForce|Quadro|TITAN|GPU \d{1,2}:)",
    r"Found GPU\d{1,2} ",
    evidence=200,
)
def gpu_name(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    for gpu in find_gpus(line):
        key = f"{gpu.number}:{gpu.name}" if gpu.number is not None else gpu.name
        if key not in state.gpu.named and len(state.gpu.named) < _MAX_GPUS:
            state.gpu.named[key] = (gpu.number, gpu.cc, number)
            state.match(S.GPU_NAME, number, line)
            if gpu.cc is not None:
                state.gpu_cc(gpu.cc, number, line, highest=False)


# ZLUDA (CUDA programs on AMD GPUs, the way AMD users run kohya, OneTrainer and Forge on Windows), or an AMD Radeon
# GPU named in a log (``GPU: RX 7900 XT``): the context that makes a CUDA kernel error there a ZLUDA one (BNB506).
recognises(
    S.AMD_GPU_UNDER_CUDA,
    ("ZLUDA", "zluda", "RX ", "Radeon"),
    r"\b(?:ZLUDA|zluda)\b|\bRX \d{3,4}(?: XTX| XT| GRE)?\b|\bRadeon (?:RX|Pro|VII)\b",
    up_to=2,
)
