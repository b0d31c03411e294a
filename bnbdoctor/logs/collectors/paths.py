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
from collections.abc import Iterator

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState
from bnbdoctor.logs.tokens import ARCH, heads_before

#: Characters that end a path in a log line (quotes, brackets, separators), by path style.
_WINDOWS_STOPS = "'\"\n<>|*?"
_LINUX_STOPS = " \t\n\r\f\v'\"():,"
_DRIVE = re.compile(r"[A-Za-z]:\\")


def _windows_folder(line: str, name: str) -> str | None:
    """The first ``X:\\...\\<name>`` folder followed by ``\\`` (``[A-Za-z]:\\[^stops]{0,500}?\\<name>``)."""
    for head in heads_before(line, f"\\{name}\\", _WINDOWS_STOPS, 502):
        drive = _DRIVE.search(head)
        if drive:
            return head[drive.start() :] + "\\" + name
    return None


def _linux_folders(line: str, suffix: str) -> Iterator[str]:
    """Folders ``/...<suffix>`` followed by ``/`` (``/[^stops]{0,500}?<suffix>``), leftmost start first."""
    for head in heads_before(line, suffix + "/", _LINUX_STOPS, 500):
        start = head.find("/")
        if start != -1:
            yield head[start:] + suffix


COLLECTOR = Collector("paths")
collects = COLLECTOR.collects


def _build_machine_path(line: str) -> bool:
    return "csrc" in line and "ops.cu" in line


def _windows_paths(state: LogState, line: str) -> None:
    bnb = _windows_folder(line, "bitsandbytes")
    if bnb:
        state.bnb.location = bnb
        state.bnb.seen = True
        state.python.add_site_packages(bnb + "\\")
    torch = _windows_folder(line, "torch")
    if torch:
        state.torch.location = torch
    python = re.search(r"\\Python3(\d{1,2})\\", line)
    if python and not state.python.version:
        state.python.version = f"3.{python.group(1)}"


@collects(
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
    for folder in _linux_folders(line, "/bitsandbytes"):
        if not folder.endswith("/csrc/bitsandbytes"):
            state.bnb.location = folder
            state.bnb.seen = True
            state.python.add_site_packages(folder + "/")
            break
    for folder in _linux_folders(line, "packages/torch"):
        if folder[: -len("packages/torch")].endswith(("/", "-")):
            state.torch.location = folder
            break


@collects(
    ("/Users/", "/opt/homebrew", ".dylib", "/Library/", "Mac", "macOS", "Apple Silicon", "Apple silicon"),
    r"(?:^|[\s('\"])/Users/|/opt/homebrew/|-darwin|\.dylib\b|/Library/Frameworks/",
    # a Mac as users name theirs in the prose around a paste ("MacBook Air M2", "Macs with M1/M2/M3", "under MacOS")
    r"\bMacBook(?: Air| Pro)?\b|\bApple [Ss]ilicon\b|\b(?:mac|Mac)OS\b|\bMacs? with M[1-4]\b|\bMac (?:mini|Studio)\b",
    evidence=40,
)
def macos_hint(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.os_votes["macos"] += 2
