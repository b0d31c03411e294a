"""Where the recorded machines are at run time: the checkout's ``platform_fixtures/``, or the installed copy.

A recorded machine holds symlinks (``/lib -> usr/lib``, ``/usr/local/cuda -> /usr/local/cuda-12.1``) and a
wheel cannot, so an install carries the machines as one tar archive, ``bnbdoctor/data/platform_fixtures.tar.gz``
(:func:`pack`, which ``setup.py``'s build hook loads from this file: it uses the standard library only). It is
unpacked once (:func:`unpack`), on first use of ``--fixture`` or ``--list-fixtures``, into the user's cache
folder under a name made from the archive's digest, so a newer install never reads an older unpacking.
The order: ``$BNBDOCTOR_FIXTURES``, the checkout's folder, the archive. Nothing here runs on a live diagnosis,
and a checkout's ``--fixture`` run needs none of the archive modules (imported where they are used).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath

ARCHIVE_NAME = "platform_fixtures.tar.gz"
_PACKAGE = Path(__file__).resolve().parents[1]


class StoreError(OSError):
    """The packed machines could not be unpacked; the message is one line for the user."""


def checkout_dir() -> Path | None:
    """``platform_fixtures/`` beside the package in a source checkout (an editable install), if there."""
    folder = _PACKAGE.parent / "platform_fixtures"
    return folder if (_PACKAGE.parent / "pyproject.toml").is_file() and folder.is_dir() else None


def packed_archive() -> Path:
    """The archive an installed wheel carries (it may be absent: a checkout has the folder instead)."""
    return _PACKAGE / "data" / ARCHIVE_NAME


def cache_root() -> Path:
    """The user's cache folder for bnbdoctor, as each system names it."""
    # The tool's own settings, not the examined machine's: read from this process's environment.
    override = os.environ.get("BNBDOCTOR_CACHE")
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "bnbdoctor" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "bnbdoctor"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bnbdoctor"


def fixtures_dir() -> Path:
    """The folder of recorded machines: ``$BNBDOCTOR_FIXTURES``, the checkout's, or the unpacked archive."""
    override = os.environ.get("BNBDOCTOR_FIXTURES")
    if override:
        return Path(override)
    checkout = checkout_dir()
    if checkout is not None:
        return checkout
    archive = packed_archive()
    if archive.is_file():
        return unpacked(archive)
    return _PACKAGE.parent / "platform_fixtures"  # neither: the caller reports "no recorded machines in ..."


def unpacked(archive: Path, cache: Path | None = None) -> Path:
    """The folder ``archive`` unpacks to, unpacking it first if no earlier run did."""
    import hashlib
    import shutil
    import tempfile

    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    cache = cache_root() if cache is None else cache
    target = cache / f"platform_fixtures-{digest}"
    if target.is_dir():
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=cache))
    except OSError:
        # A read-only home: unpack under the temporary folder instead (once per run).
        staging = Path(tempfile.mkdtemp(prefix="bnbdoctor-fixtures-"))
        unpack(archive, staging)
        return staging
    try:
        unpack(archive, staging)
        staging.rename(target)
    except OSError:
        if not target.is_dir():  # not a second run racing this one to the same name
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return target


def pack(source: Path, target: Path) -> None:
    """Write ``source``'s machines (folders with a ``machine.json``) to ``target``: same bytes every run."""
    import gzip
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for machine in sorted(p for p in source.iterdir() if (p / "machine.json").is_file()):
            for path in [machine, *sorted(_walk(machine))]:
                info = tar.gettarinfo(str(path), arcname=path.relative_to(source).as_posix())
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
                if info.isreg():
                    with path.open("rb") as handle:
                        tar.addfile(info, handle)
                else:
                    tar.addfile(info)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(buffer.getvalue())


def _walk(folder: Path) -> list[Path]:
    """Every entry under ``folder``, symlinks as themselves (never followed)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        found += [Path(dirpath) / name for name in dirnames + filenames]
    return found


def unpack(archive: Path, dest: Path) -> None:
    """Unpack the machines into ``dest``: folders, files and symlinks only, every name inside ``dest``.

    The archive is the package's own, yet each name is checked anyway; symlink targets are written as
    recorded (absolute ones are re-rooted by :class:`~bnbdoctor.hosts.fixture.FixtureHost`, never followed here).
    """
    import shutil
    import tarfile

    with tarfile.open(archive, mode="r:gz") as tar:
        for member in tar:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts or not name.parts:
                raise StoreError(f"{archive}: refusing the entry {member.name!r}")
            path = dest.joinpath(*name.parts)
            if member.isdir():
                path.mkdir(parents=True, exist_ok=True)
            elif member.issym():
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.symlink(member.linkname, path)
                except OSError as exc:  # Windows without Developer Mode may not create symlinks
                    reason = exc.strerror or exc
                    raise StoreError(f"cannot create the symlink {member.name} in {dest}: {reason}") from None
            elif member.isreg():
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    raise StoreError(f"{archive}: cannot read {member.name!r}")
                with source, path.open("wb") as out:
                    shutil.copyfileobj(source, out)
                if member.mode & 0o111:
                    path.chmod(0o755)
