"""What was published: every bitsandbytes release on PyPI with its wheel tags and requirements, and
the (torch, CUDA) pairs PyTorch's wheel indexes serve.

A command bnbdoctor prints must name something that exists and installs on the machine it is
printed for. These tables are how it knows without the network:

- ``bnbdoctor/data/bnb_releases.json``: PyPI's own answer (wheel platform tags, Requires-Python),
  written by ``tools/fetch_bnb_index.py``. The torch requirement of each release comes from
  :data:`bnbdoctor.knowledge.releases.TORCH_MINIMUM_BY_RELEASE` (Requires-Dist, bnb_internals.md §5).
- :data:`TORCH_CUDA_WHEELS`: the CUDA variants each torch minor release was published with on
  download.pytorch.org (pytorch.org/get-started/previous-versions and RELEASE.md's release
  compatibility matrix). A torch newer than the table is *unknown*, never assumed published.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.version import InvalidVersion, Version

from bnbdoctor.knowledge.releases import TORCH_MINIMUM_BY_RELEASE
from bnbdoctor.knowledge.torch_wheels import TORCH_BUILDS

#: The upper bound of every bitsandbytes release's torch requirement so far ("torch<3,>=2.x").
TORCH_REQUIREMENT_BELOW = "3"


@dataclass(frozen=True)
class Published:
    """One bitsandbytes release as PyPI serves it."""

    version: str
    tags: tuple[str, ...]  # wheel platform tags ("any" for py3-none-any) and "sdist"
    requires_python: str | None
    yanked: bool = False

    @property
    def parsed(self) -> Version:
        return Version(self.version)

    @property
    def requires_torch(self) -> str | None:
        """The torch specifier of its Requires-Dist (">=2.2,<3"), None where it declares none."""
        found = None
        for first, needs in TORCH_MINIMUM_BY_RELEASE:
            if self.parsed >= Version(first):
                found = needs
        return f">={found},<{TORCH_REQUIREMENT_BELOW}" if found else None


@lru_cache(maxsize=1)
def published_releases() -> tuple[Published, ...]:
    """Every release on PyPI, oldest first (package data, not the machine under diagnosis)."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "bnb_releases.json")
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    releases = [
        Published(r["version"], tuple(r["tags"]), r.get("requires_python"), bool(r.get("yanked")))
        for r in raw["releases"]
    ]
    return tuple(sorted(releases, key=lambda r: r.parsed))


def _minor_of(release: Published) -> str:
    return ".".join(str(part) for part in release.parsed.release[:2])


def _groups(key: str) -> list[list[Published]]:
    """Consecutive published releases that declare the same requirements (``key``: "python", or "both" for
    Python and torch), oldest first; releases that declare none are left out."""
    groups: list[list[Published]] = []
    for release in (r for r in published_releases() if not r.yanked and r.requires_python and r.requires_torch):
        value = (release.requires_python, release.requires_torch if key == "both" else None)
        last = groups[-1][-1] if groups else None
        if last is not None and (last.requires_python, last.requires_torch if key == "both" else None) == value:
            groups[-1].append(release)
        else:
            groups.append([release])
    return groups


def _whole_series(group: list[Published]) -> list[str] | None:
    """The series (``"0.46"``) a group holds completely, or None when it holds part of one."""
    series = sorted({_minor_of(r) for r in group}, key=Version)
    every = [r for r in published_releases() if not r.yanked and _minor_of(r) in series]
    return series if len(every) == len(group) else None


def _spaced(spec: str) -> str:
    """``">=2.0,<3"`` -> ``">= 2.0, < 3"``."""
    return ", ".join(re.sub(r"^([<>=!~]+)", r"\1 ", part.strip()) for part in spec.split(","))


def requirements_table() -> str:
    """The rows of a Markdown table "| bitsandbytes | Python | torch |": what each release requires, from
    the published metadata (releases that declare it), one row per run of releases requiring the same."""
    rows = []
    for group in _groups("both"):
        series = _whole_series(group)
        label = ", ".join(series) if series else f"{group[0].version} – {group[-1].version}"
        rows.append(
            f"| {label} | {_spaced(group[0].requires_python or '')} | {_spaced(group[0].requires_torch or '')} |"
        )
    return "\n".join(rows)


def older_python_support() -> str:
    """The newest bitsandbytes for each Python that current releases no longer accept, newest Python first:
    ``3.9 works with bitsandbytes up to 0.48.x, and 3.8 with up to 0.45.5``."""
    parts: list[str] = []
    for group in reversed(_groups("python")[:-1]):
        python = (group[0].requires_python or "").removeprefix(">=")
        series = _whole_series([r for r in group if _minor_of(r) == _minor_of(group[-1])])
        newest = f"{series[0]}.x" if series else group[-1].version
        parts.append(
            f"{python} works with bitsandbytes up to {newest}" if not parts else f"{python} with up to {newest}"
        )
    return ", ".join(parts[:-1]) + f", and {parts[-1]}" if len(parts) > 1 else "".join(parts)


#: CUDA wheel variants of each torch minor release on download.pytorch.org/whl/cuXYZ.
#: Sources: https://pytorch.org/get-started/previous-versions/ and
#: https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix
#: (2.10: https://dev-discuss.pytorch.org/t/wheel-variants-for-pytorch-release-2-10-published/3305).
TORCH_CUDA_WHEELS: dict[str, tuple[str, ...]] = {
    "1.12": ("10.2", "11.3", "11.6"),
    "1.13": ("11.6", "11.7"),
    "2.0": ("11.7", "11.8"),
    "2.1": ("11.8", "12.1"),
    "2.2": ("11.8", "12.1"),
    "2.3": ("11.8", "12.1"),
    "2.4": ("11.8", "12.1", "12.4"),
    "2.5": ("11.8", "12.1", "12.4"),
    "2.6": ("11.8", "12.4", "12.6"),
    "2.7": ("11.8", "12.6", "12.8"),
    "2.8": ("12.6", "12.8", "12.9"),
    "2.9": ("12.6", "12.8", "13.0"),
    "2.10": ("12.6", "12.8", "13.0"),
}
#: The last patch release of each torch minor (what an unpinned install from that index gets).
TORCH_LAST_PATCH: dict[str, str] = {
    "1.12": "1.12.1",
    "1.13": "1.13.1",
    "2.0": "2.0.1",
    "2.1": "2.1.2",
    "2.2": "2.2.2",
    "2.3": "2.3.1",
    "2.4": "2.4.1",
    "2.5": "2.5.1",
    "2.6": "2.6.0",
    "2.7": "2.7.1",
    "2.8": "2.8.0",
    "2.9": "2.9.1",
    "2.10": "2.10.0",
}
#: The CUDA of the torch wheel PyPI itself serves on Linux x86-64 for each minor (``pip install torch``
#: without ``--index-url``), from the "Default" column of pytorch.org/get-started/previous-versions and
#: the wheels' ``nvidia-cuda-runtime-cu1x`` requirement. On Windows and macOS PyPI's torch is a CPU build.
#: A minor not listed is unknown: a replayed ``pip install torch`` then says it cannot tell.
TORCH_PYPI_LINUX_CUDA: dict[str, str] = {
    "1.13": "11.7",
    "2.0": "11.7",
    "2.1": "12.1",
    "2.2": "12.1",
    "2.3": "12.1",
    "2.4": "12.1",
    "2.5": "12.4",
    "2.6": "12.4",
    "2.7": "12.6",
    "2.8": "12.8",
    "2.9": "12.8",
}


def torch_newest(spec: str) -> str | None:
    """The newest torch release (a minor's last patch) that ``spec`` allows, or None when none known does."""
    from packaging.specifiers import SpecifierSet

    allowed = SpecifierSet(spec)
    fitting = [v for v in TORCH_LAST_PATCH.values() if allowed.contains(v)]
    return max(fitting, key=Version) if fitting else None


def cuda_indexes() -> frozenset[str]:
    """The CUDA versions PyTorch has published a wheel index for (``/whl/cu126`` is "12.6"): those of
    :data:`TORCH_CUDA_WHEELS` and of the arch-list table's builds, the two tables
    :func:`torch_published_for` reads."""
    return frozenset({cuda for cudas in TORCH_CUDA_WHEELS.values() for cuda in cudas} | {b.cuda for b in TORCH_BUILDS})


def _minor(version: str) -> str | None:
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def torch_published_for(version: str, cuda: str) -> bool | None:
    """Whether torch ``version`` (any patch of its minor) was published for CUDA ``cuda`` ("12.4");
    None when neither this table nor the arch-list table (:data:`bnbdoctor.knowledge.torch_wheels.TORCH_BUILDS`,
    whose rows are published builds too) knows that pair."""
    minor = _minor(version)
    if minor is None:
        return None
    if any(_minor(build.release) == minor and build.cuda == cuda for build in TORCH_BUILDS):
        return True
    if minor not in TORCH_CUDA_WHEELS:
        return None
    return cuda in TORCH_CUDA_WHEELS[minor]


def torch_for_cuda(cuda: str, at_least: str | None = None, near: str | None = None) -> str | None:
    """A torch release published for CUDA ``cuda``: ``near`` itself (its release numbers) when its minor
    was; else the published one closest above ``near`` (or below, when none is above); else the newest
    (at or above ``at_least`` when given). None when there is none."""
    candidates = [m for m, cudas in TORCH_CUDA_WHEELS.items() if cuda in cudas]
    if at_least is not None:
        floor = Version(at_least)
        candidates = [m for m in candidates if Version(TORCH_LAST_PATCH[m]) >= floor]
    if not candidates:
        return None
    near_minor = _minor(near) if near else None
    if near and near_minor in candidates:
        return ".".join(str(part) for part in Version(near).release)
    if near_minor is not None:
        above = [m for m in candidates if Version(m) > Version(near_minor)]
        if above:
            return TORCH_LAST_PATCH[min(above, key=Version)]
    return TORCH_LAST_PATCH[max(candidates, key=Version)]
