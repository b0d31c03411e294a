"""Property tests for the native parsers (ELF, ld.so.cache, PE, fatbin headers): structure-aware
generators -- valid headers with absurd offsets and counts, chains that revisit entries, truncations --
and the promise each parser makes: it never raises, and its work and memory stay in proportion to
the input. Plus the regression inputs a campaign (``bench/fuzz_parsers.py``) found, rebuilt by
``tests/fuzz_native_builders.py`` and committed under ``tests/data/fuzz/``.

Budgets are generous (seconds of a loaded CI box, allocations a small multiple of the input);
the failures they guard against took minutes and gigabytes.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzz_native_builders import (
    DT_NEEDED,
    DT_RPATH,
    DT_RUNPATH,
    DT_SONAME,
    FUZZ_DATA,
    REGRESSIONS,
    SHT_DYNSYM,
    SHT_STRTAB,
    SHT_VERDEF,
    SHT_VERNEED,
    SHT_VERSYM,
    Elf,
    Section,
    dynamic,
    ldcache_extensions,
    ldcache_new,
    ldcache_repeated_generator,
    vernaux,
    verneed,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnbdoctor.native.elf import ElfInfo, parse_elf
from bnbdoctor.native.fatbin import FATBIN_MAGIC, read_fatbin_archs
from bnbdoctor.native.ldcache import LdCache, parse_ld_so_cache
from bnbdoctor.native.pe import PeInfo, parse_pe

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Absurd-but-plausible 32-bit values: zero, small, around a page, the top of the range.
U32 = st.one_of(
    st.integers(0, 64), st.integers(0, 1 << 16), st.sampled_from([0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF])
)
U64 = st.one_of(U32, st.sampled_from([1 << 32, (1 << 63) - 1, (1 << 64) - 1]))


def bounded(parse: Callable[[bytes], object], data: bytes, seconds: float = 2.0) -> object:
    """Parse ``data`` and check the work: under ``seconds`` and allocating at most a few times its size."""
    tracemalloc.start()
    start = time.process_time()
    try:
        out = parse(data)
        took = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert took < seconds, f"{took:.2f} s for {len(data)} bytes"
    assert peak < 16 * len(data) + (8 << 20), f"{peak >> 20} MiB allocated for {len(data)} bytes"
    return out


def elf_ok(data: bytes) -> ElfInfo:
    info = bounded(parse_elf, data)
    assert isinstance(info, ElfInfo)
    assert info.error is None or "\n" not in info.error
    return info


# ----------------------------------------------------------------------------- ELF


strtabs = st.one_of(
    st.binary(max_size=256),
    st.builds(lambda n, c: c * n, st.integers(0, 1 << 14), st.sampled_from([b"A", b":", b"\0"])),
    st.just(b"\0libc.so.6\0libm.so.6\0GLIBC_2.2.5\0GLIBC_2.34\0$ORIGIN:/opt/lib\0"),
)
dyn_entries = st.lists(
    st.tuples(st.sampled_from([DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, 0, 5, -1]), U64), max_size=300
)


@FAST
@given(strings=strtabs, entries=dyn_entries, size=st.one_of(st.none(), U64), link=st.integers(0, 5))
def test_dynamic_section_with_absurd_values_is_bounded(
    strings: bytes, entries: list[tuple[int, int]], size: int | None, link: int
) -> None:
    elf_ok(
        Elf(
            [Section(".dynstr", SHT_STRTAB, strings), Section(".dynamic", 6, dynamic(entries), link=link, size=size)]
        ).build()
    )


@st.composite
def verneed_sections(draw: st.DrawFn) -> bytes:
    """A .gnu.version_r of entries and auxiliary entries with absurd counts and links: chains
    that point back at shared entries, past the section, or nowhere."""
    n = draw(st.integers(1, 64))
    parts = []
    for _ in range(n):
        if draw(st.booleans()):
            parts.append(
                verneed(
                    draw(U32) & 0xFFFF,
                    draw(U32),
                    draw(st.sampled_from([0, 16, 32, 48]) | U32),
                    draw(st.sampled_from([0, 16, 32]) | U32),
                )
            )
        else:
            parts.append(vernaux(draw(st.integers(0, 0xFFFF)), draw(U32), draw(st.sampled_from([0, 16, 32]) | U32)))
    return b"".join(parts)


@FAST
@given(chain=verneed_sections(), info=U32, strings=strtabs, repeat=st.integers(1, 64))
def test_version_chains_with_cycles_and_absurd_counts_are_bounded(
    chain: bytes, info: int, strings: bytes, repeat: int
) -> None:
    data = Elf(
        [
            Section(".dynstr", SHT_STRTAB, strings),
            Section(".dynamic", 6, dynamic([(DT_NEEDED, 1)]), link=1),
            Section(".gnu.version_r", SHT_VERNEED, chain * repeat, link=1, info=info),
            Section(".gnu.version_d", SHT_VERDEF, chain, link=1, info=info),
        ]
    ).build()
    elf_ok(data)


@FAST
@given(
    n=st.integers(0, 2000),
    name=U32,
    versions=st.binary(max_size=4096),
    strings=strtabs,
)
def test_symbol_versions_with_absurd_tables_are_bounded(n: int, name: int, versions: bytes, strings: bytes) -> None:
    syms = struct.pack("<IBBHQQ", name, 0x12, 0, 0, 0, 0) * n
    chain = verneed(1, 1, 16, 0) + vernaux(2, 1, 0)
    data = Elf(
        [
            Section(".dynstr", SHT_STRTAB, strings),
            Section(".dynamic", 6, dynamic([(DT_NEEDED, 1)]), link=1),
            Section(".gnu.version_r", SHT_VERNEED, chain, link=1, info=1),
            Section(".dynsym", SHT_DYNSYM, syms, link=1),
            Section(".gnu.version", SHT_VERSYM, versions or b"\x02\x00" * n, link=4),
        ]
    ).build()
    elf_ok(data)


@FAST
@given(
    shnum=st.integers(0, 0xFFFF),
    shentsize=st.sampled_from([0, 1, 40, 64, 65535]),
    shoff=U64,
    shstrndx=st.integers(0, 0xFFFF),
)
def test_section_header_table_with_absurd_values_is_bounded(
    shnum: int, shentsize: int, shoff: int, shstrndx: int
) -> None:
    data = bytearray(Elf([Section(".dynstr", SHT_STRTAB, b"\0" + b"A" * 65536)]).build())
    struct.pack_into("<Q", data, 0x28, shoff)
    struct.pack_into("<HHH", data, 0x3A, shentsize, shnum, shstrndx)
    elf_ok(bytes(data))


def test_many_sections_with_one_long_name_table_are_bounded() -> None:
    """16,384 section headers whose names all start in a 1 MiB table without NUL: names are cut
    (scanned to the table's end, that was 16 GiB of work)."""
    names = b"n" * (1 << 20)
    shnum = 1 << 14
    body = bytearray(64) + names
    shoff = len(body)
    header = struct.pack("<IIQQQQIIQQ", 0, 1, 0, 0, 64, len(names), 0, 0, 1, 0)
    body += b"".join(struct.pack("<I", i % len(names)) + header[4:] for i in range(shnum))
    body[0:64] = (
        b"\x7fELF\x02\x01\x01"
        + b"\0" * 9
        + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, shnum, 1)
    )
    info = elf_ok(bytes(body))
    assert info.error is not None and "no .dynamic" in info.error


def test_every_truncation_of_a_hostile_elf_never_raises() -> None:
    data = REGRESSIONS["elf-verneed-shared-aux.bin"]()[:4096]
    for cut in range(0, len(data), 7):
        elf_ok(data[:cut])


def test_valid_tables_still_read() -> None:
    strings = b"\0libc.so.6\0libfoo.so\0GLIBC_2.2.5\0$ORIGIN:/opt\0"
    chain = verneed(1, 1, 16, 0) + vernaux(2, 21, 0)
    info = elf_ok(
        Elf(
            [
                Section(".dynstr", SHT_STRTAB, strings),
                Section(".dynamic", 6, dynamic([(DT_NEEDED, 1), (DT_SONAME, 11), (DT_RUNPATH, 33)]), link=1),
                Section(".gnu.version_r", SHT_VERNEED, chain, link=1, info=1),
            ]
        ).build()
    )
    assert info.error is None
    assert (info.needed, info.soname, info.runpath) == (("libc.so.6",), "libfoo.so", ("$ORIGIN", "/opt"))
    assert info.version_needs == {"libc.so.6": ("GLIBC_2.2.5",)}


# ----------------------------------------------------------------------------- ld.so.cache


def cache_ok(data: bytes) -> LdCache:
    cache = bounded(parse_ld_so_cache, data)
    assert isinstance(cache, LdCache)
    return cache


@FAST
@given(
    entries=st.lists(st.tuples(st.integers(-(1 << 31), (1 << 31) - 1), U32, U32), max_size=400),
    strings=strtabs,
    nlibs=st.one_of(st.none(), U32),
)
def test_ldcache_with_absurd_offsets_and_counts_is_bounded(
    entries: list[tuple[int, int, int]], strings: bytes, nlibs: int | None
) -> None:
    cache_ok(ldcache_new(entries, strings, nlibs=nlibs))


@FAST
@given(sections=st.lists(st.tuples(st.integers(0, 2), U32, U32), max_size=200), strings=strtabs)
def test_ldcache_extensions_with_absurd_sections_are_bounded(
    sections: list[tuple[int, int, int]], strings: bytes
) -> None:
    cache_ok(ldcache_new([(0x0303, 72, 72)], strings, ldcache_extensions(sections)))


def test_ldcache_repeated_generator_sections_are_decoded_once() -> None:
    cache = cache_ok(ldcache_repeated_generator())
    assert cache.error is None and cache.generator is not None and len(cache.generator) <= 4096


def test_every_truncation_of_a_hostile_ldcache_never_raises() -> None:
    data = ldcache_new([(0x0303, 48 + 24 * 3 + i, 48 + 24 * 3) for i in range(3)], b"libc.so.6\0" * 4)
    for cut in range(len(data) + 1):
        cache_ok(data[:cut])


# ----------------------------------------------------------------------------- PE


@st.composite
def pe_files(draw: st.DrawFn) -> bytes:
    """An MZ stub, a PE header with absurd section counts and optional-header sizes, and a data
    directory whose import entries point anywhere."""
    e_lfanew = draw(st.sampled_from([64, 128]) | st.integers(0, 4096))
    nsections = draw(st.integers(0, 0xFFFF))
    opt_size = draw(st.sampled_from([0, 240, 0xFFFF]))
    body = bytearray(b"MZ" + b"\0" * 58 + struct.pack("<I", e_lfanew))
    body += b"\0" * max(0, e_lfanew - len(body))
    body[e_lfanew:] = b"PE\0\0" + struct.pack("<HHIIIHH", 0x8664, nsections, 0, 0, 0, opt_size, 0x2022)
    body += struct.pack("<H", 0x20B) + b"\0" * 106 + struct.pack("<I", 16)
    for _ in range(16):
        body += struct.pack("<II", draw(U32), draw(U32))
    body += draw(st.binary(max_size=2048))
    return bytes(body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=pe_files())
def test_pe_with_absurd_headers_is_bounded(data: bytes) -> None:
    info = bounded(parse_pe, data, seconds=5.0)
    assert isinstance(info, PeInfo)


# ----------------------------------------------------------------------------- fatbin


class _Reader:
    """A fatbin Reader over bytes that counts what was read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size, self.read = data, len(data), 0

    def read_at(self, offset: int, count: int) -> bytes:
        self.read += count
        return self.data[offset : offset + count]


@st.composite
def fatbin_sections(draw: st.DrawFn) -> bytes:
    """Containers with absurd header and payload sizes, entries that overrun them, padding runs."""
    out = b""
    for _ in range(draw(st.integers(0, 40))):
        entries = b"".join(
            struct.pack("<HHIQ", draw(st.integers(0, 3)), 0, draw(st.sampled_from([0, 32, 64]) | U32), draw(U64))
            + b"\0" * 12
            + struct.pack("<I", draw(st.integers(0, 200)))
            for _ in range(draw(st.integers(0, 4)))
        )
        size = draw(st.one_of(st.just(len(entries)), U64))
        out += struct.pack("<IHHQ", FATBIN_MAGIC, 1, draw(st.sampled_from([0, 16]) | st.integers(0, 0xFFFF)), size)
        out += entries + b"\0" * draw(st.integers(0, 80))
    return out


@FAST
@given(section=fatbin_sections())
def test_fatbin_headers_with_absurd_sizes_are_bounded(section: bytes) -> None:
    data = Elf([Section(".nv_fatbin", 1, section)]).build()
    reader = _Reader(data)
    result = bounded(lambda _d: read_fatbin_archs(reader), data)
    assert reader.read <= 256 * (64 * 32 + 16 + 68) + 3 * len(data) + 4096
    assert result is not None


# ----------------------------------------------------------------------------- regressions


def test_regression_inputs_are_what_the_builders_make() -> None:
    committed = sorted(p.name for p in FUZZ_DATA.glob("*.bin"))
    assert committed == sorted(REGRESSIONS)
    for name, build in REGRESSIONS.items():
        assert (FUZZ_DATA / name).read_bytes() == build(), f"rebuild with python tests/fuzz_native_builders.py: {name}"


EXPECTED = {
    "elf-verneed-shared-aux.bin": "chain visits offset",
    "elf-dynstr-unterminated.bin": "overlap without end",
    "elf-rpath-colons.bin": None,
    "ldcache-unterminated.bin": "overlap without end",
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_input_is_bounded_and_reported(name: str) -> None:
    data = (FUZZ_DATA / name).read_bytes()
    parse = parse_elf if name.startswith("elf-") else parse_ld_so_cache
    result = bounded(parse, data, seconds=1.0)
    error = result.error  # type: ignore[attr-defined]
    if EXPECTED[name] is None:
        assert error is None
    else:
        assert error is not None and EXPECTED[name] in error and error.startswith("corrupt ")


def test_rpath_repeats_add_nothing() -> None:
    info = elf_ok(Path(FUZZ_DATA / "elf-rpath-colons.bin").read_bytes())
    assert len(info.rpath) == 65537 + 65536  # two distinct entries, each once
