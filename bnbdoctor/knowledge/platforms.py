"""Which platforms each bitsandbytes release ships for, and what a platform must provide.

The first release per platform comes from :data:`~bnbdoctor.knowledge.releases.FIRST_RELEASE_FOR_PLATFORM`;
the manylinux tags (and so the glibc floor pip enforces) and the py3-none-any era come from
../shared/reference/bnb_internals.md §5-6.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bnbdoctor.knowledge.ranges import VersionRange, minor
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM

#: Official Windows wheels (win_amd64) from 0.43.0.
WINDOWS_WHEELS = VersionRange(
    FIRST_RELEASE_FOR_PLATFORM[("windows", "x86_64")],
    None,
    "CHANGELOG 0.43.0: official Windows wheels (bnb_internals.md §5)",
)
#: Linux aarch64 wheels (manylinux_2_24_aarch64) from 0.46.0.
LINUX_AARCH64_WHEELS = VersionRange(
    FIRST_RELEASE_FOR_PLATFORM[("linux", "aarch64")],
    None,
    "bnb_internals.md §5: manylinux_2_24_aarch64 from 0.46.0 (#1539)",
)
#: macOS arm64 wheels (macosx_14_0_arm64) from 0.49.0.
MACOS_WHEELS = VersionRange(
    FIRST_RELEASE_FOR_PLATFORM[("macos", "aarch64")], None, "bnb_internals.md §5: macosx_14_0_arm64 from 0.49.0 (#1818)"
)
#: Windows arm64 wheels (win_arm64) from 0.50.0.
WINDOWS_ARM64_WHEELS = VersionRange(
    FIRST_RELEASE_FOR_PLATFORM[("windows", "aarch64")], None, "bnb_internals.md §5: win_arm64 from 0.50.0"
)
#: Up to 0.42 a py3-none-any wheel holding only Linux x86-64 .so files (it installs on Windows too).
LINUX_ONLY_WHEEL = VersionRange(None, WINDOWS_WHEELS.first, "bnb_internals.md §5: <= 0.42.0 py3-none-any", last="0.42")
#: On Windows the legacy setup of 0.38-0.42 crashes with "argument of type 'WindowsPath' is not iterable".
WINDOWS_PATH_NOT_ITERABLE = VersionRange(
    "0.38", WINDOWS_WHEELS.first, "failure catalog windows_path_not_iterable: PyPI 0.38-0.42 on Windows", last="0.42"
)


@dataclass(frozen=True)
class ManylinuxTag:
    """A manylinux wheel tag bitsandbytes' Linux wheels carry, from ``first`` on (PEP 600)."""

    tag: str  # "manylinux_2_24"
    first: str
    source: str

    @property
    def glibc(self) -> tuple[int, int]:
        """The oldest glibc pip installs the wheel on: the tag's ``_2_24`` (PEP 600)."""
        match = re.fullmatch(r"manylinux_(\d+)_(\d+)", self.tag)
        if match is None:
            raise ValueError(f"not a PEP 600 manylinux tag: {self.tag}")
        return int(match.group(1)), int(match.group(2))

    @property
    def first_minor(self) -> str:
        """The series the tag starts with: ``"0.43"``."""
        return minor(self.first)

    @property
    def glibc_text(self) -> str:
        return f"{self.glibc[0]}.{self.glibc[1]}"


#: Linux wheels by release: 0.43.0+ are manylinux_2_24 (hard-coded in .github/scripts/set_platform_tag.py).
MANYLINUX_TAGS = (ManylinuxTag("manylinux_2_24", "0.43.0", "bnb_internals.md §5-6: manylinux_2_24_x86_64 from 0.43.0"),)
#: The tag of current Linux wheels: what `pip install -U bitsandbytes` needs.
CURRENT_MANYLINUX = MANYLINUX_TAGS[-1]

#: Python 3.8+ no longer searches PATH for the DLLs an extension loads (os.add_dll_directory).
PYTHON_DLL_PATH_SEARCH_DROPPED = "3.8"  # docs.python.org/3/whatsnew/3.8.html (ctypes, Windows)

#: The JetPack major each L4T major ships with (NVIDIA's JetPack archive: L4T R32 is JetPack 4, R35 JetPack 5,
#: R36 JetPack 6); the Jetson AI Lab index names its channels after it.
JETPACK_FOR_L4T = {32: 4, 35: 5, 36: 6}
#: Third-party (NVIDIA Jetson AI Lab) wheels of torch and bitsandbytes built for JetPack, one index per
#: JetPack major and CUDA version: https://pypi.jetson-ai-lab.io/jp6/cu126. PyPI's aarch64 torch wheels are
#: CPU-only or built for server ARM (sbsa), neither sees a Jetson's GPU (bnb_internals.md §5, PR #1941).
JETSON_AI_LAB_INDEX = "https://pypi.jetson-ai-lab.io/jp{jetpack}/cu{major}{minor}"


def jetson_index(l4t_major: int | None, cuda: tuple[int, int] | None) -> str | None:
    """The Jetson AI Lab index for this board's JetPack and CUDA, when both are known."""
    jetpack = JETPACK_FOR_L4T.get(l4t_major) if l4t_major is not None else None
    if jetpack is None or cuda is None:
        return None
    return JETSON_AI_LAB_INDEX.format(jetpack=jetpack, major=cuda[0], minor=cuda[1])
