"""parse_pe on the mingw-built DLL fixtures, real launcher EXEs shipped with pip, and bad bytes."""

from __future__ import annotations

import importlib.util
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from bnbdoctor.native.pe import PeInfo, parse_pe

PE_DATA = Path(__file__).parent / "data" / "pe"
BNB_DLL = PE_DATA / "libbitsandbytes_cuda121.dll"
CUDART_DLL = PE_DATA / "cudart64_12.dll"
BNB_IMPORTS = (
    "KERNEL32.dll",
    "MSVCP140.dll",
    "VCRUNTIME140.dll",
    "api-ms-win-crt-runtime-l1-1-0.dll",
    "cublas64_12.dll",
    "cublasLt64_12.dll",
    "cudart64_12.dll",
    "cusparse64_12.dll",
)


def test_bnb_dll_fixture() -> None:
    info = parse_pe(BNB_DLL.read_bytes())
    assert info == PeInfo(
        error=None,
        machine="AMD64",
        is_dll=True,
        imports=BNB_IMPORTS,
        delay_imports=("cusparse64_12.dll",),
    )


def test_dll_without_imports() -> None:
    info = parse_pe(CUDART_DLL.read_bytes())
    assert (info.error, info.machine, info.is_dll, info.imports, info.delay_imports) == (
        None,
        "AMD64",
        True,
        (),
        (),
    )


def _objdump_dll_names(path: Path) -> list[str] | None:
    for tool in ("x86_64-w64-mingw32-objdump", "objdump"):
        exe = shutil.which(tool)
        if exe is None:
            continue
        run = subprocess.run([exe, "-p", str(path)], capture_output=True, text=True)
        if run.returncode == 0 and "pei-" in run.stdout:
            return [line.split("DLL Name:", 1)[1].strip() for line in run.stdout.splitlines() if "DLL Name:" in line]
    return None


def test_regular_imports_match_objdump() -> None:
    names = _objdump_dll_names(BNB_DLL)
    if names is None:
        pytest.skip("no objdump that reads PE files")
    # binutils 2.40's objdump does not list delay-load imports; compare the regular ones.
    info = parse_pe(BNB_DLL.read_bytes())
    regular = [n for n in info.imports if n not in info.delay_imports]
    assert regular == names[: len(regular)]
    assert set(names) <= set(info.imports)


def _pip_launcher(name: str) -> Path:
    spec = importlib.util.find_spec("pip")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("pip is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "_vendor" / "distlib" / name
    if not path.is_file():
        pytest.skip(f"pip does not ship {name}")
    return path


@pytest.mark.parametrize(("name", "machine"), [("t64.exe", "AMD64"), ("t32.exe", "I386"), ("t64-arm.exe", "ARM64")])
def test_real_pip_launchers(name: str, machine: str) -> None:
    info = parse_pe(_pip_launcher(name).read_bytes())
    assert info.error is None
    assert info.machine == machine
    assert info.is_dll is False
    assert "KERNEL32.dll" in info.imports or "KERNEL32.DLL" in info.imports
    names = _objdump_dll_names(_pip_launcher(name)) if machine == "AMD64" else None
    if names is not None:
        assert set(names) <= set(info.imports)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty file (0 bytes)"),
        (b"\x7fELF\x02\x01\x01\x00", "not a PE file (magic b'\\x7fELF')"),
        (b"MZ", "corrupt PE:"),
        (b"MZ" + b"\0" * 58 + struct.pack("<I", 0x10000), "corrupt PE:"),
        (b"MZ" + b"\0" * 58 + struct.pack("<I", 64) + b"XX\0\0" + b"\0" * 300, "corrupt PE:"),
    ],
)
def test_bad_bytes(data: bytes, expected: str) -> None:
    info = parse_pe(data)
    assert info.error is not None and info.error.startswith(expected), info.error
    assert "\n" not in info.error
    assert info.imports == ()


def test_import_table_cut_off_is_an_error() -> None:
    data = BNB_DLL.read_bytes()
    import pefile

    pe = pefile.PE(data=data, fast_load=True)
    import_rva = pe.OPTIONAL_HEADER.DATA_DIRECTORY[1].VirtualAddress
    cut = pe.get_offset_from_rva(import_rva)
    info = parse_pe(data[:cut])
    assert info.machine == "AMD64"
    assert info.error is not None and "PE" in info.error


@pytest.mark.slow  # thousands of parses
def test_every_truncation_and_random_corruption_never_raise() -> None:
    data = BNB_DLL.read_bytes()
    for cut in range(0, len(data), 5):
        info = parse_pe(data[:cut])
        assert isinstance(info, PeInfo)
        if cut < 64:
            assert info.error is not None
    rng = random.Random(5)
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        info = parse_pe(bytes(mutated))
        assert isinstance(info, PeInfo)
        if info.error is not None:
            assert "\n" not in info.error
