"""The GPU architectures a CUDA library was compiled for, from the headers of its ``.nv_fatbin`` section.

nvcc puts each translation unit's device code in a *fatbin container* (magic ``0xBA55ED50``, a
16-byte header with the container's size), and each container holds one entry per target: its kind
(1 = PTX, 2 = ELF, i.e. SASS), its header size, its payload size and its architecture (``61`` for
sm_61). The linker concatenates the containers into the ``.nv_fatbin`` section.

torch's ``libtorch_cuda.so`` is about 1 GB, so nothing here reads a payload: the ELF section headers
locate the section, then only container and entry headers are read (64 bytes each) and payloads are
skipped by offset. Every count, size and offset is checked against the section, so a corrupt file
ends in a one-line ``error``, never an exception or an endless loop.

Most containers of one library share the arch list the build was given (``TORCH_CUDA_ARCH_LIST``);
a few are built for fewer (kernels that need sm_80+) or more (``sm_90a``) targets. The library's
list is therefore the set of targets most containers share, read from at most
:data:`MAX_CONTAINERS` containers, and fewer once one set leads the others by :data:`DECISIVE_LEAD`
(a real library's list is then known after a few dozen containers, about a millisecond).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

#: Containers read at most (a real libtorch_cuda.so holds thousands; their arch lists repeat).
MAX_CONTAINERS = 256
#: Reading stops early once one target set leads every other by this many containers.
DECISIVE_LEAD = 12
#: Entries read at most in one container (a container holds one per target, about ten).
MAX_ENTRIES = 64
#: The section nvcc's device code lives in (fatbinary_section.h: FATBIN_DATA_SECTION_NAME).
FATBIN_SECTION = ".nv_fatbin"

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries after the header
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, payload size
_ENTRY_ARCH_AT = 28  # uint32 architecture inside the entry header
_ENTRY_MIN = 32
_ALIGN = 8  # containers start 8-byte aligned; zero padding between them is skipped
_MAX_PAD = 64


class Reader(Protocol):
    """What the parser needs of a file: its size and bounded reads at offsets."""

    size: int

    def read_at(self, offset: int, count: int) -> bytes: ...


@dataclass(frozen=True)
class FatbinArchs:
    """The targets of one library's device code; ``error`` says why they may be missing or partial."""

    error: str | None = None
    section_offset: int | None = None
    section_size: int | None = None
    sass: tuple[int, ...] = ()  # the SASS targets most containers share: (61, 70, 75, ...)
    ptx: tuple[int, ...] = ()  # the PTX targets most containers share
    containers: int = 0  # containers read
    entries: int = 0  # entry headers read
    sharing: int = 0  # containers whose targets are exactly (sass, ptx)
    complete: bool = False  # every container of the section was read
    other_sass: tuple[int, ...] = field(default_factory=tuple)  # SASS targets only some containers have


class _Corrupt(Exception):
    """A one-line reason why the headers could not be read."""


# ELF class -> (e_shoff struct code and offset, e_shentsize offset, Shdr format and size)
_ELF = {1: ("I", 0x20, 0x2E, "<IIIIIIIIII", 40), 2: ("Q", 0x28, 0x3A, "<IIQQQQIIQQ", 64)}
_MAX_SECTIONS = 4096


def find_section(reader: Reader, name: str) -> tuple[int, int]:
    """(file offset, size) of the section called ``name`` in a little-endian ELF file.

    Reads the ELF header, the section header table and the section-name table only."""
    head = reader.read_at(0, 64)
    if head[:4] != b"\x7fELF":
        raise _Corrupt(f"not an ELF file (magic {head[:4]!r})")
    if len(head) < 52 or head[4] not in _ELF:
        raise _Corrupt("truncated or unsupported ELF header")
    if head[5] != 1:
        raise _Corrupt("big-endian ELF: not a CUDA library for this machine")
    code, shoff_at, shent_at, shdr, shdr_size = _ELF[head[4]]
    if len(head) < shent_at + 6:
        raise _Corrupt("truncated ELF header")
    (shoff,) = struct.unpack_from("<" + code, head, shoff_at)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, shent_at)
    if shoff == 0 or shnum == 0:
        raise _Corrupt("ELF has no section headers")
    if shentsize < shdr_size or shnum > _MAX_SECTIONS or shoff + shnum * shentsize > reader.size:
        raise _Corrupt("corrupt ELF: section header table out of bounds")
    table = reader.read_at(shoff, shnum * shentsize)
    headers = [struct.unpack_from(shdr, table, i * shentsize) for i in range(shnum)]
    if not 0 < shstrndx < shnum:
        raise _Corrupt("ELF has no section-name table")
    names_off, names_size = headers[shstrndx][4], headers[shstrndx][5]
    if names_off + names_size > reader.size or names_size > 1 << 20:
        raise _Corrupt("corrupt ELF: section-name table out of bounds")
    names = reader.read_at(names_off, names_size)
    wanted = name.encode("ascii") + b"\0"
    for fields in headers:
        start = fields[0]
        if names[start : start + len(wanted)] == wanted:
            offset, size = fields[4], fields[5]
            if fields[1] == 8:  # SHT_NOBITS
                raise _Corrupt(f"{name} occupies no bytes in the file")
            if offset + size > reader.size:
                raise _Corrupt(f"truncated ELF: {name} ends past the end of the file")
            return offset, size
    raise _Corrupt(f"no {name} section (no CUDA device code in this library)")


def _container(reader: Reader, at: int, end: int) -> tuple[frozenset[int], frozenset[int], int, int]:
    """(SASS targets, PTX targets, entries read, offset after the container) of the container at ``at``."""
    head = reader.read_at(at, _CONTAINER.size)
    if len(head) < _CONTAINER.size:
        raise _Corrupt(f"truncated fatbin container at offset {at}")
    magic, _version, header_size, fat_size = _CONTAINER.unpack(head)
    if magic != FATBIN_MAGIC:
        raise _Corrupt(f"no fatbin container at offset {at} (magic {magic:#x})")
    stop = at + header_size + fat_size
    if header_size < _CONTAINER.size or stop > end:
        raise _Corrupt(f"fatbin container at offset {at} ends past its section")
    sass: set[int] = set()
    ptx: set[int] = set()
    entry, count = at + header_size, 0
    while entry + _ENTRY_MIN <= stop and count < MAX_ENTRIES:
        data = reader.read_at(entry, _ENTRY_MIN)
        if len(data) < _ENTRY_MIN:
            raise _Corrupt(f"truncated fatbin entry at offset {entry}")
        kind, _v, entry_header, payload = _ENTRY.unpack_from(data)
        (arch,) = struct.unpack_from("<I", data, _ENTRY_ARCH_AT)
        if entry_header < _ENTRY_MIN or entry + entry_header + payload > stop:
            raise _Corrupt(f"fatbin entry at offset {entry} ends past its container")
        if kind == KIND_ELF:
            sass.add(arch)
        elif kind == KIND_PTX:
            ptx.add(arch)
        count += 1
        entry += entry_header + payload
    return frozenset(sass), frozenset(ptx), count, stop


def _next_container(reader: Reader, at: int, end: int) -> int:
    """The offset of the next container at or after ``at``, skipping alignment padding (``end`` if none)."""
    at = (at + _ALIGN - 1) // _ALIGN * _ALIGN
    if at + _CONTAINER.size > end:
        return end
    pad = reader.read_at(at, _MAX_PAD + 4)
    for skip in range(0, len(pad) - 3, _ALIGN):
        if pad[skip : skip + 4] == FATBIN_MAGIC.to_bytes(4, "little"):
            return at + skip
        if any(pad[skip : skip + _ALIGN]):
            raise _Corrupt(f"no fatbin container at offset {at + skip}")
    return min(end, at + len(pad))


def read_fatbin_archs(reader: Reader, max_containers: int = MAX_CONTAINERS) -> FatbinArchs:
    """The targets of the library's device code; never raises on bad input."""
    try:
        offset, size = find_section(reader, FATBIN_SECTION)
    except _Corrupt as exc:
        return FatbinArchs(error=str(exc))
    except (struct.error, OSError, ValueError) as exc:
        return FatbinArchs(error=f"unreadable ELF: {type(exc).__name__}: {exc}"[:240])
    sets: Counter[tuple[frozenset[int], frozenset[int]]] = Counter()
    entries, at, end, error = 0, offset, offset + size, None
    try:
        while at < end and sum(sets.values()) < max_containers:
            sass, ptx, count, at = _container(reader, at, end)
            sets[(sass, ptx)] += 1
            entries += count
            at = _next_container(reader, at, end)
            counts = [*sorted(sets.values(), reverse=True), 0]
            if counts[0] - counts[1] >= DECISIVE_LEAD:
                break
    except _Corrupt as exc:
        error = str(exc)
    except (struct.error, OSError, ValueError) as exc:
        error = f"unreadable fatbin: {type(exc).__name__}: {exc}"[:240]
    if not sets:
        return FatbinArchs(error=error or "an empty .nv_fatbin section", section_offset=offset, section_size=size)
    # the most common target set; ties go to the larger set, then the lower archs (deterministic)
    (sass, ptx), sharing = max(sets.items(), key=lambda kv: (kv[1], len(kv[0][0]) + len(kv[0][1]), sorted(kv[0][0])))
    union = set().union(*(s for s, _ in sets))
    return FatbinArchs(
        error=error,
        section_offset=offset,
        section_size=size,
        sass=tuple(sorted(sass)),
        ptx=tuple(sorted(ptx)),
        containers=sum(sets.values()),
        entries=entries,
        sharing=sharing,
        complete=error is None and at >= end,
        other_sass=tuple(sorted(union - sass)),
    )
