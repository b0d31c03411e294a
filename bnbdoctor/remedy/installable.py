"""Which bitsandbytes releases install on a target, as pip decides it.

pip installs a release when one of its wheels' platform tags matches the machine (a manylinux_2_24
wheel needs glibc 2.24+, macosx_14_0_arm64 needs macOS 14+ on Apple silicon), its Requires-Python
holds, and its torch requirement holds for the installed torch — compared as pip compares an
installed distribution (packaging semantics, pre-releases allowed: NVIDIA's ``2.2.0a0+81ea7a4`` is
*below* 2.2, so a release needing ``torch>=2.2`` makes pip replace that vendor build with PyPI's).
A release "for" a platform also has to run there: the ``py3-none-any`` wheels of 0.42 and older
install anywhere but hold only Linux x86-64 libraries, so they count for Linux x86-64 only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from bnbdoctor.knowledge.gpus import DROPPED_ARCHITECTURES
from bnbdoctor.knowledge.published import Published, published_releases
from bnbdoctor.remedy.target import Target


def _tag_fits(tag: str, target: Target) -> bool | None:
    """Whether a wheel platform tag installs and runs on the target (None: cannot tell)."""
    if tag == "sdist":
        return False  # a source build is never what a one-line command means
    if tag == "any":
        if target.os is None:
            return None
        return target.os == "linux" and target.arch in (None, "x86_64")
    if tag.startswith("manylinux_"):
        _, major, minor, arch = tag.split("_", 3)
        if target.os is not None and target.os != "linux":
            return False
        if target.arch is not None and target.arch != arch:
            return False
        if target.glibc is not None and target.glibc < Version(f"{major}.{minor}"):
            return False
        return True if target.os == "linux" else None
    if tag.startswith("macosx_"):
        _, major, minor, arch = tag.split("_", 3)
        if target.os is not None and target.os != "macos":
            return False
        if target.arch is not None and {"arm64": "aarch64"}.get(arch, arch) != target.arch:
            return False
        if target.macos is not None and target.macos < Version(f"{major}.{minor}"):
            return False
        return True if target.os == "macos" else None
    if tag.startswith("win_"):
        win_arch = {"win_amd64": "x86_64", "win_arm64": "aarch64"}.get(tag)
        if target.os is not None and target.os != "windows":
            return False
        if target.arch is not None and win_arch != target.arch:
            return False
        return True if target.os == "windows" else None
    return None


@lru_cache(maxsize=256)
def _specifier(text: str) -> SpecifierSet:
    return SpecifierSet(text)


@lru_cache(maxsize=4096)
def why_not(release: Published, target: Target, *, keep_torch: bool = True) -> str | None:
    """Why pip would not install ``release`` here (or would replace torch for it); None if it would.

    Cached: a report asks about the same few targets for every release, once per command."""
    if release.yanked:
        return "it was yanked"
    fits = [_tag_fits(tag, target) for tag in release.tags]
    if not any(f is not False for f in fits):
        return _platform_reason(release, target)
    for arch in DROPPED_ARCHITECTURES:
        if arch.major in target.gpu_majors and release.parsed >= Version(arch.removed_in):
            return f"it has no kernels for {arch.family} GPUs (gone from the wheels in {arch.removed_in})"
    python_spec, torch_spec = release.requires_python, release.requires_torch
    if target.python is not None and python_spec and not _specifier(python_spec).contains(target.python, True):
        return f"it requires Python {python_spec}"
    if keep_torch and target.torch and torch_spec and not _specifier(torch_spec).contains(target.torch, True):
        return f"it requires torch{torch_spec}"
    return None


def _platform_reason(release: Published, target: Target) -> str:
    linux = [t for t in release.tags if t.startswith("manylinux_")]
    if target.os == "linux" and target.glibc is not None:
        for tag in linux:
            _, major, minor, arch = tag.split("_", 3)
            if arch == target.arch and target.glibc < Version(f"{major}.{minor}"):
                return f"its {tag} wheel needs glibc {major}.{minor}+"
    return "it has no wheel for this platform"


def installable(target: Target, spec: SpecifierSet | None = None, *, keep_torch: bool = True) -> list[Published]:
    """The releases in ``spec`` (all when None) that install here, oldest first."""
    releases = published_releases()
    chosen = [r for r in releases if spec is None or spec.contains(r.parsed, prereleases=True)]
    return [r for r in chosen if why_not(r, target, keep_torch=keep_torch) is None]


@dataclass(frozen=True)
class Blocked:
    """No release of a requirement installs here: the first obstacle, and what to change first."""

    reason: str  # "every bitsandbytes>=0.46 release requires torch>=2.2,<3; this torch is 2.1.0"
    change: str  # "torch" | "python" | "os" | "platform"


def blocked(target: Target, spec: SpecifierSet | None) -> Blocked | None:
    """Why nothing in ``spec`` installs here, naming the first thing to change; None if something does."""
    if installable(target, spec):
        return None
    wanted = [r for r in published_releases() if spec is None or spec.contains(r.parsed, prereleases=True)]
    shown = f"bitsandbytes{spec}" if spec else "bitsandbytes"
    if not wanted:
        return Blocked(f"no {shown} release exists", "specifier")
    on_platform = [r for r in wanted if why_not(r, replace(target, python=None, torch=None)) is None]
    if not on_platform:
        reason = why_not(wanted[-1], replace(target, python=None, torch=None)) or "it has no wheel for this platform"
        change = "os" if "glibc" in reason else "platform"
        return Blocked(f"no {shown} release installs here: {reason.replace('it has', 'the newest has')}", change)
    with_python = [r for r in on_platform if why_not(r, replace(target, torch=None)) is None]
    if not with_python:
        newest = on_platform[-1]
        return Blocked(
            f"no {shown} release supports this Python {target.python}: {newest.version} requires Python "
            f"{newest.requires_python}",
            "python",
        )
    first = with_python[0]
    return Blocked(
        f"no {shown} release keeps this torch {target.torch}: {first.version} already requires "
        f"torch{first.requires_torch}, and pip would replace torch to install it",
        "torch",
    )


def describe(releases: list[Published], upper_open: bool) -> str:
    """A short specifier selecting exactly ``releases`` among the published ones (contiguous, oldest first).

    ``upper_open``: the newest published release is among them, so no upper bound is needed."""
    if not releases:
        raise ValueError("no releases to describe")
    everything = published_releases()
    first, last = releases[0], releases[-1]
    if first is last and not upper_open:
        return f"=={first.version}"
    lower = f">={first.version}" if first is not everything[0] else ""
    if upper_open:
        return lower or ""
    after = [r for r in everything if r.parsed > last.parsed]
    upper = f"<{_boundary(last, after[0])}" if after else ""
    return ",".join(part for part in (lower, upper) if part)


def _boundary(last: Published, next_release: Published) -> str:
    """The shortest bound between two consecutive releases: ``<0.46`` between 0.45.5 and 0.46.0."""
    minor = Version(f"{next_release.parsed.release[0]}.{next_release.parsed.release[1]}")
    if last.parsed < minor <= next_release.parsed:
        return str(minor)
    return next_release.version
