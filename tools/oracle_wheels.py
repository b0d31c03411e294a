"""Read a published wheel's file list and Python sources without downloading the whole wheel.

bitsandbytes wheels are 50-250 MB, almost all of it native libraries; the oracle needs only the names
of those libraries and the ``.py`` files. files.pythonhosted.org answers HTTP ``Range`` requests, so
:class:`RangeFile` gives :mod:`zipfile` a seekable file over the network: it reads the central
directory (the file list) and then only the members asked for. What it reads is cached under
``~/.cache/bnbdoctor-oracle`` (outside the repository: a patient's code is never committed here).
"""

from __future__ import annotations

import io
import json
import re
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

SIMPLE = "https://pypi.org/simple/{name}/"
CACHE = Path.home() / ".cache" / "bnbdoctor-oracle"
_BLOCK = 256 * 1024


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched in blocks by HTTP Range requests."""

    def __init__(self, url: str) -> None:
        self.url = url
        request = urllib.request.Request(url, method="HEAD")  # noqa: S310 - https URLs from PyPI's index
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - https URLs from PyPI's index
            self.size = int(answer.headers["Content-Length"])
        self.position = 0
        self.blocks: dict[int, bytes] = {}

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def _fetch(self, start: int, end: int) -> None:
        """Fetch the blocks covering [start, end) that are not held yet, in one request."""
        first, last = start // _BLOCK, (max(end, start + 1) - 1) // _BLOCK
        missing = [b for b in range(first, last + 1) if b not in self.blocks]
        if not missing:
            return
        lo, hi = missing[0] * _BLOCK, min(self.size, (missing[-1] + 1) * _BLOCK) - 1
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={lo}-{hi}"})  # noqa: S310 - https URLs from PyPI's index
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 - https URLs from PyPI's index
            data = answer.read()
        for index in range(missing[0], missing[-1] + 1):
            offset = index * _BLOCK - lo
            self.blocks[index] = data[offset : offset + _BLOCK]

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        end = min(self.size, self.position + len(buffer))
        if end <= self.position:
            return 0
        self._fetch(self.position, end)
        out = bytearray()
        cursor = self.position
        while cursor < end:
            block = self.blocks[cursor // _BLOCK]
            skip = cursor % _BLOCK
            piece = block[skip : skip + (end - cursor)]
            out += piece
            cursor += len(piece)
        buffer[: len(out)] = out
        self.position = end
        return len(out)


@dataclass(frozen=True)
class Published:
    filename: str
    url: str

    @property
    def tag(self) -> str:
        """The wheel's platform tag (``sdist`` for a source archive)."""
        if not self.filename.endswith(".whl"):
            return "sdist"
        return self.filename[: -len(".whl")].rsplit("-", maxsplit=1)[-1]

    @property
    def version(self) -> str:
        return (
            self.filename.split("-")[1]
            if self.filename.endswith(".whl")
            else re.sub(r"\.(tar\.gz|zip)$", "", self.filename.split("-", 1)[1])
        )


def published_files(name: str) -> list[Published]:
    """Every file PyPI's simple index lists for a project (PEP 691 JSON)."""
    request = urllib.request.Request(  # noqa: S310 - https URLs from PyPI's index
        SIMPLE.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - https URLs from PyPI's index
        index = json.load(answer)
    return [Published(f["filename"], f["url"]) for f in index["files"] if not f.get("yanked")]


def wheel_contents(published: Published, wanted: re.Pattern[str]) -> tuple[list[str], dict[str, str]]:
    """(every member name, {name: text} of the members matching ``wanted``), cached per wheel."""
    folder = CACHE / "wheels" / published.filename
    listing = folder / "files.json"
    if listing.exists():
        names = json.loads(listing.read_text())
    else:
        with zipfile.ZipFile(RangeFile(published.url)) as archive:
            names = archive.namelist()
            for member in names:
                if wanted.search(member):
                    target = folder / "src" / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(member))
        folder.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(names))
    sources = {
        member: (folder / "src" / member).read_text(encoding="utf-8", errors="replace")
        for member in names
        if wanted.search(member) and (folder / "src" / member).exists()
    }
    return names, sources
