"""Version ranges: the vocabulary of every release boundary bnbdoctor knows.

A :class:`VersionRange` is a half-open range of releases, ``first <= version < below``, with the
source of the fact. Rules ask ``RANGE.contains(version)`` and build the text they print from the
same object (``RANGE.first_text``, ``minor(RANGE.below_text)``, ``RANGE.pip_spec()``), so that a
rule's check, its message and its page cannot name different releases.

Comparison follows :func:`bnbdoctor.knowledge.versions.release_tuple`, as every *behaviour* check in
bnbdoctor does (which loader code a release runs, which bug it has): only the release numbers count
(``0.45.1.dev0`` is 0.45.1, ``2.2.0a0+81ea7a4`` is 2.2.0), compared as tuples. A boundary is
therefore written with the precision it is compared at: ``"0.45"`` compares minor releases and
``"0.45.1"`` patch releases (tuples compare by length too, so the bare version ``"0.45"`` is inside a
range starting at ``"0.45"`` but before one starting at ``"0.45.0"``). :func:`full` pads a boundary for
display (``"0.50"`` -> ``"0.50.0"``).

Whether something *installs* is pip's question and is answered with pip's semantics instead
(:mod:`bnbdoctor.remedy.installable`, BNB206): there a pre-release is below its release
(``2.2.0a0+81ea7a4`` does not satisfy ``torch>=2.2``), which is how pip ends up replacing a vendor build.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from bnbdoctor.knowledge.versions import parse_version

Release = tuple[int, ...]


def _release(text: str | None) -> Release | None:
    """A boundary's release numbers; unlike a version read from a machine, a boundary must be valid."""
    if text is None:
        return None
    try:
        return Version(text).release
    except InvalidVersion:
        raise ValueError(f"not a version: {text!r}") from None


def _ordered(release: Release, post: int | None) -> Release:
    """A release and its post number as one tuple, compared at the precision written: (0, 40, 1) <
    (0, 40, 1, 1) (0.40.1.post1) < (0, 40, 2), and (0, 45) < (0, 45, 0) as before."""
    return release if post is None else (*release, post)


def minor(version: str) -> str:
    """``"0.45.1"`` -> ``"0.45"``: how texts name a release series."""
    return ".".join(version.split(".")[:2])


def full(version: str) -> str:
    """``"0.50"`` -> ``"0.50.0"``: a boundary written at minor precision, as a release."""
    parts = version.split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def dotted(release: Release) -> str:
    """``(5, 12)`` -> ``"5.12"``."""
    return ".".join(str(part) for part in release)


@dataclass(frozen=True)
class VersionRange:
    """The releases ``first <= version < below`` (``None``: unbounded on that side).

    ``last`` is how texts name the newest release inside the range when that is not derivable
    from ``below`` (``"0.41.x"`` for a range below 0.42.0). ``source`` names where the fact comes
    from (a section of ../shared/reference/bnb_internals.md, a changelog, a PR or an issue).
    """

    first: str | None
    below: str | None
    source: str
    last: str | None = None

    def __post_init__(self) -> None:
        _release(self.first)  # fail at import on a typo, not when a rule first runs
        _release(self.below)
        if not self.source:
            raise ValueError("a version range needs its source")

    @property
    def first_release(self) -> Release | None:
        return _release(self.first)

    @property
    def below_release(self) -> Release | None:
        return _release(self.below)

    def contains(self, version: str | Release | None) -> bool:
        """Whether ``version`` (text, or a release tuple already parsed) is in the range.

        A post-release counts after its release (a boundary of ``0.40.1.post1`` leaves 0.40.1 out: some
        bitsandbytes post-releases changed the loader). An unknown or unparseable version is in no range."""
        if isinstance(version, str) or version is None:
            parsed = parse_version(version)
            if parsed is None or not parsed.release:
                return False
            key = _ordered(parsed.release, parsed.post)
        else:
            if not version:
                return False
            key = _ordered(version, None)
        first = None if self.first is None else _ordered(Version(self.first).release, Version(self.first).post)
        below = None if self.below is None else _ordered(Version(self.below).release, Version(self.below).post)
        return (first is None or key >= first) and (below is None or key < below)

    @property
    def first_text(self) -> str:
        if self.first is None:
            raise ValueError("this range has no lower bound")
        return self.first

    @property
    def below_text(self) -> str:
        if self.below is None:
            raise ValueError("this range has no upper bound")
        return self.below

    @property
    def last_text(self) -> str:
        if self.last is None:
            raise ValueError("this range does not name its last release")
        return self.last

    @property
    def first_full(self) -> str:
        """``first`` as a release: ``"0.50"`` -> ``"0.50.0"``."""
        return full(self.first_text)

    @property
    def below_full(self) -> str:
        """``below`` as a release: ``"0.46"`` -> ``"0.46.0"``."""
        return full(self.below_text)

    @property
    def first_minor(self) -> str:
        """The series ``first`` starts: ``"0.43.1"`` -> ``"0.43"``."""
        return minor(self.first_text)

    @property
    def below_minor(self) -> str:
        """The series ``below`` starts: ``"0.45.1"`` -> ``"0.45"``."""
        return minor(self.below_text)

    def pip_spec(self) -> str:
        """A pip specifier for the releases in the range: ``>=0.39.0,<0.45.1``, ``>=0.48``."""
        parts = ([f">={self.first}"] if self.first else []) + ([f"<{self.below}"] if self.below else [])
        return ",".join(parts)

    def after(self) -> VersionRange:
        """The releases from ``below`` on: where a bug of this range is fixed."""
        return VersionRange(self.below_text, None, self.source)
