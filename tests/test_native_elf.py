"""parse_elf against readelf on real bitsandbytes libraries, this machine's libstdc++, and the
small real fixtures built by tools/build_native_fixtures.sh."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from bnbdoctor.native.elf import (
    SYMBOLS_PER_VERSION,
    ElfInfo,
    max_versions,
    missing_versions,
    parse_elf,
    version_key,
)
from bnbdoctor.native.ldcache import lookup, parse_ld_so_cache

ELF_DATA = Path(__file__).parent / "data" / "elf"
READELF = shutil.which("readelf")
needs_readelf = pytest.mark.skipif(READELF is None, reason="readelf (binutils) is not installed")


def _bnb_dir() -> Path | None:
    spec = importlib.util.find_spec("bitsandbytes")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


BNB_DIR = _bnb_dir()


def _real_bnb_lib(name: str) -> Path:
    if BNB_DIR is None:
        pytest.skip("bitsandbytes is not installed")
    path = BNB_DIR / name
    if not path.is_file():
        pytest.skip(f"{name} is not in the installed bitsandbytes wheel")
    return path


def _first_rocm_lib() -> str:
    if BNB_DIR is None:
        pytest.skip("bitsandbytes is not installed")
    libs = sorted(p.name for p in BNB_DIR.glob("libbitsandbytes_rocm*.so"))
    if not libs:
        pytest.skip("the installed bitsandbytes wheel has no ROCm library")
    return libs[0]


def _parse(path: Path) -> ElfInfo:
    return parse_elf(path.read_bytes())


# ------------------------------------------------------------------------------------------
# readelf as the reference
# ------------------------------------------------------------------------------------------
def _readelf(*args: str) -> str:
    assert READELF is not None
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run([READELF, *args], capture_output=True, text=True, check=True, env=env).stdout


def _readelf_dynamic(path: Path) -> dict[str, str | list[str] | None]:
    """needed / soname / rpath / runpath from `readelf -dW`."""
    lists: dict[str, list[str]] = {"needed": [], "rpath": [], "runpath": []}
    soname: str | None = None
    for line in _readelf("-dW", str(path)).splitlines():
        m = re.search(r"\((NEEDED|SONAME|RPATH|RUNPATH)\)\s+.*?: \[(.*)\]$", line)
        if not m:
            continue
        tag, value = m.groups()
        if tag == "NEEDED":
            lists["needed"].append(value)
        elif tag == "SONAME":
            soname = value
        else:
            lists[tag.lower()].extend(value.split(":"))
    return {**lists, "soname": soname}


def _readelf_versions(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """(version definitions without the BASE entry, needs file -> names) from `readelf -VW`."""
    defs: list[str] = []
    needs: dict[str, list[str]] = {}
    section = None
    current_file = None
    for line in _readelf("-VW", str(path)).splitlines():
        if line.startswith("Version definition section"):
            section = "d"
        elif line.startswith("Version needs section"):
            section = "r"
        elif line.startswith("Version symbols section"):
            section = None
        elif section == "d":
            m = re.search(r"Flags: (\S+)\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)", line)
            if m and m.group(1) != "BASE":
                defs.append(m.group(2))
        elif section == "r":
            m = re.search(r"File: (\S+)", line)
            if m:
                current_file = m.group(1)
                needs.setdefault(current_file, [])
                continue
            m = re.search(r"Name: (\S+)\s+Flags:", line)
            if m and current_file is not None:
                needs[current_file].append(m.group(1))
    return defs, needs


def _readelf_undefined_by_version(path: Path) -> dict[str, list[str]]:
    """Undefined .dynsym symbols grouped by version, from `readelf --dyn-syms -W`."""
    out: dict[str, set[str]] = {}
    for line in _readelf("--dyn-syms", "-W", str(path)).splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[0].endswith(":") or parts[6] != "UND":
            continue
        name = parts[7]
        if "@" not in name:
            continue
        sym, version = name.split("@", 1)
        out.setdefault(version.lstrip("@"), set()).add(sym)
    return {v: sorted(names) for v, names in out.items()}


def _assert_matches_readelf(path: Path, info: ElfInfo) -> None:
    assert info.error is None, info.error
    dyn = _readelf_dynamic(path)
    assert list(info.needed) == dyn["needed"]
    assert info.soname == dyn["soname"]
    assert list(info.rpath) == dyn["rpath"]
    assert list(info.runpath) == dyn["runpath"]
    defs, needs = _readelf_versions(path)
    assert list(info.version_defs) == defs
    assert list(info.version_needs) == list(needs)  # same files, same (file) order
    for file, names in needs.items():
        assert list(info.version_needs[file]) == sorted(set(names), key=version_key)
    needed_versions = {n for names in needs.values() for n in names}
    undefined = {v: s for v, s in _readelf_undefined_by_version(path).items() if v in needed_versions}
    assert set(info.symbols_by_version) == set(undefined)
    for version, names in undefined.items():
        assert list(info.symbols_by_version[version]) == names[:SYMBOLS_PER_VERSION]


# ------------------------------------------------------------------------------------------
# Real libraries
# ------------------------------------------------------------------------------------------
@needs_readelf
@pytest.mark.parametrize("name", ["libbitsandbytes_cpu.so", "libbitsandbytes_cuda121.so", "rocm"])
def test_real_bnb_library_matches_readelf(name: str) -> None:
    path = _real_bnb_lib(_first_rocm_lib() if name == "rocm" else name)
    info = _parse(path)
    _assert_matches_readelf(path, info)
    assert info.elf_class == 64
    assert info.machine == "EM_X86_64"
    assert info.soname == path.name
    assert "libstdc++.so.6" in info.needed


def test_real_cuda121_facts() -> None:
    """What bnb_internals.md section 1.5 / 6 says about the 0.50.2 cuda121 build."""
    info = _parse(_real_bnb_lib("libbitsandbytes_cuda121.so"))
    assert info.needed[:3] == ("libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12")
    assert info.runpath == ("/usr/local/cuda-12.1/targets/x86_64-linux/lib",)
    assert info.symbols_by_version["CXXABI_1.3.9"] == ("_ZdlPvm",)
    assert max_versions(info.version_needs)["CXXABI"] == "CXXABI_1.3.9"


def test_real_20mb_library_parses_fast() -> None:
    path = _real_bnb_lib("libbitsandbytes_cuda121.so")
    data = path.read_bytes()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        info = parse_elf(data)
        best = min(best, time.perf_counter() - start)
    assert info.error is None
    assert best < 0.1, f"parse took {best * 1000:.1f} ms for {len(data) / 1e6:.1f} MB"


def _system_libstdcxx() -> Path:
    cache_file = Path("/etc/ld.so.cache")
    if cache_file.is_file():
        paths = lookup(parse_ld_so_cache(cache_file.read_bytes()), "libstdc++.so.6", arch="x86-64")
        if paths and Path(paths[0]).is_file():
            return Path(paths[0])
    found = sorted(glob.glob("/lib/x86_64-linux-gnu/libstdc++.so.6") + glob.glob("/usr/lib64/libstdc++.so.6"))
    if not found:
        pytest.skip("no system libstdc++.so.6 found")
    return Path(found[0])


def test_system_libstdcxx_defines_gcc12_versions() -> None:
    path = _system_libstdcxx()
    real = os.path.realpath(path)
    m = re.search(r"libstdc\+\+\.so\.6\.0\.(\d+)$", real)
    if m is None or int(m.group(1)) < 30:
        pytest.skip(f"{real} is older than GCC 12's libstdc++.so.6.0.30")
    info = _parse(path)
    assert info.error is None
    assert info.soname == "libstdc++.so.6"
    assert "GLIBCXX_3.4.30" in info.version_defs
    assert "CXXABI_1.3.13" in info.version_defs
    assert info.version_defs[0] == "GLIBCXX_3.4"


@needs_readelf
def test_system_libstdcxx_matches_readelf() -> None:
    path = _system_libstdcxx()
    _assert_matches_readelf(path, _parse(path))


# ------------------------------------------------------------------------------------------
# Fixtures
# ------------------------------------------------------------------------------------------
def _chain(prefix: str, base: str, last: int) -> list[str]:
    return [f"{prefix}_{base}"] + [f"{prefix}_{base}.{i}" for i in range(1, last + 1)]


CENTOS7_DEFS = _chain("GLIBCXX", "3.4", 19) + _chain("CXXABI", "1.3", 7)
CONDA_OLD_DEFS = _chain("GLIBCXX", "3.4", 29) + _chain("CXXABI", "1.3", 12)
MODERN_DEFS = _chain("GLIBCXX", "3.4", 30) + _chain("CXXABI", "1.3", 13) + ["CXXABI_TM_1", "CXXABI_FLOAT128"]
CUDA121_STDCXX_NEEDS = (
    "CXXABI_1.3",
    "CXXABI_1.3.9",
    "GLIBCXX_3.4",
    "GLIBCXX_3.4.9",
    "GLIBCXX_3.4.11",
    "GLIBCXX_3.4.21",
)
ALL_FIXTURE_ELFS = sorted(
    p for p in ELF_DATA.rglob("*") if p.is_file() and p.parent.name != "corrupt" and p.suffix != ".md"
)


def test_fixture_tree_is_complete() -> None:
    names = {str(p.relative_to(ELF_DATA)) for p in ALL_FIXTURE_ELFS}
    assert {
        "centos7/libstdc++.so.6",
        "modern/libstdc++.so.6",
        "conda_old/libstdc++.so.6",
        "cuda12/libcudart.so.12",
        "cuda12/libcublas.so.12",
        "cuda12/libcublasLt.so.12",
        "cuda11/libcudart.so.11.0",
        "bnb/libbitsandbytes_cuda121.so",
        "bnb/libbitsandbytes_cuda118.so",
        "bnb/libbitsandbytes_cuda126.so",
        "bnb/libbitsandbytes_cpu.so",
        "bnb_source_build/libbitsandbytes_cuda124.so",
        "i386/libbitsandbytes_cpu.so",
        "aarch64/libbitsandbytes_cpu.so",
    } <= names
    assert all(p.stat().st_size < 20_000 for p in ALL_FIXTURE_ELFS)


@needs_readelf
@pytest.mark.parametrize("path", ALL_FIXTURE_ELFS, ids=lambda p: str(p.relative_to(ELF_DATA)))
def test_fixture_matches_readelf(path: Path) -> None:
    _assert_matches_readelf(path, _parse(path))


@pytest.mark.parametrize(
    ("stub", "defs"),
    [("centos7", CENTOS7_DEFS), ("conda_old", CONDA_OLD_DEFS), ("modern", MODERN_DEFS)],
)
def test_libstdcxx_stub_defines_exactly_its_chain(stub: str, defs: list[str]) -> None:
    info = _parse(ELF_DATA / stub / "libstdc++.so.6")
    assert info.error is None
    assert info.soname == "libstdc++.so.6"
    assert list(info.version_defs) == defs
    assert info.needed == ()


def test_centos7_stub_lacks_cxxabi_1_3_9() -> None:
    info = _parse(ELF_DATA / "centos7" / "libstdc++.so.6")
    assert "CXXABI_1.3.9" not in info.version_defs
    assert max_versions(info.version_defs) == {
        "CXXABI": "CXXABI_1.3.7",
        "GLIBCXX": "GLIBCXX_3.4.19",
    }


def test_bnb_cuda121_fixture() -> None:
    info = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cuda121.so")
    assert info.error is None
    assert (info.elf_class, info.machine) == (64, "EM_X86_64")
    assert info.soname == "libbitsandbytes_cuda121.so"
    assert info.needed == (
        "libcudart.so.12",
        "libcublas.so.12",
        "libcublasLt.so.12",
        "libstdc++.so.6",
        "libc.so.6",
    )
    assert info.runpath == ("/usr/local/cuda-12.1/targets/x86_64-linux/lib",)
    assert info.rpath == ()
    assert info.version_needs == {
        "libstdc++.so.6": CUDA121_STDCXX_NEEDS,
        "libcublas.so.12": ("libcublas.so.12",),
        "libc.so.6": ("GLIBC_2.2.5",),
        "libcudart.so.12": ("libcudart.so.12",),
        "libcublasLt.so.12": ("libcublasLt.so.12",),
    }
    assert info.symbols_by_version["CXXABI_1.3.9"] == ("_ZdlPvm",)
    assert info.symbols_by_version["GLIBCXX_3.4.21"] == (
        "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm",
    )
    assert info.symbols_by_version["libcudart.so.12"] == (
        "cudaGetLastError",
        "cudaMallocManaged",
        "cudaMemPrefetchAsync",
    )
    assert info.version_defs == ()


def test_missing_versions_against_stub_libstdcxx() -> None:
    needs = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cuda121.so").version_needs["libstdc++.so.6"]
    centos7 = _parse(ELF_DATA / "centos7" / "libstdc++.so.6").version_defs
    modern = _parse(ELF_DATA / "modern" / "libstdc++.so.6").version_defs
    conda_old = _parse(ELF_DATA / "conda_old" / "libstdc++.so.6").version_defs
    assert missing_versions(needs, centos7) == ["CXXABI_1.3.9", "GLIBCXX_3.4.21"]
    assert missing_versions(needs, modern) == []
    assert missing_versions(needs, conda_old) == []


def test_source_build_needs_glibcxx_3_4_30_that_conda_lacks() -> None:
    info = _parse(ELF_DATA / "bnb_source_build" / "libbitsandbytes_cuda124.so")
    needs = info.version_needs["libstdc++.so.6"]
    assert max_versions(needs)["GLIBCXX"] == "GLIBCXX_3.4.30"
    conda_old = _parse(ELF_DATA / "conda_old" / "libstdc++.so.6").version_defs
    modern = _parse(ELF_DATA / "modern" / "libstdc++.so.6").version_defs
    assert missing_versions(needs, conda_old) == ["GLIBCXX_3.4.30"]
    assert missing_versions(needs, modern) == []
    assert info.symbols_by_version["GLIBCXX_3.4.30"] == ("_ZSt21__glibcxx_assert_failPKciS0_S0_",)


def test_bnb_cuda118_and_cuda126_and_cpu_fixtures() -> None:
    cuda118 = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cuda118.so")
    assert cuda118.needed[:3] == ("libcudart.so.11.0", "libcublas.so.11", "libcublasLt.so.11")
    assert cuda118.version_needs["libcudart.so.11.0"] == ("libcudart.so.11.0",)
    assert cuda118.runpath == ("/usr/local/cuda-11.8/targets/x86_64-linux/lib",)

    cuda126 = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cuda126.so")
    assert cuda126.version_needs["libc.so.6"] == ("GLIBC_2.2.5", "GLIBC_2.34")
    assert cuda126.symbols_by_version["GLIBC_2.34"] == ("dlopen", "dlsym")
    assert max_versions(cuda126.version_needs)["GLIBC"] == "GLIBC_2.34"
    assert cuda126.runpath == ("/usr/local/cuda/lib64",)

    cpu = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cpu.so")
    assert cpu.needed == ("libstdc++.so.6", "libc.so.6")
    assert cpu.runpath == cpu.rpath == ()
    assert cpu.version_needs == {
        "libstdc++.so.6": ("CXXABI_1.3", "GLIBCXX_3.4.11"),
        "libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.4"),
    }
    assert cpu.symbols_by_version["GLIBC_2.4"] == ("__stack_chk_fail",)


def test_cuda_stubs() -> None:
    cudart12 = _parse(ELF_DATA / "cuda12" / "libcudart.so.12")
    assert cudart12.soname == "libcudart.so.12"
    assert cudart12.version_defs == ("libcudart.so.12",)
    cudart11 = _parse(ELF_DATA / "cuda11" / "libcudart.so.11.0")
    assert cudart11.soname == "libcudart.so.11.0"
    assert cudart11.version_defs == ("libcudart.so.11.0",)
    cublas12 = _parse(ELF_DATA / "cuda12" / "libcublas.so.12")
    assert cublas12.needed == ("libcublasLt.so.12",)
    assert (cublas12.runpath, cublas12.rpath) == (("$ORIGIN",), ())
    cublas11 = _parse(ELF_DATA / "cuda11" / "libcublas.so.11")
    assert (cublas11.rpath, cublas11.runpath) == (("$ORIGIN",), ())
    assert _parse(ELF_DATA / "cuda12" / "libcublasLt.so.12").version_defs == ("libcublasLt.so.12",)


def test_other_architectures() -> None:
    i386 = _parse(ELF_DATA / "i386" / "libbitsandbytes_cpu.so")
    assert (i386.error, i386.elf_class, i386.machine) == (None, 32, "EM_386")
    assert i386.version_needs == {"libc.so.6": ("GLIBC_2.0",)}
    assert i386.symbols_by_version == {"GLIBC_2.0": ("memset",)}
    arm = _parse(ELF_DATA / "aarch64" / "libbitsandbytes_cpu.so")
    assert (arm.error, arm.elf_class, arm.machine) == (None, 64, "EM_AARCH64")
    assert arm.version_needs == {"libc.so.6": ("GLIBC_2.17",)}


def test_result_is_json_friendly() -> None:
    info = _parse(ELF_DATA / "bnb" / "libbitsandbytes_cuda121.so")
    round_trip = json.loads(json.dumps(asdict(info)))
    assert round_trip["needed"][0] == "libcudart.so.12"
    assert round_trip["version_needs"]["libstdc++.so.6"] == list(CUDA121_STDCXX_NEEDS)


# ------------------------------------------------------------------------------------------
# Corrupt input
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("empty.so", "empty file (0 bytes)"),
        ("not_elf.so", "not an ELF file (magic b'This')"),
        ("truncated.so", "truncated ELF: section header table past end of file"),
        ("bad_dynamic.so", "truncated ELF: .dynamic section past end of file"),
        ("bad_class.so", "unsupported ELF class byte 3"),
    ],
)
def test_corrupt_fixture_reports_error(name: str, expected: str) -> None:
    info = _parse(ELF_DATA / "corrupt" / name)
    assert info.error is not None
    assert info.error.startswith(expected), info.error
    assert "\n" not in info.error
    assert info.needed == ()


def test_truncated_keeps_what_the_header_says() -> None:
    info = _parse(ELF_DATA / "corrupt" / "truncated.so")
    assert (info.elf_class, info.machine) == (64, "EM_X86_64")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty file"),
        (b"MZ\x90\x00rest", "not an ELF file (magic b'MZ\\x90\\x00')"),
        (b"\x7fELF", "truncated ELF: 4 bytes"),
        (
            b"\x7fELF\x02\x01\x01" + b"\0" * 20,
            "truncated ELF: 27 bytes, shorter than the 64-byte ELF header",
        ),
        (b"\x7fELF\x01\x03\x01" + b"\0" * 60, "unsupported ELF data encoding byte 3"),
        (b"\x7fELF\x02\x01\x01" + b"\0" * 60, "ELF has no section headers"),
    ],
)
def test_bad_bytes_report_error(data: bytes, expected: str) -> None:
    info = parse_elf(data)
    assert info.error is not None and info.error.startswith(expected), info.error


def test_accepts_bytearray_and_memoryview() -> None:
    data = (ELF_DATA / "bnb" / "libbitsandbytes_cpu.so").read_bytes()
    assert parse_elf(bytearray(data)) == parse_elf(data) == parse_elf(memoryview(data))


def _fuzz_source() -> bytes:
    if BNB_DIR is not None and (BNB_DIR / "libbitsandbytes_cpu.so").is_file():
        return (BNB_DIR / "libbitsandbytes_cpu.so").read_bytes()
    return (ELF_DATA / "bnb" / "libbitsandbytes_cuda121.so").read_bytes()


def test_random_truncations_never_raise() -> None:
    data = _fuzz_source()
    rng = random.Random(20241130)
    offsets = sorted(rng.sample(range(1, len(data)), 50))
    for cut in offsets:
        info = parse_elf(data[:cut])
        assert isinstance(info, ElfInfo)
        # Section headers sit at the end of these files, so every truncation loses some.
        assert info.error is not None, cut


def test_random_byte_corruption_never_raises() -> None:
    data = (ELF_DATA / "bnb" / "libbitsandbytes_cuda121.so").read_bytes()
    rng = random.Random(7)
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        start = time.perf_counter()
        info = parse_elf(bytes(mutated))
        assert isinstance(info, ElfInfo)
        assert time.perf_counter() - start < 1.0
        if info.error is not None:
            assert "\n" not in info.error


def test_every_truncation_of_a_fixture_never_raises() -> None:
    data = (ELF_DATA / "bnb" / "libbitsandbytes_cpu.so").read_bytes()
    for cut in range(0, len(data), 7):
        assert isinstance(parse_elf(data[:cut]), ElfInfo)


# ------------------------------------------------------------------------------------------
# Version helpers
# ------------------------------------------------------------------------------------------
def test_version_key_orders_numerically() -> None:
    names = ["GLIBCXX_3.4.30", "GLIBCXX_3.4.9", "GLIBCXX_3.4", "GLIBCXX_3.4.19", "GLIBCXX_3.4.10"]
    assert sorted(names, key=version_key) == [
        "GLIBCXX_3.4",
        "GLIBCXX_3.4.9",
        "GLIBCXX_3.4.10",
        "GLIBCXX_3.4.19",
        "GLIBCXX_3.4.30",
    ]
    assert version_key("GLIBCXX_3.4.9") < version_key("GLIBCXX_3.4.19") < version_key("GLIBCXX_3.4.30")
    assert version_key("GLIBC_2.2.5") < version_key("GLIBC_2.3") < version_key("GLIBC_2.34")
    assert version_key("GLIBC_2.2.5") == ("GLIBC", (2, 2, 5))
    assert version_key("CXXABI_TM_1") == ("CXXABI_TM", (1,))
    assert version_key("GOMP_PLUGIN_1.0") == ("GOMP_PLUGIN", (1, 0))
    assert version_key("GLIBC_PRIVATE") == ("GLIBC_PRIVATE", ())
    assert version_key("CXXABI_FLOAT128") == ("CXXABI_FLOAT128", ())
    assert version_key("libcudart.so.12") == ("libcudart.so.12", ())
    assert version_key("") == ("", ())


def test_max_versions() -> None:
    needs = {
        "libstdc++.so.6": (
            "CXXABI_1.3",
            "CXXABI_1.3.9",
            "GLIBCXX_3.4",
            "GLIBCXX_3.4.9",
            "GLIBCXX_3.4.11",
        ),
        "libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_2.4", "GLIBC_PRIVATE"),
        "libcudart.so.12": ("libcudart.so.12",),
        "libgcc_s.so.1": ("GCC_3.0",),
    }
    assert max_versions(needs) == {
        "CXXABI": "CXXABI_1.3.9",
        "GCC": "GCC_3.0",
        "GLIBC": "GLIBC_2.34",
        "GLIBCXX": "GLIBCXX_3.4.11",
    }
    assert max_versions(["GLIBCXX_3.4.9", "GLIBCXX_3.4.30", "GLIBCXX_3.4.19"]) == {"GLIBCXX": "GLIBCXX_3.4.30"}
    assert max_versions([]) == {}


def test_missing_versions_is_an_exact_sorted_difference() -> None:
    assert missing_versions(
        ["GLIBCXX_3.4.30", "GLIBCXX_3.4.9", "CXXABI_1.3.9", "GLIBCXX_3.4.30"],
        ["GLIBCXX_3.4.9", "GLIBCXX_3.4.31"],
    ) == ["CXXABI_1.3.9", "GLIBCXX_3.4.30"]
    assert missing_versions([], ["GLIBC_2.2.5"]) == []


def test_section_header_reader_matches_pyelftools(bnb_dir: Path) -> None:
    """The hot path reads section headers with struct (pyelftools' ELFFile costs ~30 ms to
    import); pyelftools stays the reference it is checked against."""
    import io

    from elftools.elf.elffile import ELFFile

    from bnbdoctor.native.elf import _section_headers

    paths = [
        bnb_dir / "libbitsandbytes_cpu.so",
        bnb_dir / "libbitsandbytes_cuda121.so",
        bnb_dir / "libbitsandbytes_rocm64.so",
    ]
    for path in paths:
        data = path.read_bytes()
        elf = ELFFile(io.BytesIO(data))
        expected = [
            (s.name, s.header["sh_offset"], s.header["sh_size"], s.header["sh_link"], s.header["sh_info"])
            for s in elf.iter_sections()
        ]
        end = "<"
        ours = _section_headers(data, end, 64, elf.header["e_shoff"], elf.header["e_shentsize"], elf.header["e_shnum"])
        assert [(s.name, s.offset, s.size, s.link, s.info) for _, s in ours] == expected


def test_machine_names_are_pyelftools_table() -> None:
    """The ``e_machine`` names are data (importing pyelftools' enums cost ~13 ms a run); pyelftools stays
    the reference they are checked against."""
    from elftools.elf.enums import ENUM_E_MACHINE

    from bnbdoctor.native.elf_machines import MACHINE_NAMES

    expected = {v: k for k, v in ENUM_E_MACHINE.items() if isinstance(v, int) and k != "_default_"}
    assert expected == MACHINE_NAMES
