"""The native chain on real binaries: the installed bitsandbytes wheel on this machine, and real
stub libraries loaded by the real dynamic loader (only the GPU is simulated, as facts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from bnbdoctor.doctor import diagnose
from bnbdoctor.facts import BnbFacts, Facts, GpuDevice, GpuFacts, PythonFacts, TorchFacts
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions, run_probes
from bnbdoctor.probes.load import gather_load
from bnbdoctor.probes.native import gather_native
from bnbdoctor.probes.platform import gather_platform
from bnbdoctor.rules import all_rules, run_rules

ELF = ROOT / "tests" / "data" / "elf"


def readelf_needed(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-dW", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_live_machine_selects_and_loads_the_cpu_library(bnb_dir: Path, python_exe: str) -> None:
    facts = run_probes(PROBES, ProbeContext(LiveHost(), ProbeOptions(python=python_exe)))
    native, load = facts.native, facts.load
    assert native is not None and load is not None
    assert native.selection is not None and native.selection.loaded_file == "libbitsandbytes_cpu.so"
    assert native.library == str(bnb_dir / "libbitsandbytes_cpu.so")
    if shutil.which("readelf"):
        assert native.needed == readelf_needed(bnb_dir / "libbitsandbytes_cpu.so")
    assert all(dep.resolved for dep in native.dependencies), native.dependencies
    assert all(not need.missing for need in native.abi)
    assert load.ran and load.ok is True and load.error is None
    diagnosis = run_rules(facts, all_rules())
    assert not [f for f in diagnosis.findings if f.rule_id.startswith("BNB3")]


def test_no_load_skips_the_subprocess(python_exe: str) -> None:
    facts = run_probes(PROBES, ProbeContext(LiveHost(), ProbeOptions(python=python_exe, load=False)))
    assert facts.load is not None and facts.load.ran is False and facts.load.skipped_reason == "--no-load"


def _synthetic(
    tmp_path: Path, lib_dirs: list[Path], library: Path, monkeypatch: pytest.MonkeyPatch, torch_cuda: str = "12.1"
) -> Facts:
    """Facts for a machine whose bitsandbytes folder holds ``library`` (a real ELF) and whose
    loader path is ``lib_dirs``; only the GPU is simulated."""
    package = tmp_path / "site-packages" / "bitsandbytes"
    package.mkdir(parents=True)
    shutil.copy(library, package / library.name)
    ld_path = ":".join(str(d) for d in lib_dirs)
    monkeypatch.setenv("LD_LIBRARY_PATH", ld_path)  # the load subprocess inherits the environment
    host = LiveHost()
    facts = Facts(env={"LD_LIBRARY_PATH": ld_path})
    ctx = ProbeContext(host, ProbeOptions(), facts)
    facts.platform = gather_platform(ctx)
    facts.gpu = GpuFacts(
        nvml_available=True,
        driver_version="535.129.03",
        driver_cuda_version="12.2",
        devices=[GpuDevice(0, "Tesla T4", [7, 5])],
    )
    facts.python = PythonFacts(
        executable=sys.executable,
        selected_by="test",
        version="3.11.7",
        torch=TorchFacts(installed=True, version="2.1.2+cu121", cuda=torch_cuda),
        bitsandbytes=BnbFacts(
            installed=True, version="0.50.2", location=str(package), has_metadata=True, native_libraries=[library.name]
        ),
    )
    facts.native = gather_native(ctx)
    facts.load = gather_load(ctx)
    return facts


def test_cxxabi_failure_is_predicted_and_confirmed_by_the_real_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = _synthetic(
        tmp_path, [ELF / "cuda12", ELF / "centos7"], ELF / "bnb" / "libbitsandbytes_cuda121.so", monkeypatch
    )
    native, load = facts.native, facts.load
    assert native is not None and load is not None
    stdcxx = next(d for d in native.dependencies if d.name == "libstdc++.so.6")
    assert stdcxx.resolved == str(ELF / "centos7" / "libstdc++.so.6") and stdcxx.via == "LD_LIBRARY_PATH"
    need = next(a for a in native.abi if a.library == "libstdc++.so.6")
    assert need.missing == ["CXXABI_1.3.9", "GLIBCXX_3.4.21"]
    assert any(path.endswith("libstdc++.so.6") and "centos7" not in path for path in need.satisfied_by)
    assert load.ran and load.ok is False
    assert "CXXABI_1.3.9' not found" in (load.error or "") or "GLIBCXX_3.4.21' not found" in (load.error or "")
    findings = {f.rule_id: f for f in run_rules(facts, all_rules()).findings}
    assert "BNB306" in findings and "BNB314" not in findings and "BNB315" not in findings
    assert any(e.label == "the real loader said" for e in findings["BNB306"].evidence)


def test_missing_cudart_is_found_elsewhere_and_the_loader_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = _synthetic(tmp_path, [ELF / "modern"], ELF / "bnb" / "libbitsandbytes_cuda121.so", monkeypatch)
    native, load = facts.native, facts.load
    assert native is not None and load is not None
    cudart = next(d for d in native.dependencies if d.name == "libcudart.so.12")
    assert cudart.resolved is None
    assert load.ok is False and "libcudart.so.12: cannot open shared object file" in (load.error or "")
    findings = {f.rule_id: f for f in run_rules(facts, all_rules()).findings}
    assert "BNB303" in findings


def test_healthy_stub_chain_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _synthetic(
        tmp_path, [ELF / "cuda12", ELF / "modern"], ELF / "bnb" / "libbitsandbytes_cuda121.so", monkeypatch
    )
    assert facts.load is not None and facts.load.ok is True, facts.load
    ids = {f.rule_id for f in run_rules(facts, all_rules()).findings}
    assert not {i for i in ids if i.startswith("BNB3")}


@pytest.mark.parametrize("name", ["truncated.so", "not_elf.so", "empty.so", "bad_dynamic.so", "bad_class.so"])
def test_corrupt_library_is_a_finding_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    broken = tmp_path / "libbitsandbytes_cuda121.so"
    shutil.copy(ELF / "corrupt" / name, broken)
    facts = _synthetic(tmp_path, [ELF / "cuda12", ELF / "modern"], broken, monkeypatch)
    findings = {f.rule_id for f in run_rules(facts, all_rules()).findings}
    assert "BNB313" in findings
    assert facts.load is not None and facts.load.ran
    if name == "bad_dynamic.so":
        # ld.so maps segments by p_vaddr and never reads the patched offsets: the real loader accepts the
        # file, and that disagreement with the static verdict is reported on its own.
        assert facts.load.ok is True and "BNB315" in findings
    else:
        assert facts.load.ok is False and "BNB315" not in findings


def test_wrong_architecture_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "libbitsandbytes_cuda121.so"
    shutil.copy(ELF / "aarch64" / "libbitsandbytes_cpu.so", wrong)
    facts = _synthetic(tmp_path, [ELF / "cuda12", ELF / "modern"], wrong, monkeypatch)
    report = diagnose_facts_only(facts)
    assert "BNB313" in report and "EM_AARCH64" in report["BNB313"]


def diagnose_facts_only(facts: Facts) -> dict[str, str]:
    return {f.rule_id: f.title for f in run_rules(facts, all_rules()).findings}


def test_live_diagnosis_includes_the_load_check() -> None:
    report = diagnose(LiveHost())
    assert report.facts.load is not None and report.facts.load.ran
    assert "probe.load" in report.timings
