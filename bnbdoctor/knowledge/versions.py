"""Lenient version parsing: real machines report "2.1.0+cu121", "12.1", "0.43.0.dev0"."""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version


def parse_version(text: str | None) -> Version | None:
    """A comparable version, or None for something that is not one (never raises)."""
    if not text:
        return None
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        match = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text))
        return Version(match.group(1)) if match else None


def release_tuple(text: str | None) -> tuple[int, ...] | None:
    """(major, minor, micro) without pre/post/local parts: "2.1.0+cu121" -> (2, 1, 0)."""
    version = parse_version(text)
    return version.release if version else None


def major_minor(text: str | None) -> tuple[int, int] | None:
    """ "12.1" / "12.1.105" -> (12, 1); a bare "12" -> (12, 0)."""
    release = release_tuple(text)
    if not release:
        return None
    return (release[0], release[1] if len(release) > 1 else 0)


def at_least(text: str | None, minimum: str) -> bool | None:
    """Compare by release numbers only (a dev build of 0.45.0 counts as 0.45.0)."""
    release = release_tuple(text)
    if release is None:
        return None
    return release >= Version(minimum).release
