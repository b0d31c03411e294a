"""Per-release facts of bitsandbytes: platforms, requirements, GPU architectures.

Sources: ../shared/reference/bnb_internals.md (sections 4-6), read from bitsandbytes' tags and the
real PyPI wheels; each table names its evidence.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.knowledge.ranges import VersionRange, minor
from bnbdoctor.knowledge.versions import release_tuple

#: First release with official prebuilt binaries for a platform (PyPI platform tags by version).
#: Linux x86_64 has had binaries since the first releases, so it has no entry.
FIRST_RELEASE_FOR_PLATFORM: dict[tuple[str, str], str] = {
    ("windows", "x86_64"): "0.43.0",  # CHANGELOG 0.43.0: official Windows wheels
    ("linux", "aarch64"): "0.46.0",  # manylinux_2_24_aarch64 (#1539)
    ("macos", "aarch64"): "0.49.0",  # macosx_14_0_arm64 (#1818)
    ("windows", "aarch64"): "0.50.0",  # win_arm64
}

#: Minimum compute capability for 8-bit optimizers and 4/8-bit quantization (0.48+ docs: Pascal).
MIN_CC_QUANTIZATION = (6, 0)
#: LLM.int8() fast matmul (int8 tensor cores, cuBLASLt igemmlt) needs Turing or newer.
MIN_CC_INT8_MATMUL = (7, 5)
#: Devices with cc 7.5 but no tensor cores, excluded by supports_igemmlt() up to 0.45.x.
NO_TENSOR_CORE_NAMES = ("GTX 1630", "GTX 1650", "GTX 1660")


class TorchMinimum(NamedTuple):
    """From bitsandbytes ``first`` on, torch ``torch`` or newer is required."""

    first: str
    torch: str

    @property
    def series(self) -> str:
        """The release series the row starts: ``"0.50"``."""
        return minor(self.first)


#: Minimum torch by release (Requires-Dist, bnb_internals.md §5): the first release of each row.
TORCH_MINIMUM_BY_RELEASE: tuple[TorchMinimum, ...] = (
    TorchMinimum("0.45.0", "2.0"),
    TorchMinimum("0.46.0", "2.2"),
    TorchMinimum("0.48.0", "2.3"),
    TorchMinimum("0.50.0", "2.4"),
)
#: What current releases require of torch: the newest row.
CURRENT_TORCH_MINIMUM = TORCH_MINIMUM_BY_RELEASE[-1]
#: 0.46.0 moved the kernels behind torch.library custom operators, which older torch lacks.
TORCH_LIBRARY_OPS = VersionRange(
    "0.46", None, "bnb_internals.md §5: 0.46.0 introduced the torch.library dispatch (#1544)"
)


def known_release(version: str) -> tuple[int, ...]:
    """The release tuple of a version bnbdoctor itself records (this module's tables, the recorded
    wheels): always parseable, so an unparseable one is a bug in the data, not a user's input."""
    release = release_tuple(version)
    if release is None:
        raise ValueError(f"recorded version {version!r} is not a version")
    return release


@dataclass(frozen=True)
class Requirements:
    """Requires-Python and the torch requirement from release ``first`` on."""

    first: str
    python: str
    torch: str

    @property
    def series(self) -> str:
        """The release series the row starts: ``"0.49"``."""
        return minor(self.first)


#: For installs whose metadata is missing (bnb_internals.md §5, from the PyPI index and setup files).
KNOWN_REQUIREMENTS = (
    Requirements("0.49.0", ">=3.10", ">=2.3,<3"),
    Requirements("0.50.0", ">=3.10", ">=2.4,<3"),
)


def known_requirements(release: tuple[int, ...]) -> Requirements | None:
    """The requirements of the newest row of :data:`KNOWN_REQUIREMENTS` at or below ``release``."""
    found = None
    for row in KNOWN_REQUIREMENTS:
        if release >= release_tuple(row.first):  # type: ignore[operator]
            found = row
    return found


def legacy_cuda_setup(version: str | None) -> bool:
    """Releases <= 0.43.0 used the CUDASetup loader that searched env paths for libcudart."""
    return LEGACY_CUDA_SETUP.contains(version)


@dataclass(frozen=True)
class WheelLibrary:
    """One native library inside a recorded wheel."""

    file: str
    backend: str | None
    cuda_toolkit: str | None
    sass: tuple[int, ...]
    ptx: tuple[int, ...]
    needed: tuple[str, ...]
    runpath: str | None
    max_required: dict[str, str]
    version_needs: dict[str, list[str]]


@dataclass(frozen=True)
class RecordedWheel:
    version: str
    platform_tag: str
    cuda_toolkits: tuple[str, ...]
    libraries: dict[str, WheelLibrary]

    @property
    def os(self) -> str:
        return "windows" if self.platform_tag.startswith("win") else "linux"


@lru_cache(maxsize=1)
def recorded_wheels() -> tuple[RecordedWheel, ...]:
    """The real wheels recorded in bnbdoctor/data/bnb_wheels.json."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "bnb_wheels.json")
    with open(path, encoding="utf-8") as handle:  # package data, not the machine under diagnosis
        text = handle.read()
    raw: dict[str, Any] = json.loads(text)
    wheels = []
    for wheel in raw["wheels"]:
        libraries = {
            lib["file"]: WheelLibrary(
                file=lib["file"],
                backend=lib.get("backend"),
                cuda_toolkit=lib.get("cuda_toolkit"),
                sass=tuple(lib.get("sass", ())),
                ptx=tuple(lib.get("ptx", ())),
                needed=tuple(lib.get("needed", ())),
                runpath=lib.get("runpath"),
                max_required=dict(lib.get("max_required", {})),
                version_needs=dict(lib.get("version_needs", {})),
            )
            for lib in wheel["libraries"]
        }
        wheels.append(RecordedWheel(wheel["version"], wheel["platform_tag"], tuple(wheel["cuda_toolkits"]), libraries))
    return tuple(wheels)


def nearest_recorded_wheel(version: str | None, os_name: str) -> RecordedWheel | None:
    """The recorded wheel closest to ``version`` on that OS: the same minor release if one is
    recorded (0.45.0 -> 0.45.5), else the newest recorded release below it."""
    release = release_tuple(version)
    if release is None or os_name not in ("linux", "windows"):
        return None
    candidates = [w for w in recorded_wheels() if w.os == os_name]
    same_minor = [w for w in candidates if known_release(w.version)[:2] == release[:2]]
    if same_minor:
        return same_minor[0]
    older = [w for w in candidates if known_release(w.version) <= release]
    if older:
        return max(older, key=lambda w: known_release(w.version))
    return None


def kernel_runs_on(library: WheelLibrary, cc: tuple[int, int]) -> bool:
    """CUDA's compatibility rules: a cubin for sm_XY runs on sm_XZ with Z >= Y (same major);
    PTX for compute_XY is JIT-compiled for any GPU with cc >= XY."""
    major, minor = cc
    for arch in library.sass:
        if arch // 10 == major and arch % 10 <= minor:
            return True
    return any((arch // 10, arch % 10) <= cc for arch in library.ptx)
