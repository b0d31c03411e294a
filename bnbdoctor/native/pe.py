"""Which DLLs a Windows PE file imports, so a missing ``cudart64_12.dll`` or ``MSVCP140.dll``
can be named before Windows reports only "The specified module could not be found".

Uses pefile with ``fast_load`` and then parses only the import and delay-import directories
(DLL names only, no symbols), so a 20 MB bnb DLL is cheap. Nothing here opens files; bad input
never raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import pefile

_DIR_IMPORT = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]
_DIR_DELAY_IMPORT = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]
_MACHINES = {
    value: name.removeprefix("IMAGE_FILE_MACHINE_")
    for name, value in pefile.MACHINE_TYPE.items()
    if isinstance(name, str)
}


@dataclass(frozen=True)
class PeInfo:
    """The import facts of one PE file; ``error`` says why they may be incomplete."""

    error: str | None = None
    machine: str | None = None  # "AMD64", "I386", "ARM64", or "0x...." when unknown
    is_dll: bool = False
    imports: tuple[str, ...] = ()  # DLL names as written: regular imports, then delay-load ones
    delay_imports: tuple[str, ...] = ()  # the delay-load subset of ``imports``


def parse_pe(data: bytes) -> PeInfo:
    """Parse the machine and imported DLL names of a PE file; never raises on bad input."""
    if len(data) == 0:
        return PeInfo(error="empty file (0 bytes), not a PE file")
    if data[:2] != b"MZ":
        return PeInfo(error=f"not a PE file (magic {bytes(data[:4])!r})")
    try:
        pe = pefile.PE(data=bytes(data), fast_load=True)
        machine = _MACHINES.get(pe.FILE_HEADER.Machine, f"0x{pe.FILE_HEADER.Machine:04x}")
        is_dll = bool(pe.is_dll())
    except Exception as exc:  # noqa: BLE001 - pefile raises PEFormatError, struct.error, ...
        return PeInfo(error=f"corrupt PE: {_one_line(exc)}")
    try:
        pe.parse_data_directories(directories=[_DIR_IMPORT, _DIR_DELAY_IMPORT], import_dllnames_only=True)
        regular = tuple(_name(e.dll) for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", ()))
        delay = tuple(_name(e.dll) for e in getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", ()))
        problem = _import_problem(pe, len(data), bool(regular), bool(delay))
    except Exception as exc:  # noqa: BLE001 - as above: a corrupt directory is a fact, not a crash
        return PeInfo(error=f"corrupt PE import directory: {_one_line(exc)}", machine=machine, is_dll=is_dll)
    return PeInfo(error=problem, machine=machine, is_dll=is_dll, imports=regular + delay, delay_imports=delay)


def _import_problem(pe: pefile.PE, size: int, have_regular: bool, have_delay: bool) -> str | None:
    """pefile records unreadable import tables as warnings (or silently skips a directory that
    lies past the end of the data); turn that into ``error``."""
    warnings = [w for w in pe.get_warnings() if "import" in w.lower()]
    if warnings:
        return f"truncated or corrupt PE: {' '.join(warnings[0].split())}"[:240]
    dirs = pe.OPTIONAL_HEADER.DATA_DIRECTORY
    for index, have, label in (
        (_DIR_IMPORT, have_regular, "import"),
        (_DIR_DELAY_IMPORT, have_delay, "delay-import"),
    ):
        if have or index >= len(dirs) or not dirs[index].VirtualAddress or not dirs[index].Size:
            continue
        # An empty table (just the zero terminator) is fine; one that cannot be read is not.
        offset = pe.get_offset_from_rva(dirs[index].VirtualAddress)
        if offset is None or offset + min(dirs[index].Size, 20) > size:
            return f"truncated or corrupt PE: the {label} directory lies past the end of the file"
    return None


def _name(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    return raw.decode("utf-8", "replace")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:240]
