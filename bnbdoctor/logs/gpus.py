"""NVIDIA GPU names in a log, and their compute capability.

Logs name GPUs in a few shapes: ``nvidia-smi -L`` (``GPU 0: Tesla T4 (UUID: ...)``), the
``nvidia-smi`` table (``|   0  Tesla K80   Off  | ...``), and free text from torch or the user
(``NVIDIA GeForce RTX 3090``, ``Tesla V100-SXM2-16GB``). The table below maps model names to
compute capability (NVIDIA's CUDA GPU list); it only needs the families bitsandbytes' thresholds
care about (below 6.0, below 7.5, and the rest). Two shapes print the compute capability next to
the name: torch's warning for old GPUs (``Found GPU0 GeForce GT 710 which is of cuda capability
3.5``) and ``nvidia-smi --query-gpu=name,compute_cap`` (``Quadro K2200, 5.0``); the printed value
is used for a name the table does not know.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SMI_L = re.compile(r"\bGPU (?P<index>\d{1,2}): (?P<name>[^()|]{2,80}?)\s*\(UUID")
_SMI_ROW = re.compile(r"^\|\s{1,6}(?P<index>\d{1,2})\s{1,6}(?P<name>[A-Za-z][^|]{2,60}?)\s{1,40}(?:On|Off)\s{0,8}\|")
_FREE = re.compile(
    r"(?P<name>(?:NVIDIA\s+)?(?:GeForce\s+)?(?:RTX|GTX|GT)\s?\d{3,4}(?:\s?(?:Ti|SUPER|Super))?(?:\s+Laptop\s+GPU)?"
    r"|(?:NVIDIA\s+)?Tesla\s+[KMPVT]\d{1,3}\w{0,4}(?:-\w{1,12}){0,3}"
    r"|(?:NVIDIA\s+)?Quadro\s+(?:RTX\s+)?[A-Z]{0,2}\d{2,5}\w{0,3}"
    r"|(?:NVIDIA\s+)?TITAN\s+(?:RTX|Xp|X|V|Black|Z)\b"
    r"|NVIDIA\s+(?:RTX\s+)?(?:A|H|L|B|GH|GB)\d{1,4}\w{0,4}(?:-\w{1,12}){0,3}"
    r"|NVIDIA\s+Jetson\s+\w{2,20}|Jetson\s+(?:AGX\s+)?(?:Orin|Xavier|TX2|Nano)\w{0,10})"
)

#: A name with the compute capability printed next to it (torch's old-GPU warning; nvidia-smi's query output).
_PRINTED_CC = (
    re.compile(
        r"\bFound GPU\d{1,2} (?P<name>[^\n]{2,80}?) which is of cuda capability "
        r"(?P<major>\d{1,2})\.(?P<minor>\d{1,2})"
    ),
    re.compile(  # torch 2.13+
        r"\bFound GPU\d{1,2} (?P<name>[^\n]{2,80}?) which is of compute capability \(CC\) "
        r"(?P<major>\d{1,2})\.(?P<minor>\d{1,2})"
    ),
    re.compile(  # torch up to 2.12: "... with CUDA capability sm_61 is not compatible ..."
        r"^\s{0,8}(?:\S*Warning:\s{0,4})?(?P<name>[^\n]{2,80}?) with CUDA capability "
        r"sm_(?P<major>\d{1,2}?)(?P<minor>\d) is not compatible"
    ),
    re.compile(
        r"^\s{0,8}(?:\d{1,2},\s{0,4})?(?P<name>(?:NVIDIA|Tesla|GeForce|Quadro|TITAN)[^,]{1,80}),"
        r"\s{0,4}(?P<major>\d{1,2})\.(?P<minor>\d{1,2})\s*$"
    ),
)

_CC: tuple[tuple[re.Pattern[str], tuple[int, int]], ...] = tuple(
    (re.compile(p), cc)
    for p, cc in (
        (r"\bK80\b", (3, 7)),
        (r"\bK(?:40|20X?|6000)\w*\b|GTX\s?TITAN|TITAN\s?(?:BLACK|Z)\b|GTX\s?7[89]0", (3, 5)),
        (r"\bK10\b|GTX\s?7[0-7][05]\b(?<!750)|GTX\s?6\d0", (3, 0)),
        (r"GTX\s?750|\bM10\b", (5, 0)),
        (r"GTX\s?9\d|\bM(?:40|60|6|4)\b|QUADRO\s+M\d|TITAN\s?X\b(?!P)", (5, 2)),
        (r"\bP100\b|GP100", (6, 0)),
        (r"\bP(?:40|4|6|102)\b|GTX\s?10[5-8]|GT\s?103|TITAN\s?XP|QUADRO\s+P\d", (6, 1)),
        (r"TX2", (6, 2)),
        (r"\bV100\b|TITAN\s?V\b|GV100", (7, 0)),
        (r"XAVIER", (7, 2)),
        (r"\bT4\b|RTX\s?20[5-8]|GTX\s?16[3-6]|TITAN\s?RTX|QUADRO\s+RTX|\bT(?:400|600|1000|1200)\b", (7, 5)),
        (r"\bA100\b|\bA30\b|\bA800\b", (8, 0)),
        (r"RTX\s?30[5-9]|RTX\s?A\d{4}|\bA(?:40|10G?|16|2|6000|5000|4500|4000|2000)\b", (8, 6)),
        (r"ORIN", (8, 7)),
        (r"RTX\s?40[5-9]|\bL4\b|\bL40S?\b|\bL20\b|RTX\s?6000\s?ADA", (8, 9)),
        (r"\bH100\b|\bH200\b|\bH800\b|\bGH200\b|\bH20\b", (9, 0)),
        (r"\bB200\b|\bB100\b|\bGB200\b", (10, 0)),
        (r"RTX\s?50[6-9]|RTX\s?PRO\s?6000", (12, 0)),
    )
)


class SeenGpu(NamedTuple):
    name: str
    number: int | None  # the index nvidia-smi printed, when it did
    cc: tuple[int, int] | None


def compute_capability(name: str) -> tuple[int, int] | None:
    """The compute capability of a GPU model name, or None for a name not in the table."""
    upper = name.upper()
    for regex, cc in _CC:
        if regex.search(upper):
            return cc
    return None


def _tidy(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip(" .,;:'\"")


def find_gpus(line: str) -> list[SeenGpu]:
    """GPUs named in one line (empty when the line names none)."""
    for regex in (_SMI_L, _SMI_ROW):
        match = regex.search(line)
        if match:
            name = _tidy(match.group("name"))
            return [SeenGpu(name, int(match.group("index")), compute_capability(name))]
    found = []
    for match in _FREE.finditer(line):
        name = _tidy(match.group("name"))
        cc = compute_capability(name)
        if cc is not None:
            found.append(SeenGpu(name, None, cc))
    if not found:
        for regex in _PRINTED_CC:
            match = regex.search(line)
            if match:
                cc = (int(match.group("major")), int(match.group("minor")))
                return [SeenGpu(_tidy(match.group("name")), None, cc)]
    return found
