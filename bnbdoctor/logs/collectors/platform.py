"""The operating system as the log states it: ``Platform:`` lines (``python -m bitsandbytes``,
``torch.utils.collect_env``), the glibc version (those lines, ``Libc version:``, ``ldd --version``),
WSL2 kernels and paths, Jetson releases.

Fills the ``platform`` evidence: an explicit OS (which beats the votes paths cast, see
:mod:`~bnbdoctor.logs.collectors.paths`), the architecture, the kernel or OS version, glibc, WSL2,
the Jetson release line.
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import LogState
from bnbdoctor.logs.tokens import ARCH

COLLECTOR = Collector("platform")
collects = COLLECTOR.collects

#: ``platform`` lines recorded from WSL and Jetson mentions (the facts are kept from all of them).
_PLATFORM_LINES = 5


@collects(
    ("Platform:", "platform:"),
    r"[Pp]latform:\s*(?P<os>Linux|Windows|macOS|Darwin)-(?P<rest>\S{1,200})",
    evidence=5,
)
def platform_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    system, rest = m.group("os"), m.group("rest")
    platform = state.platform
    platform.os_explicit = {"Linux": "linux", "Windows": "windows"}.get(system, "macos")
    arch = ARCH.search(rest)
    if arch:
        platform.arch = arch.group(1)
    if platform.os_explicit == "linux":
        kernel = re.match(r"([\w.+-]{1,80}?)-(?:x86_64|aarch64|arm64|ppc64le)", rest)
        if kernel:
            platform.kernel = kernel.group(1)
        glibc = re.search(r"glibc(\d\.\d{1,3})", rest)
        if glibc:
            platform.libc_version = glibc.group(1)
        if re.search(r"microsoft|WSL", rest, re.IGNORECASE):
            platform.wsl = True
    else:
        version = re.match(r"([\d.]{1,20})", rest)
        if version:
            platform.os_version = version.group(1).rstrip(".")
    state.match(S.PLATFORM, number, line)


@collects(
    ("libc:", "glibc", "ldd ("),
    r"libc:\s*glibc-(?P<version>\d\.\d{1,3})|with-glibc(?P<version2>\d\.\d{1,3})",
    r"\bLibc version:\s*glibc-(?P<version>\d\.\d{1,3})",  # python -m torch.utils.collect_env
    r"^\s{0,8}ldd \([^()]{1,80}\) (?P<version>\d\.\d{1,3})\s*$",  # ldd --version
    evidence=5,
)
def libc_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    groups = m.groupdict()
    state.platform.libc_version = groups.get("version") or groups.get("version2")


#: The platform a user states in prose: "running this from WSL", "under WSL".
_ON_WSL = re.compile(r"\b(?:on|in|from|under|using|via|inside|with) WSL\b")


@collects(("WSL", "/usr/lib/wsl"), r"microsoft-standard-WSL2|\bWSL2?\b|/usr/lib/wsl/lib", evidence=5)
def wsl(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if m.group(0) == "WSL" and not (re.search(r"\bWSL\b.{0,40}\b(?:2|Ubuntu|Debian)\b", line) or _ON_WSL.search(line)):
        return  # "WSL" alone in prose; WSL2 kernels and paths are matched above
    state.platform.wsl = True
    state.platform.os_votes["linux"] += 1
    state.match(S.PLATFORM, number, line, up_to=_PLATFORM_LINES)


@collects(
    ("tegra", "Jetson", "JetPack", "jetpack", "Jetpack", "TX2"),
    r"nv_tegra_release|\bL4T\b|JetPack|Jetson|\btegra\b|\bOrin\b|\bXavier\b"
    # as people write it: "NVIDIA TX2+jetpack 5"
    r"|\b[Jj]et[Pp]ack\b|\bTX2\b",
    evidence=5,
)
def jetson(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.platform.jetson = state.platform.jetson or line.strip()[:120]
    state.platform.os_votes["linux"] += 1  # L4T is Linux
    state.match(S.PLATFORM, number, line, up_to=_PLATFORM_LINES)
