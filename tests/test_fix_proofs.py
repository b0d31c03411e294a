"""Prescriptions that work (issue 23): every fix re-diagnosed on the machine as it leaves it, fixes that keep
the channel a component came from, and no install on a machine where nothing fails.

The machines are the recorded ones (``platform_fixtures/``) and the real patient script run on folders laid
out as conda, pip and a checkout lay them out; the re-diagnosis is the real rule engine on the replayed facts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_names

from bnbdoctor.derive import CONDA, PYPI, SOURCE, VENDOR, bnb_channel, torch_channel
from bnbdoctor.doctor import diagnose
from bnbdoctor.facts import DirectUrl, Facts, PythonFacts, TorchFacts
from bnbdoctor.findings import Severity
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.knowledge.shipped import shipped_libraries, shipped_wheels
from bnbdoctor.probes.python_env import patient_script
from bnbdoctor.remedy.aftermath import facts_after, only_looks
from bnbdoctor.remedy.commands import parse, pip_calls, programs
from bnbdoctor.render.markdown import render_markdown
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.engine import AFTER_FIX, DOCTOR, run_rules
from bnbdoctor.serde import to_jsonable

ROOT = Path(__file__).resolve().parents[1]


def _report(name: str) -> Any:
    return diagnose(FixtureHost.named(name))


def _errors(facts: Facts) -> list[str]:
    """The errors the rules find on ``facts`` (the after-fix pipeline: no remedies, no verification)."""
    return [f.rule_id for f in run_rules(facts, all_rules(), AFTER_FIX).findings if f.severity is Severity.ERROR]


def _installs(command: str) -> bool:
    calls = [c for c in pip_calls(command) if c.subcommand in ("install", "uninstall")]
    return bool(calls) or "conda install" in command


# ------------------------------------------------------------------------ re-diagnosis over every machine
@pytest.mark.parametrize("name", fixture_names())
def test_every_printed_fix_carries_a_proof_that_holds(name: str) -> None:
    """A fix with commands is re-diagnosed; "verified" means the rules really find no error on the facts
    the report's commands leave, and "not enough" names errors that really remain."""
    report = _report(name)
    commands = [c for f in report.findings for c in f.remediation.commands]
    for finding in report.findings:
        proof = finding.remediation.proof
        fixes = [c for c in finding.remediation.commands if not only_looks(c)]
        assert (proof is None) == (not fixes), finding.rule_id
    if not commands:
        return
    after = facts_after(report.facts, commands)
    errors = [
        f.rule_id for f in run_rules(after.facts, all_rules(), AFTER_FIX).findings if f.severity is Severity.ERROR
    ]
    for finding in report.findings:
        proof = finding.remediation.proof
        if proof is None:
            continue
        if proof.verified is True:
            assert errors == [], f"{finding.rule_id} claims verified but {errors} remain"
        if proof.verified is False:
            assert [r.split(":")[0] for r in proof.remaining] == errors and errors
        if proof.verified is None:
            assert proof.not_replayed, "cannot tell must say which command"


def test_how_many_recorded_fixes_are_verified() -> None:
    """Most recorded machines' fixes are replayed to the end; the rest say which command stops the replay."""
    verdicts = [
        f.remediation.proof.verified for n in fixture_names() for f in _report(n).findings if f.remediation.proof
    ]
    assert verdicts.count(True) >= 20 and verdicts.count(True) > 2 * verdicts.count(None)


def test_an_nvidia_container_fix_is_verified_and_keeps_the_vendor_torch() -> None:
    report = _report("ngc-2401-torch-prerelease-bnb0461")
    finding = next(f for f in report.findings if f.rule_id == "BNB206")
    assert finding.remediation.proof is not None and finding.remediation.proof.verified is True
    assert not any("torch" in call.packages() for c in finding.remediation.commands for call in pip_calls(c))
    assert "the real loader's verdict" in finding.remediation.proof.unknown  # never claimed before it runs


def test_hiding_the_gpu_bitsandbytes_cannot_run_is_replayed() -> None:
    """A GT 1030 next to an A6000: ``export CUDA_VISIBLE_DEVICES=1`` hides the card the library has no kernels
    for, so the replay applies the mask as CUDA does and BNB105 clears. With the mask 0 only the GT 1030 is seen:
    0.42's legacy loader then picks the _nocublaslt library for cc 6.1 (kernels it has), and LLM.int8() is slow."""
    report = _report("mixed-gt1030-a6000-bnb042")
    proof = next(f.remediation.proof for f in report.findings if f.rule_id == "BNB106")
    assert proof is not None and proof.verified is True
    only_old = facts_after(report.facts, ["export CUDA_VISIBLE_DEVICES=0"]).facts
    assert [d.visible for d in only_old.gpu.devices] == [True, False]  # type: ignore[union-attr]
    assert only_old.native.selection.expected_file == "libbitsandbytes_cuda121_nocublaslt.so"  # type: ignore[union-attr]
    still = [f.rule_id for f in run_rules(only_old, all_rules(), AFTER_FIX).findings]
    assert "BNB105" not in still and "BNB104" in still


def test_only_diagnostic_steps_carry_no_proof() -> None:
    """Kepler: BNB102's only command is nvidia-smi, a step of the diagnosis, not a fix to prove."""
    finding = next(f for f in _report("kepler-k80").findings if f.rule_id == "BNB102")
    assert finding.remediation.commands == ["nvidia-smi"] and finding.remediation.proof is None


def test_a_command_the_replay_does_not_model_is_never_called_verified() -> None:
    report = _report("wsl2-missing-wsl-lib")
    proof = next(f.remediation.proof for f in report.findings if f.rule_id == "BNB107")
    assert proof is not None and proof.verified is None
    assert proof.not_replayed[0].startswith("`wsl.exe --update`")


def test_an_override_left_next_to_an_upgrade_is_what_remains() -> None:
    """``BNB_CUDA_VERSION=117`` next to an upgrade to 0.50.2, which ships no cuda117 library: the replay
    re-predicts the library choice from the files the new wheel ships, and the override rule fires again."""
    facts = _report("bnb050-override-117").facts
    assert facts.env.get("BNB_CUDA_VERSION") == "117"
    assert facts.python is not None
    upgrade = f'{facts.python.executable} -m pip install "bitsandbytes==0.50.2"'
    kept = facts_after(facts, [upgrade])
    assert "libbitsandbytes_cuda117.so" not in kept.facts.python.bitsandbytes.native_libraries  # type: ignore[union-attr]
    assert "BNB302" in _errors(kept.facts)
    cleared = facts_after(facts, [upgrade, "unset BNB_CUDA_VERSION"])
    after = [
        f.rule_id for f in run_rules(cleared.facts, all_rules(), AFTER_FIX).findings if f.severity is Severity.ERROR
    ]
    assert "BNB302" not in after


def test_the_replay_never_changes_the_facts_it_was_given() -> None:
    facts = _report("bnb050-override-117").facts
    before = json.dumps(to_jsonable(facts), sort_keys=True)
    after = facts_after(facts, ["unset BNB_CUDA_VERSION", 'python -m pip install "bitsandbytes==0.45.5"'])
    assert json.dumps(to_jsonable(facts), sort_keys=True) == before
    assert json.dumps(to_jsonable(after.facts), sort_keys=True) != before  # the copy did change


def test_environment_commands_replay_in_posix_and_powershell() -> None:
    facts = Facts(env={"BNB_CUDA_VERSION": "117"})
    assert "BNB_CUDA_VERSION" not in facts_after(facts, ["unset BNB_CUDA_VERSION"]).facts.env
    assert "BNB_CUDA_VERSION" not in facts_after(facts, ["Remove-Item Env:BNB_CUDA_VERSION"]).facts.env
    assert facts_after(facts, ['$env:BNB_CUDA_VERSION = "121"']).facts.env["BNB_CUDA_VERSION"] == "121"
    assert facts_after(facts, ["export BNB_CUDA_VERSION=121"]).facts.env["BNB_CUDA_VERSION"] == "121"
    assert facts_after(facts, ["nvidia-smi", "ldconfig -p | grep libcuda"]).not_replayed == {}
    assert (
        "sudo"
        in facts_after(facts, ["sudo apt install nvidia-driver-550"]).not_replayed["sudo apt install nvidia-driver-550"]
    )


def test_a_torch_from_a_cuda_index_is_replayed_with_that_cuda_and_the_table_s_kernels() -> None:
    facts = _report("rtx5090-torch-cu124").facts
    assert facts.python is not None
    pip = f"{facts.python.executable} -m pip install"
    after = facts_after(facts, [f"{pip} torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128"])
    assert after.facts.python is not None
    torch = after.facts.python.torch
    assert (torch.version, torch.cuda) == ("2.7.1+cu128", "12.8")
    assert "BNB120" not in _errors(after.facts)  # 2.7 cu128 builds sm_120 (the table of torch wheels)
    old = facts_after(facts, [f"{pip} torch==2.4.1 --index-url https://download.pytorch.org/whl/cu124"])
    assert "BNB120" in _errors(old.facts)


def test_windows_paths_keep_their_backslashes_when_parsed() -> None:
    """``C:\\Users\\...\\python.exe -m pip`` was read with POSIX escapes, lost its interpreter and was never
    seen as a pip call (so neither narrowed nor replayed)."""
    line = r'C:\Users\ivan\venv\Scripts\python.exe -m pip install -U "bitsandbytes>=0.43.1,<0.46"'
    (call,) = pip_calls(line)
    assert str(call.packages()["bitsandbytes"].specifier) in ("<0.46,>=0.43.1", ">=0.43.1,<0.46")
    assert programs(line) == ["pip"] and len(parse(line)) == 1


# ----------------------------------------------------------------------------------- who owns what
def test_a_conda_torch_is_fixed_with_conda_never_pip() -> None:
    report = _report("conda-pytorch-rtx5090-cu124")
    assert torch_channel(report.facts).kind == CONDA  # type: ignore[union-attr]
    finding = next(f for f in report.findings if f.rule_id == "BNB120")
    assert not any("torch" in call.packages() for c in finding.remediation.commands for call in pip_calls(c))
    assert any(c.startswith('conda install -c conda-forge "pytorch') for c in finding.remediation.commands)
    assert "conda's record" in finding.remediation.text


def test_a_conda_forge_bitsandbytes_is_upgraded_with_conda_and_the_way_out_is_said() -> None:
    report = _report("conda-forge-bnb0455-transformers5")
    assert bnb_channel(report.facts).kind == CONDA  # type: ignore[union-attr]
    finding = next(f for f in report.findings if f.rule_id == "BNB214")
    assert 'conda install -c conda-forge "bitsandbytes>=0.46.1"' in finding.remediation.commands
    assert not any("bitsandbytes" in call.packages() for c in finding.remediation.commands for call in pip_calls(c))
    assert "conda remove --force bitsandbytes" in finding.remediation.text
    assert finding.remediation.proof is not None and finding.remediation.proof.verified is True


def test_the_same_machine_with_pip_s_bitsandbytes_keeps_pip() -> None:
    finding = next(f for f in _report("transformers5-bnb0455").findings if f.rule_id == "BNB214")
    assert any("bitsandbytes" in call.packages() for c in finding.remediation.commands for call in pip_calls(c))


@pytest.mark.parametrize(
    ("torch", "kind"),
    [
        (TorchFacts(True, "2.2.0a0+81ea7a4", cuda="12.3", installer="pip"), VENDOR),
        (TorchFacts(True, "2.1.0a0+41361538.nv23.06", cuda="11.4"), VENDOR),
        (TorchFacts(True, "2.4.0a0+git1a2b3c4", cuda="12.4"), SOURCE),
        (TorchFacts(True, "2.5.1", direct_url=DirectUrl("file:///home/u/src/pytorch", editable=True)), SOURCE),
        (TorchFacts(True, "2.5.1+cu121", installer="pip"), PYPI),
        (TorchFacts(True, "2.5.1+rocm6.2", installer="uv"), PYPI),
        (TorchFacts(True, "2.5.1", installer="conda"), CONDA),
    ],
)
def test_torch_channels(torch: TorchFacts, kind: str) -> None:
    facts = Facts(python=PythonFacts(executable="/x/python", selected_by="--python", torch=torch))
    assert torch_channel(facts).kind == kind  # type: ignore[union-attr]


def _patient_in_venv(tmp_path: Path) -> dict[str, Any]:
    """The real patient script in a fresh interpreter prefix laid out as conda lays one out."""
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "version.py").write_text("__version__ = '2.4.0'\ncuda = '12.4'\n")
    info = site / "torch-2.4.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n")
    (info / "INSTALLER").write_text("conda\n")
    (venv / "conda-meta").mkdir()
    (venv / "conda-meta" / "pytorch-2.4.0-py3.11_cuda12.4_cudnn9.1.0_0.json").write_text("{}")
    (venv / "conda-meta" / "zlib-1.3.1-hb9d3cd8_2.json").write_text("{}")
    return _patient_answer(venv / "bin" / "python")


def _patient_answer(python: Path) -> dict[str, Any]:
    """What the real patient script prints in ``python`` (outside this test run's own environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run(
        [str(python), "-B", "-c", patient_script()], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    answer: dict[str, Any] = json.loads(out.stdout)
    return answer


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX venv layout")
def test_the_patient_script_reads_conda_s_records_and_the_installer(tmp_path: Path) -> None:
    answer = _patient_in_venv(tmp_path)
    assert answer["conda_packages"] == {"pytorch": "2.4.0"}  # only the owners of patients, never zlib
    assert answer["torch"]["installer"] == "conda" and answer["torch"]["direct_url"] is None


# ------------------------------------------------------------------------------ healthy stays as it is
@pytest.mark.parametrize("name", fixture_names())
def test_no_install_is_printed_for_a_warning_or_on_a_machine_without_an_error(name: str) -> None:
    for finding in _report(name).findings:
        if finding.severity is not Severity.ERROR:
            assert not any(_installs(c) for c in finding.remediation.commands), (finding.rule_id, finding.remediation)


def test_a_log_without_the_architecture_does_not_rule_every_release_out() -> None:
    """Not knowing is an answer: the unknown architecture of a log constrains nothing."""
    from bnbdoctor.facts import PlatformFacts
    from bnbdoctor.remedy.installable import installable
    from bnbdoctor.remedy.target import target_of

    facts = Facts(platform=PlatformFacts(os="linux", arch="unknown"))
    assert target_of(facts).arch is None and installable(target_of(facts))


# --------------------------------------------------------------------------------- the data it needs
def test_shipped_libraries_are_the_oracle_s() -> None:
    """bnbdoctor/data/bnb_shipped.json is written from the oracle's record of every wheel's files."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from write_bnb_shipped import document
    finally:
        sys.path.pop(0)
    packaged = json.loads((ROOT / "bnbdoctor" / "data" / "bnb_shipped.json").read_text())
    assert packaged == json.loads(json.dumps(document()))
    assert len(shipped_wheels()) >= 95
    assert "libbitsandbytes_cuda117.so" not in (shipped_libraries("0.50.2", "linux", "x86_64") or ())
    assert shipped_libraries("0.49.2", "macos", "arm64") == ("libbitsandbytes_cpu.dylib",)
    assert shipped_libraries("0.41.1", "windows", "x86_64")[0].endswith(".so")  # type: ignore[index]


def test_markdown_shows_the_proof() -> None:
    text = render_markdown(_report("ngc-2401-torch-prerelease-bnb0461"))
    assert "*Verified:* Re-diagnosed as these commands" in text


# --------------------------------------------------------------------- an environment without pip
def test_a_uv_environment_without_pip_gets_uv_s_pip() -> None:
    """``python -m pip`` answers "No module named pip" in an environment uv made: the command is uv's."""
    report = _report("uv-env-bnb0455-transformers5")
    finding = next(f for f in report.findings if f.rule_id == "BNB214")
    python = report.facts.python.executable
    assert any(c.startswith("uv pip install --python ") for c in finding.remediation.commands)
    assert not any(f"{python} -m pip" in c for c in finding.remediation.commands)
    assert finding.remediation.proof is not None and finding.remediation.proof.verified is True  # replayed too


@pytest.mark.slow
def test_the_patient_script_tells_a_uv_environment_without_pip(tmp_path: Path) -> None:
    """A real ``uv venv`` (uv from the test requirements): its pyvenv.cfg names uv, and it has no pip."""
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        pytest.skip("uv is in requirements-test.txt; this environment was made without it")
    venv = tmp_path / "uvenv"
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    answer = _patient_answer(venv / "bin" / "python")
    assert (answer["venv_tool"], answer["pip_available"]) == ("uv", False)
    plain = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(plain)], check=True, timeout=300)
    answer = _patient_answer(plain / "bin" / "python")
    assert (answer["venv_tool"], answer["pip_available"]) == ("venv", True)


def test_a_driver_update_is_offered_only_where_a_driver_exists() -> None:
    """The K80's last driver branch is R470 (CUDA 11.4): the fix never says "update the driver" to run CUDA 11.7;
    a Turing or newer GPU is told the driver CUDA 12.4 needs (Table 3 of the CUDA release notes)."""
    kepler = next(f for f in _report("kepler-k80").findings if f.rule_id == "BNB102")
    assert "R470" in kepler.remediation.text and "Update the NVIDIA driver" not in kepler.remediation.text
    newer = next(f for f in _report("driver-cuda118-torch-cu124").findings if f.rule_id == "BNB102")
    assert "550.54.14 or newer" in newer.remediation.text
    from bnbdoctor.knowledge.drivers import driver_for, last_branch

    assert last_branch((3, 7)).branch == "R470" and last_branch((6, 1)).cuda == (13, 0)  # type: ignore[union-attr]
    assert last_branch((7, 5)) is None and last_branch((7, 0)).family == "Volta"  # type: ignore[union-attr]
    assert driver_for("12.4") == "550.54.14" and driver_for("12.4", windows=True) == "551.61"
    assert driver_for("12.7") is None  # no 12.7 toolkit was released


LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.txt"))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_a_fix_read_from_a_log_says_it_was_not_re_diagnosed(path: Path) -> None:
    """A log is not the machine: every fix explain prints says so (never "verified"), with the way to check."""
    from bnbdoctor.explain import explain_file
    from bnbdoctor.rules.verify import FROM_A_LOG

    for finding in explain_file(str(path)).findings:
        fixes = [c for c in finding.remediation.commands if not only_looks(c)]
        proof = finding.remediation.proof
        assert (proof is None) == (not fixes), finding.rule_id
        if proof is not None:
            assert proof.verified is None and proof.not_replayed == [FROM_A_LOG]


def test_a_release_without_kernels_for_the_gpu_is_never_what_a_fix_installs() -> None:
    """A GTX 980 Ti (Maxwell, cc 5.2): the wheels lost Maxwell in 0.48.0, so an upgrade is narrowed below it
    (knowledge.gpus.MAXWELL); a Kepler card has no release with kernels after 0.39.1."""
    from bnbdoctor.remedy.installable import installable
    from bnbdoctor.remedy.target import Target

    maxwell = Target("linux", "x86_64", None, None, None, None, None, False, True, "python", gpu_majors=(5,))
    assert installable(maxwell)[-1].version == "0.47.0"
    kepler = Target("linux", "x86_64", None, None, None, None, None, False, True, "python", gpu_majors=(3,))
    assert installable(kepler)[-1].version == "0.39.0"  # the last release before Kepler left the wheels


def test_without_an_nvidia_driver_a_missing_torch_comes_from_the_cpu_index() -> None:
    """PyPI's Linux torch is the CUDA build (several GB of nvidia-* wheels). The torch-missing machine as
    recorded (an A10, driver 535) gets the CUDA index its driver runs; the same machine with the NVML answer
    recorded on cpu-laptop (no driver) gets PyTorch's CPU index, says why, and the replay installs a CPU torch."""
    with_gpu = _report("torch-missing")
    [recorded] = [c for f in with_gpu.findings if f.rule_id == "BNB201" for c in f.remediation.commands]
    assert recorded.endswith("-m pip install torch --index-url https://download.pytorch.org/whl/cu121"), recorded

    facts = _report("torch-missing").facts
    facts.gpu = _report("cpu-laptop").facts.gpu
    assert facts.gpu is not None and facts.gpu.nvml_available is False
    finding = next(f for f in run_rules(facts, all_rules(), DOCTOR).findings if f.rule_id == "BNB201")
    [install] = finding.remediation.commands
    assert install.endswith("-m pip install torch --index-url https://download.pytorch.org/whl/cpu"), install
    assert "No NVIDIA driver answers here" in finding.remediation.text
    after = facts_after(facts, finding.remediation.commands).facts
    assert after.python is not None and after.python.torch.installed
    assert after.python.torch.cuda is None and (after.python.torch.version or "").endswith("+cpu")
