"""Reads glibc's ``/etc/ld.so.cache``: which file the loader maps for a SONAME such as
``libcudart.so.12`` when neither ``LD_LIBRARY_PATH`` nor RUNPATH finds it.

Handles the current "glibc-ld.so.cache1.1" format (with its extension directory: generator
string and glibc-hwcaps subdirectories), the old "ld.so-1.7.0" format, and the old format
with the new one embedded after it. The layout follows glibc's ``sysdeps/generic/dl-cache.h``
and ``ldconfig.h``. Nothing here opens files; bad input never raises.

Work and memory stay in proportion to the file: the entry count is capped by the bytes that hold
entries, strings are cached by offset (a path and the SONAME that is its tail share bytes), and the
bytes read as strings are capped at :data:`STRING_BUDGET` times the file's size, so offsets that point
thousands of entries into one long unterminated run end in ``error`` instead of gigabytes of copies.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
_NEW_HEADER = 48  # sizeof(struct cache_file_new)
_NEW_ENTRY = 24  # sizeof(struct file_entry_new)
_OLD_HEADER = 16  # magic[11] + pad + nlibs
_OLD_ENTRY = 12  # sizeof(struct file_entry)
_EXTENSION_MAGIC = 0xEAA42174  # (uint32_t) -358342284
_TAG_GENERATOR, _TAG_GLIBC_HWCAPS = 0, 1
_HWCAP_EXTENSION = 1 << 62
_HWCAP_ISA_LEVEL_MASK = (1 << 10) - 1

#: The bytes read as strings may be at most this many times the file's size (plus STRING_SLACK).
STRING_BUDGET = 4
STRING_SLACK = 1 << 16
#: The generator string ldconfig writes is short ("ldconfig (GNU libc) 2.36"); a longer one is cut.
GENERATOR_MAX = 4096

_TYPES = {0x00: "libc4", 0x01: "ELF", 0x02: "libc5", 0x03: "libc6"}
# FLAG_REQUIRED_MASK values -> (arch name used here, suffix that `ldconfig -p` prints)
_REQUIRED = {
    0x0100: ("sparc64", ",64bit"),
    0x0200: ("ia64", ",IA-64"),
    0x0300: ("x86-64", ",x86-64"),
    0x0400: ("s390x", ",64bit"),
    0x0500: ("ppc64", ",64bit"),
    0x0600: ("mips64-n32", ",N32"),
    0x0700: ("mips64", ",64bit"),
    0x0800: ("x32", ",x32"),
    0x0900: ("arm-hard-float", ",hard-float"),
    0x0A00: ("aarch64", ",AArch64"),
    0x0B00: ("arm-soft-float", ",soft-float"),
    0x0C00: ("mips-nan2008", ",nan2008"),
    0x0D00: ("mips64-n32-nan2008", ",N32,nan2008"),
    0x0E00: ("mips64-nan2008", ",64bit,nan2008"),
    0x0F00: ("riscv-soft-float", ",soft-float"),
    0x1000: ("riscv-double-float", ",double-float"),
    0x1100: ("loongarch-soft-float", ",soft-float"),
    0x1200: ("loongarch-double-float", ",double-float"),
}
_ARCH_ALIASES = {
    "x86_64": "x86-64",
    "amd64": "x86-64",
    "arm64": "aarch64",
    "i386": "libc6",
    "i686": "libc6",
    "x86": "libc6",
}
# (ElfInfo.machine, elf_class) -> the arch the loader accepts for it; ARM, MIPS and RISC-V
# depend on e_flags (float ABI), so they are not listed.
_ELF_ARCH = {
    ("EM_X86_64", 64): "x86-64",
    ("EM_X86_64", 32): "x32",
    ("EM_386", 32): "libc6",
    ("EM_AARCH64", 64): "aarch64",
    ("EM_PPC64", 64): "ppc64",
    ("EM_S390", 64): "s390x",
    ("EM_IA_64", 64): "ia64",
    ("EM_SPARCV9", 64): "sparc64",
}


@dataclass(frozen=True)
class LdCacheEntry:
    """One cache line, as ``ldconfig -p`` prints it: ``soname (abi) => path``."""

    soname: str
    path: str
    flags: int  # raw flags word: type bits 0x00ff, required-arch bits 0xff00
    # "x86-64", "aarch64", "x32", ... from the required-arch bits; when those are 0 (the
    # platform's default ABI, i.e. i386 on x86) it is the type label: "libc6", "ELF", ...
    arch: str
    abi: str  # the text `ldconfig -p` prints in parentheses, e.g. "libc6,x86-64"
    hwcap: int | None = None  # raw hwcap word when non-zero (new format only)
    hwcap_subdir: str | None = None  # glibc-hwcaps subdirectory, e.g. "x86-64-v3"
    osversion: int = 0  # required OS version (new format only; 0 = none)


@dataclass(frozen=True)
class LdCache:
    """A parsed ld.so.cache; ``error`` says why ``entries`` may be incomplete."""

    error: str | None = None
    format: str | None = None  # "new", "old", or "old+new" (old format with new embedded)
    generator: str | None = None  # e.g. "ldconfig (Debian GLIBC 2.36-9+deb12u14) ... 2.36"
    entries: tuple[LdCacheEntry, ...] = ()


class _Corrupt(Exception):
    """A one-line, user-facing reason the cache cannot be read further."""


def parse_ld_so_cache(data: bytes) -> LdCache:
    """Parse an ld.so.cache file's bytes; never raises on bad input."""
    data = bytes(data)
    if not data:
        return LdCache(error="empty file (0 bytes), not an ld.so.cache")
    entries: list[LdCacheEntry] = []
    fmt: str | None = None
    generator: str | None = None
    try:
        if data.startswith(NEW_MAGIC):
            fmt = "new"
            generator = _parse_new(data, 0, entries)
        elif data.startswith(OLD_MAGIC):
            if len(data) < _OLD_HEADER:
                raise _Corrupt(f"truncated ld.so.cache: {len(data)} bytes, shorter than its header")
            (nlibs,) = struct.unpack_from("<I", data, 12)
            strings = _OLD_HEADER + nlibs * _OLD_ENTRY
            # ALIGN_CACHE: the new header is aligned like uint64_t (8 bytes, 4 on i386).
            new_at = next(
                (at for at in ((strings + 7) & ~7, (strings + 3) & ~3) if data.startswith(NEW_MAGIC, at)),
                None,
            )
            if new_at is not None and len(data) >= new_at + _NEW_HEADER:
                fmt = "old+new"
                generator = _parse_new(data, new_at, entries)
            else:
                fmt = "old"
                _parse_old(data, nlibs, strings, entries)
        elif data.startswith(NEW_MAGIC[:17]):
            return LdCache(error=f"unsupported ld.so.cache version {data[17:20]!r} (expected b'1.1')")
        else:
            return LdCache(error=f"not an ld.so.cache file (magic {data[:8]!r})")
    except _Corrupt as exc:
        return LdCache(error=str(exc), format=fmt, generator=generator, entries=tuple(entries))
    except Exception as exc:  # noqa: BLE001 - defensive: a bug here must not stop a diagnosis
        msg = " ".join(str(exc).split())
        return LdCache(
            error=f"corrupt ld.so.cache: {type(exc).__name__}: {msg}"[:240],
            format=fmt,
            generator=generator,
            entries=tuple(entries),
        )
    return LdCache(format=fmt, generator=generator, entries=tuple(entries))


class _Strings:
    """NUL-terminated strings of the cache file, cached by offset and read within a budget."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._cache: dict[int, str] = {}
        self._left = STRING_BUDGET * len(data) + STRING_SLACK

    def get(self, at: int, what: str) -> str:
        hit = self._cache.get(at)
        if hit is not None:
            return hit
        data = self._data
        if not 0 <= at < len(data):
            raise _Corrupt(f"corrupt ld.so.cache: {what} string offset {at} past end of file ({len(data)} bytes)")
        stop = data.find(b"\0", at, min(len(data), at + self._left))
        if stop < 0:
            if at + self._left < len(data):
                raise _Corrupt(
                    f"corrupt ld.so.cache: strings read past {STRING_BUDGET} times the file's size "
                    f"({len(data)} bytes): they overlap without end"
                )
            stop = len(data)
        self._left -= stop - at + 1
        text = self._cache[at] = data[at:stop].decode("utf-8", "surrogateescape")
        return text


def _describe(flags: int) -> tuple[str, str]:
    """(arch, abi) for a flags word, the way ldconfig's print_entry spells the abi."""
    label = _TYPES.get(flags & 0x00FF, "unknown")
    required = flags & 0xFF00
    if required == 0:
        return label, label
    arch, suffix = _REQUIRED.get(required, (f"required-0x{required:04x}", f",{required}"))
    return arch, label + suffix


def _parse_old(data: bytes, nlibs: int, strings: int, out: list[LdCacheEntry]) -> None:
    if strings > len(data):
        raise _Corrupt(f"truncated ld.so.cache: {nlibs} entries need {strings} bytes, file has {len(data)}")
    strs = _Strings(data)
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, _OLD_HEADER + i * _OLD_ENTRY)
        arch, abi = _describe(flags)
        soname = strs.get(strings + key, "library name")
        out.append(LdCacheEntry(soname, strs.get(strings + value, "path"), flags, arch, abi))


def _parse_new(data: bytes, base: int, out: list[LdCacheEntry]) -> str | None:
    """Entries of a cache_file_new at ``base``; returns the generator string if present."""
    if len(data) < base + _NEW_HEADER:
        raise _Corrupt(f"truncated ld.so.cache: {len(data)} bytes, shorter than its header")
    endian = data[base + 28] & 3
    if endian == 1:
        raise _Corrupt("ld.so.cache is marked invalid by ldconfig (endianness flag 1)")
    end = ">" if endian == 3 else "<"
    nlibs, _, _, ext_offset = struct.unpack_from(end + "IIB3xI", data, base + 20)
    generator, hwcaps = _parse_extensions(data, end, ext_offset)
    table_end = base + _NEW_HEADER + nlibs * _NEW_ENTRY
    fits = min(nlibs, max(0, (len(data) - base - _NEW_HEADER) // _NEW_ENTRY))
    strs = _Strings(data)
    for i in range(fits):
        flags, key, value, osversion, hwcap = struct.unpack_from(
            end + "iIIIQ", data, base + _NEW_HEADER + i * _NEW_ENTRY
        )
        subdir = None
        if ((hwcap >> 32) & ~_HWCAP_ISA_LEVEL_MASK) == (_HWCAP_EXTENSION >> 32):
            index = hwcap & 0xFFFFFFFF
            if index < len(hwcaps):
                subdir = strs.get(hwcaps[index], "glibc-hwcaps")
        arch, abi = _describe(flags)
        out.append(
            LdCacheEntry(
                soname=strs.get(base + key, "library name"),
                path=strs.get(base + value, "path"),
                flags=flags,
                arch=arch,
                abi=abi,
                hwcap=hwcap or None,
                hwcap_subdir=subdir,
                osversion=osversion,
            )
        )
    if table_end > len(data):
        raise _Corrupt(f"truncated ld.so.cache: header says {nlibs} entries, only {fits} fit in {len(data)} bytes")
    return generator


def _parse_extensions(data: bytes, end: str, offset: int) -> tuple[str | None, tuple[int, ...]]:
    """The generator string and the glibc-hwcaps string offsets; malformed ones are ignored,
    as glibc's loader ignores them."""
    if offset == 0 or offset % 4 or offset + 8 > len(data):
        return None, ()
    magic, count = struct.unpack_from(end + "II", data, offset)
    if magic != _EXTENSION_MAGIC or offset + 8 + count * 16 > len(data):
        return None, ()
    # The last section of each kind wins; each is decoded once, after the walk, so repeated
    # sections cost their 16-byte headers only.
    generator_at: tuple[int, int] | None = None
    hwcaps_at: tuple[int, int] | None = None
    for i in range(count):
        tag, _, sec_off, size = struct.unpack_from(end + "IIII", data, offset + 8 + i * 16)
        if sec_off + size > len(data):
            return None, ()
        if tag == _TAG_GENERATOR:
            generator_at = (sec_off, size)
        elif tag == _TAG_GLIBC_HWCAPS and size and size % 4 == 0 and sec_off % 4 == 0:
            hwcaps_at = (sec_off, size)
    generator = None
    if generator_at is not None:
        sec_off, size = generator_at
        generator = data[sec_off : sec_off + min(size, GENERATOR_MAX)].decode("utf-8", "replace")
    hwcaps: tuple[int, ...] = ()
    if hwcaps_at is not None:
        sec_off, size = hwcaps_at
        hwcaps = struct.unpack_from(f"{end}{size // 4}I", data, sec_off)
    return generator, hwcaps


def normalize_arch(arch: str) -> str:
    """Map common spellings ("x86_64", "arm64", "i686") to the ``LdCacheEntry.arch`` names."""
    return _ARCH_ALIASES.get(arch.lower(), arch)


def arch_for_elf(machine: str | None, elf_class: int | None) -> str | None:
    """The ``LdCacheEntry.arch`` the loader accepts for an ELF file (``ElfInfo.machine`` and
    ``elf_class``), or None where it depends on e_flags (ARM, MIPS, RISC-V) or is unknown."""
    return _ELF_ARCH.get((machine or "", elf_class or 0))


def lookup(cache: LdCache, soname: str, arch: str | None = None) -> list[str]:
    """Paths the cache lists for ``soname``, in cache order (the order the loader tries).

    ``arch`` filters on ``LdCacheEntry.arch`` (aliases such as "x86_64" accepted) or on the
    exact ``abi`` text; None returns every architecture's entries.
    """
    return paths_where(cache, lambda name: name == soname, arch)


def paths_where(cache: LdCache, soname_matches: Callable[[str], bool], arch: str | None = None) -> list[str]:
    """:func:`lookup` for every SONAME ``soname_matches`` accepts (``libcudart.so.*``), in cache order."""
    want = normalize_arch(arch) if arch is not None else None
    return [
        e.path for e in cache.entries if soname_matches(e.soname) and (want is None or e.arch == want or e.abi == arch)
    ]
