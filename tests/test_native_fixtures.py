"""The native probe on the recorded machines: their libbitsandbytes_* files are real stubs of the
real wheels' libraries (tools/make_bnb_stub.py), their system libraries sit where the distro keeps
them, and the facts and remedies for the issue-3 machines are pinned exactly. Several tests pin
places where bnbdoctor's model of the loader once disagreed with the real loader (torch's RPATH,
Jetson's NVML-less GPU, `ldconfig -p` spellings, the Windows application folder).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT, fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.facts import AbiNeed, Facts, NativeFacts, ResolvedDependency, SelectedLibrary
from bnbdoctor.findings import Finding
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.native.elf import parse_elf
from bnbdoctor.report import Report

WHEELS = json.loads((ROOT / "bnbdoctor" / "data" / "bnb_wheels.json").read_text(encoding="utf-8"))["wheels"]
NEW_MACHINES = [
    "centos7-cxxabi",
    "libcudart-missing-ld-path",
    "cuda11-first-ld-path-torch-cu12",
    "conda-old-libstdcxx",
    "ubuntu2004-bnb0455-cu126",
    "bnb050-override-117",
    "conda-healthy",
    "windows-bnb050-missing-dll",
    "mixed-gt1030-a6000-bnb042",
]
# Where each Linux machine's distro keeps libc / libstdc++ (the path ld.so.cache or `ldconfig -p` lists).
SYSTEM_DIR = {
    "centos7-cxxabi": "/lib64",
    "jetson-orin-aarch64": "/lib/aarch64-linux-gnu",
    "altra-aarch64-x86-64-bnb": "/lib/aarch64-linux-gnu",
}
#: Machines whose bitsandbytes library is deliberately for another CPU (a copied x86-64 venv on aarch64).
FOREIGN_LIBRARY = {"altra-aarch64-x86-64-bnb"}
SOURCE_BUILDS = {"conda-old-libstdcxx"}  # not from a recorded wheel
#: macOS wheels (0.49+) are not recorded in bnb_wheels.json: their selected file is a bare Mach-O header.
MACHO_HEADERS = {"macos-bnb049-transformers440"}


@cache
def report(name: str) -> Report:
    return diagnose(FixtureHost.named(name))


def facts(name: str) -> Facts:
    return report(name).facts


def native_of(name: str) -> NativeFacts:
    native = facts(name).native
    assert native is not None, name
    return native


def selection_of(name: str) -> SelectedLibrary:
    selection = native_of(name).selection
    assert selection is not None, name
    return selection


def os_of(name: str) -> str | None:
    machine = facts(name).platform
    return machine.os if machine is not None else None


def dep(name: str, soname: str) -> ResolvedDependency:
    native = facts(name).native
    assert native is not None
    return next(d for d in native.dependencies if d.name == soname)


def need(name: str, library: str) -> AbiNeed:
    native = facts(name).native
    assert native is not None
    return next(a for a in native.abi if a.library == library)


def findings(name: str, rule_id: str) -> list[Finding]:
    return [f for f in report(name).findings if f.rule_id == rule_id]


def ids(name: str) -> set[str]:
    return {f.rule_id for f in report(name).findings}


def host_file(name: str, path: str) -> Path:
    local = FixtureHost.named(name)._local(path)
    assert local is not None, path
    return local.resolve()


def selected(name: str) -> bool:
    native = facts(name).native
    return native is not None and native.library is not None


#: Machines whose release is not recorded in bnb_wheels.json: their library is a stub of this recorded one.
STAND_IN_RELEASE = {"bnb0480-a100-known-bad": "0.48.2"}


def wheel_library(version: str, file: str) -> dict[str, Any]:
    for wheel in WHEELS:
        if wheel["version"] == version and (wheel["platform_tag"] == "win_amd64") == file.endswith(".dll"):
            for lib in wheel["libraries"]:
                if lib["file"] == file:
                    return dict(lib)
    raise KeyError((version, file))


# ------------------------------------------------------------------------------------------------
# Every recorded machine
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in fixture_names() if selected(n)])
def test_selected_library_is_a_real_stub_of_the_wheel_file(name: str) -> None:
    native = facts(name).native
    assert native is not None and native.library is not None
    data = host_file(name, native.library).read_bytes()
    assert 0 < len(data) <= 16 * 1024, "a stub, and a tiny one"
    if name in MACHO_HEADERS:
        assert native.error is None and native.format == "Mach-O"
        return
    assert native.error is None and native.format in ("ELF", "PE")
    if name in SOURCE_BUILDS:
        return
    python = facts(name).python
    assert python is not None and native.selection is not None and native.selection.loaded_file is not None
    bnb = python.bitsandbytes
    assert bnb.version is not None
    lib = wheel_library(STAND_IN_RELEASE.get(name, bnb.version), native.selection.loaded_file)
    assert native.needed == lib["needed"]
    if native.format == "PE":
        return
    info = parse_elf(data)
    aarch64 = info.machine == "EM_AARCH64"
    machine = facts(name).platform
    jetson = machine is not None and machine.os == "linux" and machine.arch == "aarch64" and name not in FOREIGN_LIBRARY
    assert info.machine == ("EM_AARCH64" if jetson else "EM_X86_64"), "0.41-0.42 ship x86-64 ELF files everywhere"
    release = release_tuple(bnb.version)
    assert release is not None
    legacy = release < (0, 43)
    assert native.soname == (None if legacy else native.selection.loaded_file)
    runpath = lib.get("runpath")
    if runpath and aarch64:
        runpath = runpath.replace("x86_64-linux", "sbsa-linux")
    assert native.runpath == (runpath.split(":") if runpath else [])
    wanted = {k: list(v) for k, v in lib["version_needs"].items()}
    if aarch64:  # glibc's aarch64 port starts at GLIBC_2.17
        wanted = {
            k: list(dict.fromkeys("GLIBC_2.17" if v.startswith("GLIBC_2.") else v for v in vs))
            for k, vs in wanted.items()
        }
    assert native.version_needs == wanted
    assert list(native.version_needs) == list(wanted), "the recorded .gnu.version_r file order"


@pytest.mark.parametrize("name", [n for n in fixture_names() if selected(n) and os_of(n) == "linux"])
def test_system_libraries_come_from_the_distro_folders(name: str) -> None:
    folder = SYSTEM_DIR.get(name, "/lib/x86_64-linux-gnu")
    for soname in ("libc.so.6", "libstdc++.so.6"):
        found = dep(name, soname)
        if found.via == "C++ runtime already loaded in the conda env":
            continue
        assert found.resolved == f"{folder}/{soname}"
        # A foreign library is looked up with its own architecture's cache flags: the aarch64 entries do not match.
        assert found.via == ("default directories" if name in FOREIGN_LIBRARY else "ld.so.cache")
        assert host_file(name, found.resolved).stat().st_size > 0
    for abi in native_of(name).abi:
        if dep(name, abi.library).resolved:
            assert abi.source == "elf", f"{abi.library} was not read from a real file"


@pytest.mark.parametrize("name", fixture_names())
def test_load_answer_is_recorded_for_every_selected_library(name: str) -> None:
    load = facts(name).load
    assert load is not None
    if selected(name) and selection_of(name).exists:
        assert load.ran, load.skipped_reason
        assert (load.error is None) == bool(load.ok)
    else:
        assert not load.ran


def _real_loader() -> str | None:
    candidate = "/lib64/ld-linux-x86-64.so.2"
    if platform.system() != "Linux" or platform.machine() != "x86_64" or not os.path.exists(candidate):
        return None
    return candidate


LINUX_X86 = [
    n
    for n in fixture_names()
    if selected(n) and native_of(n).machine == "EM_X86_64" and os_of(n) == "linux" and n not in FOREIGN_LIBRARY
]


@pytest.mark.skipif(_real_loader() is None, reason="needs glibc's x86-64 dynamic loader")
@pytest.mark.parametrize("name", LINUX_X86)
def test_real_dynamic_loader_agrees_with_the_recorded_answer(name: str, tmp_path: Path) -> None:
    """ld.so --list on the stub with the machine's resolved files: the version checks and the
    'cannot open' errors are glibc's own, against the fixture's stub libc, libstdc++, ..."""
    native, load = facts(name).native, facts(name).load
    assert native is not None and load is not None
    for found in native.dependencies:
        if found.resolved:
            (tmp_path / found.name).symlink_to(host_file(name, found.resolved))
    loader = _real_loader()
    assert loader is not None
    run = subprocess.run(
        [
            loader,
            "--inhibit-cache",
            "--library-path",
            str(tmp_path),
            "--list",
            str(host_file(name, native.library or "")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    output = run.stdout + run.stderr
    if load.ok:
        assert run.returncode == 0 and "not found" not in output, output
    elif "version `" in (load.error or ""):
        version = (load.error or "").split("version `")[1].split("'")[0]
        assert f"version `{version}' not found" in output
    else:
        missing = (load.error or "").split(":")[0]
        if any(
            os.path.exists(f"{d}/{missing}")
            for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64")
        ):
            pytest.skip(f"this machine has its own {missing}")
        assert f"{missing}: cannot open shared object file: No such file or directory" in output


def test_fixture_binaries_are_tiny() -> None:
    big = [p for p in FIXTURES.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size > 16 * 1024]
    assert not big


# ------------------------------------------------------------------------------------------------
# The issue-3 machines, fact by fact
# ------------------------------------------------------------------------------------------------
def test_centos7_libstdcxx_lacks_cxxabi_1_3_9() -> None:
    name = "centos7-cxxabi"
    native = facts(name).native
    assert native is not None
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda121.so"
    site = "/home/chen/venvs/qlora/lib/python3.8/site-packages"
    assert native.library == f"{site}/bitsandbytes/libbitsandbytes_cuda121.so"
    assert native.soname is None and native.runpath == []
    assert native.loader_cache == "`ldconfig -p`: 8 entries"
    stdcxx = dep(name, "libstdc++.so.6")
    assert (stdcxx.resolved, stdcxx.via) == ("/lib64/libstdc++.so.6", "ld.so.cache")
    assert stdcxx.candidates[0].realpath == "/usr/lib64/libstdc++.so.6.0.19"
    libc = dep(name, "libc.so.6")
    assert (libc.resolved, libc.candidates[0].realpath) == ("/lib64/libc.so.6", "/usr/lib64/libc-2.17.so")
    cudart = dep(name, "libcudart.so.12")
    assert cudart.via == "loaded by torch before bitsandbytes"
    assert cudart.resolved == f"{site}/nvidia/cuda_runtime/lib/libcudart.so.12"
    abi = need(name, "libstdc++.so.6")
    assert abi.provider == "/lib64/libstdc++.so.6"
    assert abi.missing == ["CXXABI_1.3.9", "GLIBCXX_3.4.21"]
    assert abi.provider_max == {"CXXABI": "CXXABI_1.3.7", "GLIBCXX": "GLIBCXX_3.4.19"}
    assert abi.satisfied_by == []
    (hit,) = findings(name, "BNB306")
    assert hit.title == (
        "/lib64/libstdc++.so.6 lacks CXXABI_1.3.9, GLIBCXX_3.4.21 (needed by libbitsandbytes_cuda121.so)"
    )
    # A venv, not a conda env: the runtime comes from a conda env of its own, never $CONDA_PREFIX.
    assert hit.remediation.commands == [
        'conda create -y -p $HOME/.local/share/bnbdoctor/cxx-runtime -c conda-forge "libstdcxx-ng>=12"',
        "export LD_LIBRARY_PATH=$HOME/.local/share/bnbdoctor/cxx-runtime/lib:$LD_LIBRARY_PATH",
    ]
    load = facts(name).load
    assert load is not None and load.ok is False
    assert load.error == (
        "/lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by "
        "/home/chen/venvs/qlora/lib/python3.8/site-packages/bitsandbytes/libbitsandbytes_cuda121.so)"
    )
    assert {"BNB306", "BNB205"} <= ids(name) and report(name).exit_code() == 1


def test_libcudart_missing_is_found_in_the_unlinked_cuda_11_8_toolkit() -> None:
    name = "libcudart-missing-ld-path"
    native = facts(name).native
    assert native is not None
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda118.so"
    assert native.runpath == ["/usr/local/cuda/lib64"]
    assert native.search_order == [
        "loaded by torch before bitsandbytes",
        "LD_LIBRARY_PATH",
        "RUNPATH",
        "ld.so.cache",
        "default directories",
    ]
    lib_dir = "/home/nina/venvs/sd/lib/python3.10/site-packages/torch/lib"
    assert f"{lib_dir}/libcudart-d0da41ae.so.11.0" in native.preloaded  # hashed: not the SONAME bnb needs
    cudart = dep(name, "libcudart.so.11.0")
    assert cudart.resolved is None and cudart.via is None and cudart.candidates == []
    assert cudart.elsewhere == [
        "/usr/local/cuda-11.8/lib64/libcudart.so.11.0",
        "/usr/local/cuda-11.8/targets/x86_64-linux/lib/libcudart.so.11.0",
    ]
    assert [d.name for d in native.dependencies if d.resolved is None] == [
        "libcudart.so.11.0",
        "libcublas.so.11",
        "libcusparse.so.11",
        "libcublasLt.so.11",
    ]
    (hit,) = findings(name, "BNB303")
    assert hit.remediation.commands == ["export LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64:$LD_LIBRARY_PATH"]
    load = facts(name).load
    assert load is not None and load.preloaded == []
    assert load.error == "libcudart.so.11.0: cannot open shared object file: No such file or directory"


def test_cuda11_first_on_ld_library_path_is_irrelevant_to_a_cuda12_process() -> None:
    name = "cuda11-first-ld-path-torch-cu12"
    native = facts(name).native
    assert native is not None
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda121.so"
    assert native.runpath == ["/usr/local/cuda-12.1/targets/x86_64-linux/lib"]
    for found in native.dependencies:
        assert found.resolved is not None
        assert not any(c.path.startswith("/usr/local/cuda-11.8") for c in found.candidates), found
    runpath_copy = next(c for c in dep(name, "libcudart.so.12").candidates if c.via == "RUNPATH")
    assert runpath_copy.realpath == "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12.1.105"
    load = facts(name).load
    assert load is not None and load.ok is True
    assert not [f for f in report(name).findings if f.severity.value == "error"]
    assert report(name).exit_code() == 0


@pytest.mark.parametrize("name", ["cuda11-first-ld-path-torch-cu12", "a100-healthy"])
def test_ld_library_path_does_not_replace_torchs_wheel_libraries(name: str) -> None:
    """torch's pip CUDA wheels link their nvidia-* folders with DT_RPATH (--force-rpath in pytorch's
    .ci/manywheel/build_cuda.sh, pytorch/builder#1150), searched before LD_LIBRARY_PATH: the toolkit
    copies on LD_LIBRARY_PATH do not replace torch's, and bitsandbytes reuses torch's by SONAME."""
    python = facts(name).python
    assert python is not None
    site = python.site_packages[0]
    for soname, wheel in (
        ("libcudart.so.12", "cuda_runtime"),
        ("libcublas.so.12", "cublas"),
        ("libcublasLt.so.12", "cublas"),
    ):
        found = dep(name, soname)
        assert (found.resolved, found.via) == (
            f"{site}/nvidia/{wheel}/lib/{soname}",
            "loaded by torch before bitsandbytes",
        )
    assert "BNB304" not in ids(name)
    load = facts(name).load
    assert load is not None and load.preloaded == [
        f"{site}/nvidia/cuda_runtime/lib/libcudart.so.12",
        f"{site}/nvidia/cublas/lib/libcublas.so.12",
        f"{site}/nvidia/cublas/lib/libcublasLt.so.12",
    ]


def test_conda_env_libstdcxx_shadows_the_system_one() -> None:
    name = "conda-old-libstdcxx"
    env = "/home/maria/miniconda3/envs/bnb-dev"
    native = facts(name).native
    assert native is not None
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda124.so"
    assert native.search_order[:2] == [
        "loaded by torch before bitsandbytes",
        "C++ runtime already loaded in the conda env",
    ]
    stdcxx = dep(name, "libstdc++.so.6")
    assert (stdcxx.resolved, stdcxx.via) == (f"{env}/lib/libstdc++.so.6", "C++ runtime already loaded in the conda env")
    assert stdcxx.candidates[0].realpath == f"{env}/lib/libstdc++.so.6.0.29"
    abi = need(name, "libstdc++.so.6")
    assert abi.missing == ["GLIBCXX_3.4.30"]
    assert abi.provider_max["GLIBCXX"] == "GLIBCXX_3.4.29"
    assert abi.satisfied_by[0] == "/lib/x86_64-linux-gnu/libstdc++.so.6"
    host = FixtureHost.named(name)
    assert {host.realpath(p) for p in abi.satisfied_by} == {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"}
    (hit,) = findings(name, "BNB306")
    assert hit.remediation.commands == [
        'conda install -c conda-forge "libstdcxx-ng>=12"',
        "export LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6",
    ]
    load = facts(name).load
    assert load is not None and f"{env}/lib/libstdc++.so.6" in load.preloaded
    assert load.error == (
        f"{env}/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
        f"{env}/lib/python3.11/site-packages/bitsandbytes/libbitsandbytes_cuda124.so)"
    )


def test_ubuntu2004_glibc_lacks_2_34_for_bnb_0455_cuda126() -> None:
    name = "ubuntu2004-bnb0455-cu126"
    native = facts(name).native
    assert native is not None
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda126.so"
    libc = dep(name, "libc.so.6")
    assert (libc.resolved, libc.via) == ("/lib/x86_64-linux-gnu/libc.so.6", "ld.so.cache")
    assert libc.candidates[0].realpath == "/usr/lib/x86_64-linux-gnu/libc-2.31.so"
    abi = need(name, "libc.so.6")
    assert abi.missing == ["GLIBC_2.34"] and abi.source == "elf"
    assert abi.provider_max == {"GLIBC": "GLIBC_2.31"}
    (hit,) = findings(name, "BNB307")
    assert hit.title == "glibc 2.31 lacks GLIBC_2.34 (needed by libbitsandbytes_cuda126.so)"
    python = facts(name).python
    assert python is not None
    assert hit.remediation.commands == [f'{python.executable} -m pip install -U "bitsandbytes>=0.46.0"']
    assert "0.46.0 fixed it" in hit.remediation.text
    load = facts(name).load
    assert load is not None and load.error == (
        "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by "
        "/home/ravi/venvs/llm/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda126.so)"
    )


def test_bnb_cuda_version_117_asks_for_a_file_050_does_not_ship() -> None:
    name = "bnb050-override-117"
    native = facts(name).native
    assert native is not None and native.selection is not None
    assert native.selection.expected_file == "libbitsandbytes_cuda117.so"
    assert (native.selection.loaded_file, native.selection.exists) == (None, False)
    assert (native.selection.override, native.selection.outcome) == ("117", "error_on_first_call")
    assert native.library is None
    load = facts(name).load
    assert load is not None and not load.ran
    (hit,) = findings(name, "BNB302")
    assert hit.title == "BNB_CUDA_VERSION=117 asks for libbitsandbytes_cuda117.so, which bitsandbytes does not ship"
    assert hit.remediation.commands == ["unset BNB_CUDA_VERSION"]


def test_conda_healthy_loads_with_the_envs_own_runtime() -> None:
    name = "conda-healthy"
    env = "/home/yuki/miniforge3/envs/llm"
    stdcxx = dep(name, "libstdc++.so.6")
    assert (stdcxx.resolved, stdcxx.via) == (f"{env}/lib/libstdc++.so.6", "C++ runtime already loaded in the conda env")
    assert stdcxx.candidates[0].realpath == f"{env}/lib/libstdc++.so.6.0.30"
    assert all(not a.missing for a in native_of(name).abi)
    load = facts(name).load
    assert load is not None and load.ok is True
    site = f"{env}/lib/python3.11/site-packages"
    assert load.preloaded == [
        f"{site}/nvidia/cuda_runtime/lib/libcudart.so.12",
        f"{site}/nvidia/cublas/lib/libcublas.so.12",
        f"{site}/nvidia/cublas/lib/libcublasLt.so.12",
        f"{env}/lib/libstdc++.so.6",
        f"{env}/lib/libgcc_s.so.1",
    ]
    assert not report(name).findings and report(name).exit_code() == 0


def test_windows_without_the_vc_redistributable() -> None:
    name = "windows-bnb050-missing-dll"
    native = facts(name).native
    assert native is not None and native.format == "PE"
    assert selection_of(name).loaded_file == "libbitsandbytes_cuda121.dll"
    assert native.needed == wheel_library("0.50.2", "libbitsandbytes_cuda121.dll")["needed"]
    cudart = dep(name, "cudart64_12.dll")
    site_packages = "C:\\Users\\sam\\llm\\venv\\Lib\\site-packages"
    assert (cudart.resolved, cudart.via) == (
        f"{site_packages}\\torch\\lib\\cudart64_12.dll",
        "loaded by torch before bitsandbytes",
    )
    assert dep(name, "MSVCP140.dll").resolved is None
    assert dep(name, "api-ms-win-crt-runtime-l1-1-0.dll").via == "Windows API set (provided by the OS)"
    (hit,) = findings(name, "BNB311")
    assert "MSVCP140.dll" in hit.title
    assert "Microsoft Visual C++ Redistributable" in hit.remediation.text
    load = facts(name).load
    assert load is not None and load.error == (
        f"Could not find module '{site_packages}\\bitsandbytes\\libbitsandbytes_cuda121.dll' "
        "(or one of its dependencies). Try using the full path with constructor syntax."
    )


def test_windows_application_folder_is_the_base_interpreters() -> None:
    """A venv's python.exe launches the base interpreter: its folder (python.org ships vcruntime140.dll
    and vcruntime140_1.dll there) is the application folder. Only MSVCP140.dll is really missing."""
    native = facts("windows-bnb050-missing-dll").native
    assert native is not None
    assert [d.name for d in native.dependencies if d.resolved is None] == ["MSVCP140.dll"]
    base = "C:\\Users\\sam\\AppData\\Local\\Programs\\Python\\Python311"
    for name in ("VCRUNTIME140.dll", "VCRUNTIME140_1.dll"):
        assert (dep("windows-bnb050-missing-dll", name).resolved or "").lower() == f"{base}\\{name}".lower()


def test_mixed_gt1030_a6000_legacy_selection_by_highest_capability() -> None:
    name = "mixed-gt1030-a6000-bnb042"
    native = facts(name).native
    assert native is not None and native.selection is not None
    assert native.selection.loaded_file == "libbitsandbytes_cuda121.so"  # 8.6 wins; 6.1 needs _nocublaslt
    assert {"BNB106", "BNB104", "BNB105"} <= ids(name)
    load = facts(name).load
    assert load is not None and load.ok is True


# ------------------------------------------------------------------------------------------------
# Wrong file formats, and where bnbdoctor and the real machine still disagree (strict xfails)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "cause"), [("macos-bnb042", "BNB313"), ("windows-bnb041", "BNB312")])
def test_no_load_failed_finding_when_the_format_is_wrong(name: str, cause: str) -> None:
    """The recorded loader error is a format error; the format rule names it (on its own, or under the
    root it follows from: the release does not support the platform), BNB314 stays quiet."""
    followed = {follow.rule_id for f in report(name).findings for follow in f.follows}
    assert cause in ids(name) | followed and "BNB314" not in ids(name) | followed
    load = facts(name).load
    assert load is not None and load.ok is False


def test_jetson_selects_the_cuda_library() -> None:
    native = facts("jetson-orin-aarch64").native
    assert native is not None and native.selection is not None
    assert native.selection.loaded_file == "libbitsandbytes_cuda126.so"


def test_ldconfig_p_output_is_used_on_aarch64(tmp_path: Path) -> None:
    copy = tmp_path / "jetson"
    shutil.copytree(FIXTURES / "jetson-orin-aarch64", copy, symlinks=True)
    (copy / "root" / "etc" / "ld.so.cache").unlink()
    manifest = json.loads((copy / "machine.json").read_text(encoding="utf-8"))
    folder = "/lib/aarch64-linux-gnu"
    names = ["libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"]
    stdout = f"{len(names)} libs found in cache `/etc/ld.so.cache'\n" + "".join(
        f"\t{n} (libc6,AArch64) => {folder}/{n}\n" for n in names
    )
    manifest["commands"].append({"argv": ["ldconfig", "-p"], "returncode": 0, "stdout": stdout, "stderr": ""})
    (copy / "machine.json").write_text(json.dumps(manifest), encoding="utf-8")
    native = diagnose(FixtureHost(copy)).facts.native
    assert native is not None
    assert {d.via for d in native.dependencies if d.name in names} == {"ld.so.cache"}


def test_xpu_sycl_other_major_is_recorded() -> None:
    """The missing libsycl.so.8 is reported with the libsycl.so.9 the sourced oneAPI 2026 runtime provides."""
    name = "xpu-bnb0492-oneapi2026-sycl9"
    sycl = dep(name, "libsycl.so.8")
    assert sycl.resolved is None and sycl.kind == "oneapi"
    assert sycl.other_sonames == ["/opt/intel/oneapi/compiler/2026.0/lib/libsycl.so.9"]
    assert dep(name, "libsvml.so").resolved == "/opt/intel/oneapi/compiler/2026.0/lib/libsvml.so"
