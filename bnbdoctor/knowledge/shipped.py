"""Which native libraries each bitsandbytes wheel ships (``bnbdoctor/data/bnb_shipped.json``).

Read from every unyanked release's wheel file list on PyPI by the oracle (``tools/oracle_bnb.py``) and
copied into the package by ``tools/write_bnb_shipped.py``. The re-diagnosis of a fix needs it: after
``pip install "bitsandbytes==0.45.5"`` the package folder holds exactly what that wheel ships for the
machine's platform, and an override such as ``BNB_CUDA_VERSION=118`` may name a file it does not.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

#: The wheel tag pip picks on each (os, arch), most specific first; "any" is the pure wheel of <= 0.42.
_TAGS = {
    ("linux", "x86_64"): ("manylinux_2_24_x86_64", "any"),
    ("linux", "aarch64"): ("manylinux_2_24_aarch64", "any"),
    ("windows", "x86_64"): ("win_amd64", "any"),
    ("windows", "aarch64"): ("win_arm64", "any"),
    ("macos", "aarch64"): ("macosx_14_0_arm64", "any"),
}


@lru_cache(maxsize=1)
def _shipped() -> dict[str, tuple[str, ...]]:
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "bnb_shipped.json")
    with open(path, encoding="utf-8") as handle:  # package data, not the machine under diagnosis
        raw = json.load(handle)
    return {key: tuple(names) for key, names in raw["shipped"].items()}


def shipped_libraries(version: str, os_name: str | None, arch: str | None) -> tuple[str, ...] | None:
    """The ``libbitsandbytes_*`` files release ``version``'s wheel for this platform puts in the package
    folder; None when no wheel of that release is recorded for it (or the platform is unknown)."""
    if os_name is None or arch is None:
        return None
    arch = "aarch64" if arch == "arm64" else arch
    for tag in _TAGS.get((os_name, arch), ()):
        names = _shipped().get(f"{version} {tag}")
        if names is not None:
            return names
    return None


def shipped_wheels() -> list[str]:
    """Every "<version> <tag>" recorded (for the tests and the docs)."""
    return sorted(_shipped())


@lru_cache(maxsize=1)
def legacy_libraries() -> frozenset[str]:
    """Every library a pure (``any``) wheel of the legacy-loader releases (<= 0.42) ships: a ``libbitsandbytes_cudaXYZ``
    that none of them has cannot have been installed from PyPI with that loader."""
    return frozenset(name for key, names in _shipped().items() if key.endswith(" any") for name in names)
