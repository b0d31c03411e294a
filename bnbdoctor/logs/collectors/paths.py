"""Paths: which operating system they belong to, and where bitsandbytes, torch and Python are.

``C:\\...`` and ``[WinError ...]`` vote for Windows, ``/usr/...``, ``/home/...`` and ``.so`` for
Linux, ``/Users/...`` and ``.dylib`` for macOS (the votes decide the OS when no ``Platform:``
line states it). A path through ``.../bitsandbytes/`` or ``.../torch/`` is where the package is
installed; a Windows ``\\Python3NN\\`` folder gives the Python version when nothing else did.
Paths inside a kernel error (``csrc/ops.cu``) belong to the machine that built the library and
are skipped. No line is recorded: these are evidence only.
"""

from __future__ import annotations

import re

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState
from bnbdoctor.logs.tokens import ARCH

COLLECTOR = Collector("paths")
collects = COLLECTOR.collects


def _build_machine_path(line: str) -> bool:
    return "csrc" in line and "ops.cu" in line


def _windows_paths(state: LogState, line: str) -> None:
    for match in re.finditer(r"([A-Za-z]:\\[^'\"\n<>|*?]{0,500}?\\bitsandbytes)\\", line):
        state.bnb.location = match.group(1)
        state.bnb.seen = True
        state.python.add_site_packages(match.group(1) + "\\")
        break
    for match in re.finditer(r"([A-Za-z]:\\[^'\"\n<>|*?]{0,500}?\\torch)\\", line):
        state.torch.location = match.group(1)
        break
    python = re.search(r"\\Python3(\d{1,2})\\", line)
    if python and not state.python.version:
        state.python.version = f"3.{python.group(1)}"


@collects(
    "windows_hint",
    (":\\", "WinError", "WindowsPath", ".dll"),
    r"(?<![\w/])[A-Za-z]:\\{1,2}[\w$ .()~-]|\[WinError \d{1,5}\]|WindowsPath\(|\.dll\b|\.exe\b",
    evidence=40,
)
def windows_hint(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if _build_machine_path(line):
        return  # the build machine's path inside a kernel error, not this machine's
    state.platform.os_votes["windows"] += 2 if re.search(r"[A-Za-z]:\\", line) or "WinError" in line else 1
    _windows_paths(state, line)


@collects(
    "linux_hint",
    ("/",),
    r"(?:^|[\s('\"=:])/(?:usr|home|opt|lib|lib64|root|tmp|mnt|content|data\w{0,10}|srv|scratch|anaconda\w{0,3}"
    r"|miniconda\w{0,3}|conda|workspace|notebooks|kaggle|etc|var|nfs|gpfs)/|PosixPath\(|dist-packages|\.so(?:\.\d+)*\b",
    evidence=40,
)
def linux_hint(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if _build_machine_path(line):
        return
    state.platform.os_votes["linux"] += 1
    arch = ARCH.search(line)
    if arch and not state.platform.arch:
        state.platform.arch = arch.group(1)
    for match in re.finditer(r"(/[^\s'\"():,]{0,500}?/bitsandbytes)/", line):
        if not match.group(1).endswith("/csrc/bitsandbytes"):
            state.bnb.location = match.group(1)
            state.bnb.seen = True
            state.python.add_site_packages(match.group(1) + "/")
            break
    for match in re.finditer(r"(/[^\s'\"():,]{0,500}?[/-]packages/torch)/", line):
        state.torch.location = match.group(1)
        break


@collects(
    "macos_hint",
    ("/Users/", "/opt/homebrew", ".dylib", "/Library/"),
    r"(?:^|[\s('\"])/Users/|/opt/homebrew/|-darwin|\.dylib\b|/Library/Frameworks/",
    evidence=40,
)
def macos_hint(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.os_votes["macos"] += 2
