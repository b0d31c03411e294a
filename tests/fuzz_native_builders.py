"""Builders of small, hostile native files for the fuzz tests: a 64-bit little-endian ELF shared
object whose dynamic tables (``.dynstr``, ``.dynamic``, ``.gnu.version_r``, ``.gnu.version_d``,
``.dynsym``, ``.gnu.version``) are given as raw bytes, an ``ld.so.cache`` in the new format with raw
entries, and the regression inputs under ``tests/data/fuzz/`` -- each the failure structure a
campaign found (``bench/fuzz_parsers.py``), rebuilt here from nothing so that no vendor bytes are
committed.

``python tests/fuzz_native_builders.py`` rewrites ``tests/data/fuzz/``; the tests check that the
committed files are exactly what these builders make.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

FUZZ_DATA = Path(__file__).resolve().parent / "data" / "fuzz"

SHT_PROGBITS, SHT_STRTAB, SHT_DYNAMIC, SHT_DYNSYM = 1, 3, 6, 11
SHT_VERDEF, SHT_VERNEED, SHT_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 14, 15, 29


@dataclass
class Section:
    """One section: its name, type, raw bytes, and link/info as the header should say."""

    name: str
    kind: int
    data: bytes
    link: int = 0
    info: int = 0
    size: int | None = None  # the header's sh_size; None = len(data)
    offset: int | None = None  # the header's sh_offset; None = where the bytes were put


@dataclass
class Elf:
    """A 64-bit LSB ELF shared object (x86-64) with the given sections after the null section;
    ``shstrtab`` is appended last. Links are section indexes (1 = the first given section)."""

    sections: list[Section] = field(default_factory=list)

    def build(self) -> bytes:
        names = b"\0"
        name_at = []
        for sec in [*self.sections, Section(".shstrtab", SHT_STRTAB, b"")]:
            name_at.append(len(names))
            names += sec.name.encode() + b"\0"
        body = bytearray(b"\0" * 64)
        placed = []
        for sec in self.sections:
            body += b"\0" * (-len(body) % 8)
            placed.append(len(body))
            body += sec.data
        shstr_at = len(body)
        body += names
        body += b"\0" * (-len(body) % 8)
        shoff = len(body)
        shnum = len(self.sections) + 2
        headers = [b"\0" * 64]
        for sec, at, name in zip(self.sections, placed, name_at, strict=False):
            size = len(sec.data) if sec.size is None else sec.size
            offset = at if sec.offset is None else sec.offset
            headers.append(struct.pack("<IIQQQQIIQQ", name, sec.kind, 2, 0, offset, size, sec.link, sec.info, 8, 0))
        headers.append(struct.pack("<IIQQQQIIQQ", name_at[-1], SHT_STRTAB, 0, 0, shstr_at, len(names), 0, 0, 1, 0))
        body += b"".join(headers)
        ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
        body[0:64] = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, shnum, shnum - 1)
        return bytes(body)


def dynamic(entries: Sequence[tuple[int, int]]) -> bytes:
    """Elf64_Dyn entries, then DT_NULL."""
    return b"".join(struct.pack("<qQ", tag, val) for tag, val in [*entries, (0, 0)])


def verneed(vn_cnt: int, vn_file: int, vn_aux: int, vn_next: int) -> bytes:
    return struct.pack("<HHIII", 1, vn_cnt, vn_file, vn_aux, vn_next)


def vernaux(other: int, name: int, vna_next: int) -> bytes:
    return struct.pack("<IHHII", 0, 0, other, name, vna_next)


def dyn_elf(strings: bytes, entries: Sequence[tuple[int, int]], *extra: Section) -> bytes:
    """An ELF whose .dynamic (section 2) links .dynstr (section 1); ``extra`` sections follow."""
    return Elf(
        [Section(".dynstr", SHT_STRTAB, strings), Section(".dynamic", SHT_DYNAMIC, dynamic(entries), link=1), *extra]
    ).build()


def ldcache_new(
    entries: Sequence[tuple[int, int, int]], strings: bytes, ext: bytes = b"", nlibs: int | None = None
) -> bytes:
    """A "glibc-ld.so.cache1.1" file: raw (flags, key, value) entries (offsets from the file's start),
    then ``strings``, then ``ext`` (an extension directory, 4-aligned) if given."""
    count = len(entries) if nlibs is None else nlibs
    table = b"".join(struct.pack("<iIIIQ", flags, key, value, 0, 0) for flags, key, value in entries)
    head_len = 48 + len(table)
    body = table + strings
    ext_at = 0
    if ext:
        body += b"\0" * (-(head_len + len(strings)) % 4)
        ext_at = 48 + len(body)
        body += ext
    header = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI", count, len(strings), 2, ext_at) + b"\0" * 12
    return header + body


def ldcache_extensions(sections: Sequence[tuple[int, int, int]]) -> bytes:
    """An extension directory: magic, count, then (tag, flags, offset, size) per section."""
    return struct.pack("<II", 0xEAA42174, len(sections)) + b"".join(
        struct.pack("<IIII", tag, 0, off, size) for tag, off, size in sections
    )


# ----------------------------------------------------------------------------- regression inputs


def elf_verneed_shared_aux() -> bytes:
    """Every one of 4,096 .gnu.version_r entries points at the same 4,096-link auxiliary chain (the
    campaign's elf-00..02, 05..07: entries x links, quadratic in the section's size)."""
    strings = b"\0libc.so.6\0GLIBC_2.2.5\0"
    n = 4096
    entries = b"".join(verneed(0xFFFF, 1, (n - i) * 16, 16) for i in range(n))
    aux = b"".join(vernaux(2 + i % 8, 11, 16 if i < n - 1 else 0) for i in range(n))
    return dyn_elf(strings, [(DT_NEEDED, 1)], Section(".gnu.version_r", SHT_VERNEED, entries + aux, link=1))


def elf_dynstr_unterminated() -> bytes:
    """4,096 DT_NEEDED entries pointing at distinct indexes of a 64 KiB string table with no NUL (the
    campaign's elf-03/04: 4,096 strings of up to 64 KiB each, a quarter gigabyte)."""
    return dyn_elf(b"A" * 65536, [(DT_NEEDED, i) for i in range(4096)])


def elf_rpath_colons() -> bytes:
    """256 DT_RPATH entries each naming a 64 KiB run of ':' (the campaign's elf-08: 16 million
    empty search-path entries)."""
    return dyn_elf(b"\0" + b":" * 65536 + b"\0", [(DT_RPATH, 1 + i % 2) for i in range(256)])


def ldcache_unterminated() -> bytes:
    """8,192 entries whose names start at distinct offsets of a 128 KiB run without NUL (the
    campaign's ldcache-00..02: each string scanned and copied to the end of the file, a gigabyte)."""
    run = 128 << 10
    nlibs = 8192
    base = 48 + nlibs * 24
    return ldcache_new([(0x0303, base + i, base + i) for i in range(nlibs)], b"x" * run)


def ldcache_repeated_generator() -> bytes:
    """An extension directory of 4,096 generator sections, each a 64 KiB run (256 MiB decoded)."""
    strings = b"libc.so.6\0/lib/libc.so.6\0" + b"g" * (64 << 10)
    head = 48 + 24
    ext = ldcache_extensions([(0, head, len(strings))] * 4096)
    return ldcache_new([(0x0303, head, head + 10)], strings, ext)


REGRESSIONS = {
    "elf-verneed-shared-aux.bin": elf_verneed_shared_aux,
    "elf-dynstr-unterminated.bin": elf_dynstr_unterminated,
    "elf-rpath-colons.bin": elf_rpath_colons,
    "ldcache-unterminated.bin": ldcache_unterminated,
}


def main() -> int:
    FUZZ_DATA.mkdir(parents=True, exist_ok=True)
    for name, build in REGRESSIONS.items():
        (FUZZ_DATA / name).write_bytes(build())
        print(f"wrote tests/data/fuzz/{name}")  # noqa: T201 - a development command
    return 0


if __name__ == "__main__":
    sys.exit(main())
