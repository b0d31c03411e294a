"""What the dynamic loader will ask of an ELF library: SONAME, DT_NEEDED, RPATH/RUNPATH and GNU
symbol versions, both needed (``.gnu.version_r``) and defined (``.gnu.version_d``).

bnb's CUDA libraries are ~20 MB, so only the dynamic tables are read (``.dynamic``, ``.dynstr``,
``.dynsym``, ``.gnu.version*``), never ``.symtab``: a 20 MB library parses in about a millisecond.
The section headers and tables are read here with struct and explicit bounds, because a corrupt
count or link must end in a one-line ``error``, never an exception, an endless loop or a memory spike.
Work and memory stay in proportion to the file: every count is capped by the section that holds its
entries (a dynamic section has at most size/entsize entries, a version chain at most size/16 links
and never revisits one), and the bytes read from a string table are capped by :data:`STRING_BUDGET`
times the table's size (strings are cached by index, so a valid table is read about once).
Nothing here opens files: callers read bytes through a host.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from bnbdoctor.native.elf_machines import MACHINE_NAMES

#: How many undefined symbol names are kept per needed version (the first ones, sorted).
SYMBOLS_PER_VERSION = 8
#: The bytes read from one string table may be at most this many times its size (plus
#: :data:`STRING_SLACK`). Strings are cached by index, so a valid table costs about its size once;
#: a corrupt one whose thousands of references point into one long unterminated run stops here.
STRING_BUDGET = 4
STRING_SLACK = 1 << 16
#: Section names are read for error messages only; longer ones are cut.
_SECTION_NAME_MAX = 64

_MAGIC = b"\x7fELF"
_DT_NEEDED, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 1, 14, 15, 29
_VER_FLG_BASE = 0x1
# ELF class -> (struct code of e_shoff, offset of e_shoff, offset of e_shentsize, Ehdr size)
_EHDR = {32: ("I", 0x20, 0x2E, 52), 64: ("Q", 0x28, 0x3A, 64)}
# ELF class -> (Elf_Dyn struct, Elf_Sym struct, index of st_name, index of st_shndx)
_DYN = {32: "iI", 64: "qQ"}
_SYM = {32: ("IIIBBH", 0, 5), 64: ("IBBHQQ", 0, 3)}


@dataclass(frozen=True)
class ElfInfo:
    """The dynamic-linking facts of one ELF file; ``error`` says why they may be incomplete."""

    error: str | None = None
    elf_class: int | None = None  # 32 or 64
    machine: str | None = None  # "EM_X86_64", "EM_AARCH64", ...
    soname: str | None = None
    needed: tuple[str, ...] = ()  # DT_NEEDED, in file order
    rpath: tuple[str, ...] = ()  # DT_RPATH split on ':' as written ($ORIGIN not expanded)
    runpath: tuple[str, ...] = ()  # DT_RUNPATH split on ':' as written
    # needed file -> version names it must define, sorted by version_key
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    version_defs: tuple[str, ...] = ()  # versions this file defines, file order, no base entry
    # needed version -> first SYMBOLS_PER_VERSION undefined symbols bound to it, sorted; keyed by
    # version name alone, so GLIBC_2.2.5 of libc.so.6 and of libpthread.so.0 share one entry
    symbols_by_version: dict[str, tuple[str, ...]] = field(default_factory=dict)


class _Corrupt(Exception):
    """A one-line, user-facing reason why the tables could not be read."""


@dataclass
class _Acc:
    """What has been read so far, so that a late failure still reports the early facts."""

    elf_class: int | None = None
    machine: str | None = None
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    version_defs: tuple[str, ...] = ()
    symbols_by_version: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def freeze(self, error: str | None) -> ElfInfo:
        return ElfInfo(
            error=error,
            elf_class=self.elf_class,
            machine=self.machine,
            soname=self.soname,
            needed=tuple(self.needed),
            rpath=self.rpath,
            runpath=self.runpath,
            version_needs=self.version_needs,
            version_defs=self.version_defs,
            symbols_by_version=self.symbols_by_version,
        )


class _Sec(NamedTuple):
    """The bounds of one section, checked against the file size (a tuple: a file may hold 65,535)."""

    name: str
    offset: int
    size: int
    link: int
    info: int


def parse_elf(data: bytes | bytearray | memoryview) -> ElfInfo:
    """Parse the dynamic-linking facts of an ELF file (any bytes-like object); never raises on bad input."""
    acc = _Acc()
    try:
        _parse(bytes(data) if not isinstance(data, bytes) else data, acc)
    except _Corrupt as exc:
        return acc.freeze(str(exc))
    except Exception as exc:  # noqa: BLE001 - struct.error, IndexError, UnicodeError, ...
        return acc.freeze(f"corrupt ELF: {_one_line(exc)}")
    return acc.freeze(None)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:240]


def _parse(data: bytes, acc: _Acc) -> None:
    size = len(data)
    if size == 0:
        raise _Corrupt("empty file (0 bytes), not an ELF library")
    if data[:4] != _MAGIC:
        raise _Corrupt(f"not an ELF file (magic {data[:4]!r})")
    if size < 16:
        raise _Corrupt(f"truncated ELF: {size} bytes, shorter than the ELF identification")
    if data[4] not in (1, 2):
        raise _Corrupt(f"unsupported ELF class byte {data[4]} (expected 1 = 32-bit or 2 = 64-bit)")
    if data[5] not in (1, 2):
        raise _Corrupt(f"unsupported ELF data encoding byte {data[5]} (expected 1 = LSB or 2 = MSB)")
    elf_class = acc.elf_class = 32 if data[4] == 1 else 64
    end = "<" if data[5] == 1 else ">"
    shoff_code, shoff_at, shent_at, ehdr_size = _EHDR[elf_class]
    if size < ehdr_size:
        raise _Corrupt(f"truncated ELF: {size} bytes, shorter than the {ehdr_size}-byte ELF header")
    (e_machine,) = struct.unpack_from(end + "H", data, 0x12)
    acc.machine = MACHINE_NAMES.get(e_machine, f"EM_{e_machine}")
    (shoff,) = struct.unpack_from(end + shoff_code, data, shoff_at)
    shentsize, shnum, _ = struct.unpack_from(end + "HHH", data, shent_at)
    if shoff == 0:
        raise _Corrupt("ELF has no section headers (stripped with sstrip?); dynamic tables not read")
    if shoff + max(shnum, 1) * shentsize > size:
        raise _Corrupt(
            f"truncated ELF: section header table past end of file "
            f"(ends at {shoff + max(shnum, 1) * shentsize}, file is {size} bytes)"
        )

    secs: dict[str, _Sec] = {}
    all_secs = _section_headers(data, end, elf_class, shoff, shentsize, shnum)
    for kind, sec in all_secs:
        if kind in _WANTED and _WANTED[kind] not in secs:
            secs[_WANTED[kind]] = sec
    all_secs_only = [sec for _, sec in all_secs]
    for s in secs.values():
        _check_bounds(s, size)

    tables: dict[int, _Strings] = {}

    def strtab(link: int) -> _Strings:
        """One reader per string table, so its cache and budget are shared by every section that links it."""
        if not 0 < link < len(all_secs_only):
            raise _Corrupt(f"corrupt ELF: section link {link} is not a section index")
        if link not in tables:
            tables[link] = _Strings(data, _check_bounds(all_secs_only[link], size))
        return tables[link]

    dyn = secs.get("SHT_DYNAMIC")
    if dyn is None:
        raise _Corrupt("ELF has no .dynamic section (a static binary or an object file?)")
    _read_dynamic(data, end, elf_class, acc, dyn, strtab(dyn.link))

    index_names: dict[int, str] = {}
    vn = secs.get("SHT_GNU_verneed")
    if vn is not None:
        acc.version_needs = _read_verneed(data, end, vn, strtab(vn.link), index_names)
    vd = secs.get("SHT_GNU_verdef")
    if vd is not None:
        acc.version_defs = _read_verdef(data, end, vd, strtab(vd.link))
    sym, versym = secs.get("SHT_DYNSYM"), secs.get("SHT_GNU_versym")
    if sym is not None and versym is not None and index_names:
        acc.symbols_by_version = _read_symbol_versions(data, end, elf_class, sym, strtab(sym.link), versym, index_names)


#: Section types read here (elf.h), by the names pyelftools gives them.
_WANTED = {
    6: "SHT_DYNAMIC",
    11: "SHT_DYNSYM",
    0x6FFFFFFF: "SHT_GNU_versym",
    0x6FFFFFFE: "SHT_GNU_verneed",
    0x6FFFFFFD: "SHT_GNU_verdef",
}
#: Elf32_Shdr / Elf64_Shdr without the fields not needed: name, type, offset, size, link, info.
_SHDR = {32: ("IIIIIIIIII", 40), 64: ("IIQQQQIIQQ", 64)}


def _section_headers(
    data: bytes, end: str, elf_class: int, shoff: int, shentsize: int, shnum: int
) -> list[tuple[int, _Sec]]:
    """(sh_type, section) for every section header, read with struct.

    pyelftools' ELFFile would do this too, but importing it pulls in its DWARF machinery (about
    30 ms) on every run; the tests check this reader against pyelftools on real libraries."""
    fmt, entry_size = _SHDR[elf_class]
    if shentsize < entry_size:
        raise _Corrupt(f"corrupt ELF: section header entries of {shentsize} bytes (need {entry_size})")
    shdr = struct.Struct(end + fmt)
    # name, type, offset, size, link, info of every header
    headers = [shdr.unpack_from(data, shoff + index * shentsize) for index in range(shnum)]
    (shstrndx,) = struct.unpack_from(end + "H", data, _EHDR[elf_class][2] + 4)
    names = headers[shstrndx] if 0 < shstrndx < len(headers) else None
    names_at, names_end = (names[4], min(len(data), names[4] + names[5])) if names is not None else (0, 0)
    out = []
    for fields in headers:
        name = ""
        start = names_at + fields[0]
        if names is not None and start < len(data):
            bound = min(names_end, start + _SECTION_NAME_MAX)
            stop = data.find(b"\0", start, bound)
            name = data[start : stop if stop >= 0 else bound].decode("ascii", "replace")
        out.append((fields[1], _Sec(name, fields[4], fields[5], fields[6], fields[7])))
    return out


def _check_bounds(sec: _Sec, size: int) -> _Sec:
    if sec.offset + sec.size > size:
        raise _Corrupt(
            f"truncated ELF: {sec.name or 'a'} section past end of file "
            f"(ends at {sec.offset + sec.size}, file is {size} bytes)"
        )
    return sec


class _Strings:
    """NUL-terminated strings of one string table, bounded by the table, cached by index, and read
    within a budget of :data:`STRING_BUDGET` times the table's size."""

    def __init__(self, data: bytes, tab: _Sec) -> None:
        self._data, self._tab = data, tab
        self._cache: dict[int, str] = {}
        self._left = STRING_BUDGET * tab.size + STRING_SLACK

    def get(self, index: int) -> str:
        hit = self._cache.get(index)
        if hit is not None:
            return hit
        tab = self._tab
        if index >= tab.size:
            raise _Corrupt(f"corrupt ELF: string index {index} past the end of {tab.name or 'a string table'}")
        start, limit = tab.offset + index, tab.offset + tab.size
        stop = self._data.find(b"\0", start, min(limit, start + self._left))
        if stop < 0:
            if start + self._left < limit:
                raise _Corrupt(
                    f"corrupt ELF: {tab.name or 'a string table'} is read past {STRING_BUDGET} times its size "
                    f"({tab.size} bytes): its strings overlap without end"
                )
            stop = limit
        self._left -= stop - start + 1
        text = self._cache[index] = self._data[start:stop].decode("utf-8", "replace")
        return text


def _read_dynamic(data: bytes, end: str, elf_class: int, acc: _Acc, dyn: _Sec, strs: _Strings) -> None:
    """DT_NEEDED, DT_SONAME, DT_RPATH and DT_RUNPATH; at most size/entsize entries, as the format allows."""
    fmt = struct.Struct(end + _DYN[elf_class])
    rpath: list[str] = []
    runpath: list[str] = []
    seen: set[tuple[int, int]] = set()  # a repeated search-path entry adds no directory
    count = dyn.size // fmt.size
    for tag, val in fmt.iter_unpack(data[dyn.offset : dyn.offset + count * fmt.size]):
        if tag == 0:  # DT_NULL
            break
        if tag == _DT_NEEDED:
            acc.needed.append(strs.get(val))
        elif tag == _DT_SONAME:
            acc.soname = strs.get(val)
        elif tag in (_DT_RPATH, _DT_RUNPATH) and (tag, val) not in seen:
            seen.add((tag, val))
            (rpath if tag == _DT_RPATH else runpath).extend(strs.get(val).split(":"))
    acc.rpath, acc.runpath = tuple(rpath), tuple(runpath)


class _Chain:
    """The entries of one version section visited so far: a chain may hold at most size/entry-size
    links (each entry occupies its own bytes) and may not visit an offset twice."""

    def __init__(self, sec: _Sec, entry: int, what: str) -> None:
        self._seen: set[int] = set()
        self._left = sec.size // entry
        self._limit, self._entry, self._what = sec.offset + sec.size, entry, what

    def visit(self, off: int, kind: str = "entry") -> None:
        if off + self._entry > self._limit:
            raise _Corrupt(f"corrupt ELF: {self._what} {kind} past the end of its section")
        if off in self._seen:
            raise _Corrupt(f"corrupt ELF: {self._what} chain visits offset {off} twice")
        if self._left <= 0:
            raise _Corrupt(f"corrupt ELF: {self._what} holds more entries than fit in its section")
        self._seen.add(off)
        self._left -= 1


def _read_verneed(
    data: bytes, end: str, sec: _Sec, strs: _Strings, index_names: dict[int, str]
) -> dict[str, tuple[str, ...]]:
    """Elf_Verneed (16 bytes) chains, each with Elf_Vernaux (16 bytes) chains; both kinds share the
    section, so together they are at most size/16 entries."""
    found: dict[str, set[str]] = {}
    chain = _Chain(sec, 16, ".gnu.version_r")
    off = sec.offset
    for _ in range(min(sec.info or sec.size, sec.size // 16)):
        chain.visit(off)
        _, cnt, file_idx, aux, nxt = struct.unpack_from(end + "HHIII", data, off)
        names = found.setdefault(strs.get(file_idx), set())
        aoff = off + aux
        for _ in range(cnt):
            chain.visit(aoff, "auxiliary entry")
            _, _, other, name_idx, anext = struct.unpack_from(end + "IHHII", data, aoff)
            name = strs.get(name_idx)
            names.add(name)
            index_names[other & 0x7FFF] = name
            if anext == 0:
                break
            aoff += anext
        if nxt == 0:
            break
        off += nxt
    return {file: tuple(sorted(names, key=version_key)) for file, names in found.items()}


def _read_verdef(data: bytes, end: str, sec: _Sec, strs: _Strings) -> tuple[str, ...]:
    """Elf_Verdef (20 bytes) chains; the first Elf_Verdaux (8 bytes) of each names it."""
    out: list[str] = []
    off, limit = sec.offset, sec.offset + sec.size
    for _ in range(min(sec.info or limit, sec.size // 20)):
        if off + 20 > limit:
            raise _Corrupt("corrupt ELF: .gnu.version_d entry past the end of its section")
        _, flags, _, cnt, _, aux, nxt = struct.unpack_from(end + "HHHHIII", data, off)
        if cnt and not flags & _VER_FLG_BASE:
            if off + aux + 8 > limit:
                raise _Corrupt("corrupt ELF: .gnu.version_d auxiliary entry past the end of its section")
            (name_idx,) = struct.unpack_from(end + "I", data, off + aux)
            out.append(strs.get(name_idx))
        if nxt == 0:
            break
        off += nxt
    return tuple(out)


def _read_symbol_versions(
    data: bytes,
    end: str,
    elf_class: int,
    sym: _Sec,
    strs: _Strings,
    versym: _Sec,
    index_names: dict[int, str],
) -> dict[str, tuple[str, ...]]:
    """Undefined .dynsym entries grouped by the needed version .gnu.version binds them to."""
    code, name_at, shndx_at = _SYM[elf_class]
    fmt = struct.Struct(end + code)
    count = min(sym.size // fmt.size, versym.size // 2)
    versions = struct.unpack_from(f"{end}{count}H", data, versym.offset)
    found: dict[str, set[str]] = {}
    for i, entry in enumerate(fmt.iter_unpack(data[sym.offset : sym.offset + count * fmt.size])):
        ver = versions[i] & 0x7FFF  # the top bit marks a hidden symbol
        if entry[shndx_at] != 0 or ver < 2 or ver not in index_names:
            continue  # defined, local/global, or bound to a version this file defines
        name = entry[name_at]
        if name:
            found.setdefault(index_names[ver], set()).add(strs.get(name))
    return {v: tuple(sorted(found[v])[:SYMBOLS_PER_VERSION]) for v in sorted(found, key=version_key)}


# Numbers of at most 18 digits: a longer tail (a corrupt name) is its own namespace, never a huge int().
_VERSION_RE = re.compile(r"^(?P<prefix>.*?)_(?P<num>\d{1,18}(?:\.\d{1,18})*)$")


def version_key(name: str) -> tuple[str, tuple[int, ...]]:
    """Sort key that orders GLIBCXX_3.4.9 < GLIBCXX_3.4.19 < GLIBCXX_3.4.30.

    The key is (namespace, numbers): "GLIBC_2.2.5" -> ("GLIBC", (2, 2, 5)),
    "CXXABI_TM_1" -> ("CXXABI_TM", (1,)). Names without a numeric tail ("GLIBC_PRIVATE",
    "libcudart.so.12", "CXXABI_FLOAT128") are their own namespace with no numbers.
    """
    m = _VERSION_RE.match(name)
    if m is None:
        return (name, ())
    return (m["prefix"], tuple(int(part) for part in m["num"].split(".")))


def max_versions(needs: Mapping[str, Iterable[str]] | Iterable[str]) -> dict[str, str]:
    """The highest version per namespace, e.g. {"GLIBC": "GLIBC_2.34", "GLIBCXX": "GLIBCXX_3.4.30"}.

    Accepts ``ElfInfo.version_needs`` (all files merged) or any iterable of version names.
    Names without a numeric tail are skipped: they have no order.
    """
    names: Iterable[str]
    names = [n for group in needs.values() for n in group] if isinstance(needs, Mapping) else needs
    best: dict[str, tuple[tuple[int, ...], str]] = {}
    for name in names:
        prefix, nums = version_key(name)
        if nums and (prefix not in best or nums > best[prefix][0]):
            best[prefix] = (nums, name)
    return {prefix: best[prefix][1] for prefix in sorted(best)}


def missing_versions(needed: Iterable[str], defined: Iterable[str]) -> list[str]:
    """Needed version names that ``defined`` lacks, sorted by version_key.

    The loader matches version names exactly, so this is a set difference, not a comparison
    with the maximum.
    """
    have = set(defined)
    return sorted({n for n in needed if n not in have}, key=version_key)
