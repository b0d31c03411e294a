"""Prescriptions that suit the machine (issue 23), checked on machines nobody recorded.

The recorded machines are few; the machines bnbdoctor meets are not. Each recorded machine is diagnosed as
recorded and then again with another GPU and driver (recorded NVML answers of real GPU models: no driver, an
R470 driver with a T4 or a Kepler K80, a Maxwell M60 or a Pascal P100 on R535, an RTX 5090 on R570) and with
its torch or bitsandbytes owned by another channel (a vendor pre-release, conda, a source checkout). On every
one of those machines the printed commands must:

- never pip-install torch over a conda or source build, nor bitsandbytes over conda's;
- never install a torch whose CUDA major is newer than the driver runs, nor PyPI's (CUDA) Linux torch where no
  NVIDIA driver answers;
- never install anything where nothing fails (no error);
- leave a bitsandbytes that has a wheel for this platform and kernels for the GPU (the replay's pick).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from functools import cache

import pytest
from conftest import fixture_names
from packaging.version import Version

from bnbdoctor.derive import CONDA, SOURCE, bnb_channel, torch_channel
from bnbdoctor.doctor import diagnose
from bnbdoctor.facts import DirectUrl, Facts, GpuDevice, GpuFacts
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.knowledge.gpus import DROPPED_ARCHITECTURES
from bnbdoctor.knowledge.shipped import shipped_libraries
from bnbdoctor.remedy.aftermath import facts_after
from bnbdoctor.remedy.commands import index_cuda, pip_calls, torch_index
from bnbdoctor.report import Report
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.engine import DOCTOR, run_rules


def _gpu(name: str, cc: tuple[int, int], driver: str, cuda: str) -> GpuFacts:
    device = GpuDevice(0, name, list(cc), 16 << 30, 15 << 30)
    return GpuFacts(True, driver_version=driver, driver_cuda_version=cuda, devices=[device])


#: NVML answers of real GPUs and driver branches (R470 is Kepler's last; CUDA 11.4 is what it reports).
GPUS: dict[str, GpuFacts | None] = {
    "as recorded": None,
    "no driver": GpuFacts(False, "NVML Shared Library Not Found", "library_not_found"),
    "T4 on R470": _gpu("Tesla T4", (7, 5), "470.256.02", "11.4"),
    "K80 on R470": _gpu("Tesla K80", (3, 7), "470.256.02", "11.4"),
    "M60 on R535": _gpu("Tesla M60", (5, 2), "535.216.01", "12.2"),
    "P100 on R535": _gpu("Tesla P100-PCIE-16GB", (6, 0), "535.216.01", "12.2"),
    "RTX 5090 on R570": _gpu("NVIDIA GeForce RTX 5090", (12, 0), "570.133.07", "12.8"),
}


def _vendor_torch(facts: Facts) -> None:
    """NVIDIA's containers: a pre-release with a local label (``2.5.0a0+81ea7a4``), which PyPI never had."""
    assert facts.python is not None
    torch = facts.python.torch
    major, minor = (torch.version or "2.5").split(".")[:2]
    torch.version = f"{major}.{minor}.0a0+81ea7a4"


def _conda_torch(facts: Facts) -> None:
    assert facts.python is not None
    facts.python.conda_packages["pytorch"] = (facts.python.torch.version or "2.5.1").split("+")[0]
    facts.python.torch.installer = "conda"


def _source_torch(facts: Facts) -> None:
    assert facts.python is not None
    facts.python.torch.direct_url = DirectUrl("file:///home/user/src/pytorch", editable=True)


def _conda_bnb(facts: Facts) -> None:
    assert facts.python is not None
    facts.python.conda_packages["bitsandbytes"] = facts.python.bitsandbytes.version or "0.45.5"
    facts.python.bitsandbytes.installer = "conda"


OWNERS: dict[str, Callable[[Facts], None] | None] = {
    "as recorded": None,
    "vendor torch": _vendor_torch,
    "conda torch": _conda_torch,
    "source torch": _source_torch,
    "conda bitsandbytes": _conda_bnb,
}


@cache
def _recorded(name: str) -> Report:
    return diagnose(FixtureHost.named(name))


def _machine(name: str, gpu: GpuFacts | None, owner: Callable[[Facts], None] | None) -> Facts | None:
    facts = copy.deepcopy(_recorded(name).facts)
    if facts.python is None or facts.platform is None:
        return None
    if gpu is not None:
        facts.gpu = copy.deepcopy(gpu)
    if owner is not None:
        torch_owner = owner is not _conda_bnb
        component = facts.python.torch if torch_owner else facts.python.bitsandbytes
        if not component.installed:
            return None
        owner(facts)
    return facts


def _major(version: str | None) -> int | None:
    return int(version.split(".")[0]) if version and re.match(r"\d", version) else None


def _findings(facts: Facts) -> list[Finding]:
    """The doctor's findings on ``facts``, their remedies fitted to the machine."""
    return run_rules(facts, all_rules(), DOCTOR).findings


def _problems(facts: Facts, findings: list[Finding]) -> list[str]:
    """What the printed commands of ``findings`` would do wrong on ``facts``."""
    failing = any(f.severity is Severity.ERROR for f in findings)
    torch_owner, bnb_owner = torch_channel(facts), bnb_channel(facts)
    gpu, linux = facts.gpu, facts.platform is not None and facts.platform.os == "linux"
    problems: list[str] = []
    for finding in findings:
        for command in finding.remediation.commands:
            for call in (c for c in pip_calls(command) if c.subcommand == "install"):
                packages, said = call.packages(), f"{finding.rule_id}: {command}"
                if not failing:
                    problems.append(f"an install where nothing fails: {said}")
                if "torch" in packages and torch_owner is not None and torch_owner.kind in (CONDA, SOURCE):
                    said_so = torch_owner.kind == SOURCE and "replaces that build" in finding.remediation.text
                    if not said_so:
                        problems.append(f"pip installs torch over {torch_owner.kind}'s without saying so: {said}")
                if "bitsandbytes" in packages and bnb_owner is not None and bnb_owner.kind == CONDA:
                    problems.append(f"pip installs bitsandbytes over conda's: {said}")
                if "torch" not in packages:
                    continue
                label = torch_index(call)
                cuda, driver = index_cuda(label), gpu.driver_cuda_version if gpu else None
                if cuda and driver and (_major(cuda) or 0) > (_major(driver) or 0):
                    problems.append(f"a CUDA {cuda} torch for a driver that runs CUDA {driver}: {said}")
                no_driver = gpu is not None and not gpu.nvml_available
                if linux and no_driver and label is None and not any(t.startswith("--index") for t in call.tokens):
                    problems.append(f"PyPI's CUDA torch where no NVIDIA driver answers: {said}")
    commands = [c for f in findings for c in f.remediation.commands]
    after = facts_after(facts, commands).facts
    before_bnb, bnb = (
        facts.python.bitsandbytes if facts.python else None,
        after.python.bitsandbytes if after.python else None,
    )
    if (
        bnb is not None
        and bnb.installed
        and bnb.version
        and before_bnb is not None
        and bnb.version != before_bnb.version
    ):
        platform = facts.platform
        known = platform is not None and platform.os in ("linux", "windows", "macos")
        if known and platform is not None and not shipped_libraries(bnb.version, platform.os, platform.arch):
            problems.append(f"bitsandbytes {bnb.version} has no recorded wheel for {platform.os} {platform.arch}")
        majors = {d.cc[0] for d in (gpu.visible if gpu else []) if d.cc}
        for arch in DROPPED_ARCHITECTURES:
            if arch.major in majors and Version(bnb.version) >= Version(arch.removed_in):
                problems.append(f"bitsandbytes {bnb.version} has no kernels for the {arch.family} GPU")
    return problems


@pytest.mark.parametrize("owner", list(OWNERS))
@pytest.mark.parametrize("gpu", list(GPUS))
def test_printed_fixes_suit_machines_nobody_recorded(gpu: str, owner: str) -> None:
    wrong: list[str] = []
    tried = 0
    for name in fixture_names():
        facts = _machine(name, GPUS[gpu], OWNERS[owner])
        if facts is None:
            continue
        tried += 1
        wrong += [f"{name}: {problem}" for problem in _problems(facts, _findings(facts))]
    assert tried >= 10, "the recorded machines should give most variants"
    assert wrong == []


def test_the_checks_catch_what_they_claim() -> None:
    """The checks are not vacuous: PyPI's torch printed where no driver answers, a pip torch over conda's, a CUDA
    13 torch for an R470 driver, an install on a healthy machine and a bitsandbytes without Kepler kernels are
    each reported."""
    facts = _machine("torch-missing", GPUS["no driver"], None)
    assert facts is not None
    findings = _findings(facts)
    assert _problems(facts, findings) == []
    findings[0].remediation.commands = ["/home/leo/venvs/serve/bin/python -m pip install torch"]
    assert [p.split(":")[0] for p in _problems(facts, findings)] == ["PyPI's CUDA torch where no NVIDIA driver answers"]

    conda = copy.deepcopy(_recorded("conda-pytorch-rtx5090-cu124").facts)
    findings = _findings(conda)
    findings[0].remediation.commands = [
        "python -m pip install torch --index-url https://download.pytorch.org/whl/cu128"
    ]
    assert any("over conda's" in p for p in _problems(conda, findings))

    old_driver = _machine("torch-missing", GPUS["T4 on R470"], None)
    assert old_driver is not None
    findings = _findings(old_driver)
    findings[0].remediation.commands = [
        "python -m pip install torch --index-url https://download.pytorch.org/whl/cu130"
    ]
    assert any("CUDA 13.0 torch for a driver that runs CUDA 11.4" in p for p in _problems(old_driver, findings))

    healthy = copy.deepcopy(_recorded("a100-healthy").facts)
    findings = _findings(healthy)
    assert not any(f.severity is Severity.ERROR for f in findings)
    kepler = _machine("a100-healthy", GPUS["K80 on R470"], None)
    assert kepler is not None
    findings = _findings(kepler)
    for finding in findings:
        finding.remediation.commands = ['python -m pip install "bitsandbytes==0.49.0"']
    problems = _problems(kepler, findings)
    assert any("has no kernels for the Kepler GPU" in p for p in problems), problems
