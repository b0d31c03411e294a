"""Every command fits the machine it is printed for (issue 11, items 3 and 7).

The remedy check (:func:`bnbdoctor.remedy.check.remedy_problems`) runs over every finding of every
recorded machine, every kept log and every rule case. The unit tests pin what pip itself would do,
on PyPI's real release data (``bnbdoctor/data/bnb_releases.json``): which releases install on a
glibc, a Python, an OS/arch, and which keep an installed torch, pre-releases and local builds
compared as pip compares them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, fixture_names
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from bnbdoctor.doctor import diagnose
from bnbdoctor.explain import explain_file
from bnbdoctor.facts import Facts, PlatformFacts, PythonFacts, TorchFacts
from bnbdoctor.findings import Finding, Remediation, Severity
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.knowledge.published import published_releases, torch_for_cuda, torch_published_for
from bnbdoctor.remedy import fit_remedies
from bnbdoctor.remedy.check import remedy_problems
from bnbdoctor.remedy.commands import parse, pip_calls, programs, render
from bnbdoctor.remedy.installable import blocked, describe, installable
from bnbdoctor.remedy.target import Target
from bnbdoctor.ruledocs.cases import all_cases, case_facts, run_case

LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.txt")) + sorted(
    (ROOT / "tests" / "data" / "synthetic_logs").glob("*.txt")
)


def linux(**changes: object) -> Target:
    base = Target(
        os="linux",
        arch="x86_64",
        glibc=Version("2.35"),
        macos=None,
        python=Version("3.11.9"),
        torch="2.5.1+cu121",
        torch_cuda="12.1",
        conda=False,
        nvidia_driver=True,
        python_command="/home/u/venv/bin/python",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def versions(target: Target, spec: str | None = None) -> list[str]:
    return [r.version for r in installable(target, SpecifierSet(spec) if spec else None)]


# ------------------------------------------------------------------ the release data, as pip reads it
def test_the_release_index_is_pypis() -> None:
    releases = published_releases()
    assert len(releases) >= 60
    by_version = {r.version: r for r in releases}
    assert by_version["0.42.0"].tags == ("any", "sdist")
    assert "win_amd64" in by_version["0.43.0"].tags and "manylinux_2_24_aarch64" not in by_version["0.45.5"].tags
    assert "macosx_14_0_arm64" in by_version["0.49.0"].tags and "win_arm64" in by_version["0.50.0"].tags
    assert by_version["0.46.0"].requires_python == ">=3.9" and by_version["0.49.0"].requires_python == ">=3.10"
    assert by_version["0.45.0"].requires_torch == ">=2.0,<3" and by_version["0.50.2"].requires_torch == ">=2.4,<3"
    assert by_version["0.44.1"].requires_torch is None


def test_an_nvidia_container_torch_is_below_the_release_it_previews() -> None:
    # 2.2.0a0 < 2.2: bitsandbytes 0.46 (torch>=2.2) would make pip replace NVIDIA's torch.
    container = linux(torch="2.2.0a0+81ea7a4", torch_cuda="12.3")
    assert versions(container)[-1] == "0.45.5"
    assert versions(linux(torch="2.2.0"))[-1] == "0.47.0"
    assert versions(linux(torch="2.3.0rc1"))[-1] == "0.47.0"  # an rc of 2.3 is not 2.3 either
    assert versions(linux(torch="2.4.0.dev20240601+cu121"))[-1] == "0.49.2"
    assert describe(installable(container, SpecifierSet(">=0.43")), upper_open=False) == ">=0.43.0,<0.46"


def test_glibc_python_and_platform_rule_releases_out() -> None:
    assert versions(linux(glibc=Version("2.17")))[-1] == "0.42.0"  # manylinux_2_24 from 0.43.0
    assert versions(linux(python=Version("3.8.10")))[-1] == "0.45.5"
    assert versions(linux(arch="aarch64"))[0] == "0.46.0"
    windows = linux(os="windows", glibc=None, torch="2.5.1+cu121")
    assert versions(windows)[0] == "0.43.0"  # the py3-none-any wheels hold only Linux libraries
    assert versions(replace(windows, arch="aarch64"))[0] == "0.50.0"
    mac = linux(os="macos", arch="aarch64", glibc=None, macos=Version("14.5"), torch="2.5.1", torch_cuda=None)
    assert versions(mac)[0] == "0.49.0"
    assert versions(replace(mac, macos=Version("13.6"))) == []


def test_blocked_names_what_to_change_first() -> None:
    old_torch = linux(torch="2.1.2+cu118", torch_cuda="11.8")
    reason = blocked(old_torch, SpecifierSet(">=0.46"))
    assert reason is not None and reason.change == "torch" and "0.46.0 already requires torch>=2.2,<3" in reason.reason
    centos = blocked(linux(glibc=Version("2.17")), SpecifierSet(">=0.43.1"))
    assert centos is not None and centos.change == "os" and "needs glibc 2.24+" in centos.reason
    py38 = blocked(linux(python=Version("3.8.10")), SpecifierSet(">=0.46"))
    assert py38 is not None and py38.change == "python"
    empty = blocked(linux(), SpecifierSet(">=0.49.0,<0.48"))
    assert empty is not None and empty.change == "specifier"
    assert blocked(linux(), SpecifierSet(">=0.46")) is None


def test_torch_pins_are_published_pairs() -> None:
    assert torch_published_for("2.4.0", "11.8") is True
    assert torch_published_for("2.5.1", "12.6") is False
    assert torch_published_for("9.1.0", "12.6") is None  # newer than the table: unknown, never assumed
    assert torch_published_for("2.13.0", "13.0") is True  # a row of the arch-list table is a published build
    assert torch_for_cuda("12.6", near="2.5.1") == "2.6.0"
    assert torch_for_cuda("11.8", near="2.4.0") == "2.4.0"


# ------------------------------------------------------------------------------ command lines
def test_commands_are_parsed_and_rendered_as_the_examined_interpreter() -> None:
    line = 'pip install -U "bitsandbytes>=0.43.0,<0.46" && python -m bitsandbytes'
    (call,) = pip_calls(line)
    assert str(call.packages()["bitsandbytes"].specifier) in ("<0.46,>=0.43.0", ">=0.43.0,<0.46")
    assert render(parse(line), "/v/bin/python -m pip") == (
        '/v/bin/python -m pip install -U "bitsandbytes>=0.43.0,<0.46" && python -m bitsandbytes'
    )
    assert programs("CUDA_VISIBLE_DEVICES=1 nvidia-smi | grep x") == ["nvidia-smi", "grep"]
    assert pip_calls("cmake -B build && pip install .")[0].requirements == {}


def finding(rule_id: str, *commands: str) -> Finding:
    return Finding(rule_id, "x", Severity.ERROR, "t", "e", remediation=Remediation("Fix it.", list(commands)))


def facts_for(
    *, os_name: str = "linux", glibc: str | None = "2.35", torch: str = "2.5.1+cu121", cuda: str | None = "12.1"
) -> Facts:
    executable = "C:\\Users\\u\\venv\\Scripts\\python.exe" if os_name == "windows" else "/home/u/venv/bin/python"
    return Facts(
        platform=PlatformFacts(os=os_name, arch="x86_64", libc="glibc" if glibc else None, libc_version=glibc),
        python=PythonFacts(
            executable=executable,
            selected_by="VIRTUAL_ENV",
            version="3.11.9",
            torch=TorchFacts(installed=True, version=torch, cuda=cuda),
        ),
    )


def test_a_report_names_one_bitsandbytes_specifier() -> None:
    facts = facts_for(torch="2.0.1+cu118", cuda="11.8")
    first = finding("BNB204", 'pip install -U "bitsandbytes>=0.43.0"')
    second = finding("BNB205", 'pip install -U "bitsandbytes>=0.43.1"', "pip install -U bitsandbytes")
    fit_remedies([first, second], facts)
    expected = '/home/u/venv/bin/python -m pip install -U "bitsandbytes>=0.43.1,<0.46"'
    assert first.remediation.commands == [expected] and second.remediation.commands == [expected]
    assert "keeps your torch 2.0.1+cu118" in first.remediation.text
    assert remedy_problems([first, second], facts) == []


def test_a_conflicting_install_is_left_out_and_says_so() -> None:
    facts = facts_for()
    pin = finding("BNB103", 'pip install "bitsandbytes==0.47.0"')
    upgrade = finding("BNB307", 'pip install -U "bitsandbytes>=0.48.0"')
    fit_remedies([pin, upgrade], facts)
    assert upgrade.remediation.commands == []
    assert "conflicts with the one BNB103 gives" in upgrade.remediation.text


def test_an_upgrade_that_cannot_install_is_not_printed() -> None:
    facts = facts_for(glibc="2.17")
    upgrade = finding("BNB301", 'pip install -U "bitsandbytes>=0.50.0"')
    fit_remedies([upgrade], facts)
    assert upgrade.remediation.commands == []
    assert "manylinux_2_24_x86_64 wheel needs glibc 2.24+" in upgrade.remediation.text


def test_tools_the_machine_lacks_are_not_offered() -> None:
    facts = facts_for(os_name="windows", glibc=None)
    facts.gpu = None
    commands = finding("BNB999", "export BNB_CUDA_VERSION=121", "unset BNB_CUDA_VERSION", "ldconfig -p | grep cuda")
    fit_remedies([commands], facts)
    assert commands.remediation.commands == ['$env:BNB_CUDA_VERSION = "121"', "Remove-Item Env:BNB_CUDA_VERSION"]
    linux_facts = facts_for()
    from bnbdoctor.facts import GpuFacts

    linux_facts.gpu = GpuFacts(nvml_available=False, nvml_error="NVML Shared Library Not Found")
    smi = finding("BNB999", "nvidia-smi", "conda install x", "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib")
    fit_remedies([smi], linux_facts)
    assert smi.remediation.commands == []


# --------------------------------------------------------------------- over everything recorded
@pytest.mark.parametrize("name", fixture_names())
def test_every_command_of_a_recorded_machine_fits_it(name: str) -> None:
    report = diagnose(FixtureHost.named(name))
    assert remedy_problems(report.findings, report.facts) == []


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_every_command_explain_prints_fits(path: Path) -> None:
    report = explain_file(str(path))
    assert remedy_problems(report.findings, report.facts) == []


def test_every_command_of_every_rule_case_fits() -> None:
    problems = []
    for case in all_cases():
        diagnosis = run_case(case)
        problems += [f"{case.path.name}: {p}" for p in remedy_problems(diagnosis.findings, case_facts(case))]
    assert problems == []


def _commands(name: str) -> dict[str, list[str]]:
    report = diagnose(FixtureHost.named(name))
    return {f.rule_id: f.remediation.commands for f in report.findings}


def test_an_nvidia_container_keeps_its_torch() -> None:
    # torch 2.2.0a0+81ea7a4 does not satisfy 0.46.1's torch>=2.2: the fix is a release that keeps it.
    report = diagnose(FixtureHost.named("ngc-2401-torch-prerelease-bnb0461"))
    (finding,) = [f for f in report.findings if f.rule_id == "BNB206"]
    assert finding.remediation.commands == ['/usr/bin/python -m pip install "bitsandbytes<0.46"']
    assert "pip orders before 2.2.0" in finding.explanation


def test_glibc_217_is_never_told_to_install_a_manylinux_2_24_wheel() -> None:
    report = diagnose(FixtureHost.named("centos7-bnb042-torch-cu124"))
    (upgrade,) = [f for f in report.findings if f.rule_id == "BNB205"]  # the upgrade that is the fix
    assert upgrade.remediation.commands == [] and "will not install on glibc 2.17" in upgrade.remediation.text
    commands = [c for f in report.findings for c in f.remediation.commands]
    for command in commands:
        for call in pip_calls(command):
            bnb = call.packages().get("bitsandbytes")
            assert bnb is None or not any(
                v.parsed >= Version("0.43") for v in published_releases() if v.parsed in bnb.specifier
            )


def test_other_packages_get_one_specifier_per_report_too() -> None:
    facts = facts_for()
    first = finding("BNB450", 'pip install -U "transformers>=5.18.0"')
    second = finding("BNB521", "pip install -U transformers accelerate")
    fit_remedies([first, second], facts)
    assert second.remediation.commands == [
        '/home/u/venv/bin/python -m pip install -U "transformers>=5.18.0" accelerate'
    ]
    assert remedy_problems([first, second], facts) == []


def test_the_check_and_the_fitting_agree_on_published_torch_builds() -> None:
    """Every torch build the arch-list table records is a published (torch, CUDA) pair to the fitting
    pass, so the check must know its index too (cu132 for torch 2.13 was once 'no such index')."""
    from bnbdoctor.knowledge.published import cuda_indexes, torch_published_for
    from bnbdoctor.knowledge.torch_wheels import TORCH_BUILDS
    from bnbdoctor.remedy import check

    for build in TORCH_BUILDS:
        assert torch_published_for(build.release, build.cuda) is True
        assert build.cuda in cuda_indexes()
    assert cuda_indexes() == check._KNOWN_INDEXES
    command = 'pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cu132'
    from bnbdoctor.remedy.commands import index_cuda, torch_index

    (call,) = pip_calls(command)
    assert torch_index(call) == "cu132" and index_cuda(torch_index(call)) in check._KNOWN_INDEXES
