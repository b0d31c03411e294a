"""The Slurm recipes of ``docs/fleet.md`` run against real ``munged``/``slurmctld``/``slurmd`` on localhost.

Issue 16, part 2: "run the doctor on every node, show me what differs" on the engines clusters already run.
A recipe that was only written breaks on quoting, the working folder, the report's name or the exit code;
these tests submit it with ``srun`` and ``sbatch`` to a one-node cluster (``tests/slurm_support.py``, which
installs Debian's ``slurm-wlm`` and ``munge`` when they are missing and says so) and read back what each
node wrote. Where Slurm cannot be installed the tests fail with the reason: they never skip silently.
Every daemon the cluster started is stopped when the module ends, and that is checked.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import slurm_support
from slurm_support import LocalSlurm, SlurmUnavailable

ROOT = Path(__file__).resolve().parents[1]
SBATCH_RECIPE = ROOT / "deploy" / "slurm" / "bnbdoctor-fleet.sbatch"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    local = LocalSlurm(tmp_path_factory.mktemp("slurm"))
    with local:
        yield local
    assert local.running() == [], f"daemons still running after stop: {local.running()}"


@pytest.fixture(scope="module")
def bnbdoctor_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a ``bnbdoctor`` command that runs this checkout, as an installed one would."""
    folder = tmp_path_factory.mktemp("bin")
    command = folder / "bnbdoctor"
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m bnbdoctor "$@"\n')
    command.chmod(0o755)
    return folder


def _env(cluster: LocalSlurm, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = cluster.env
    return {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}", **extra}


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _expands_node_name(bin_dir: Path, tmp_path: Path) -> bool:
    """Whether this bnbdoctor expands ``%N`` in ``-o`` (another part of issue 16; lands separately)."""
    done = _run(
        [str(bin_dir / "bnbdoctor"), "--fixture", "centos7-cxxabi", "--json", "-o", "probe-%N.json"],
        tmp_path,
        {"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    return done.returncode in (0, 1) and not (tmp_path / "probe-%N.json").exists() and any(tmp_path.glob("probe-*"))


def _has_fleet(bin_dir: Path) -> bool:
    """Whether ``bnbdoctor fleet`` exists (another part of issue 16). Not the exit code of ``fleet --help``
    alone: without the subcommand, argparse prints the doctor's own help and exits 0."""
    done = _run([str(bin_dir / "bnbdoctor"), "fleet", "--help"], bin_dir, {"PATH": "/usr/bin:/bin"}, timeout=60)
    return done.returncode == 0 and "bnbdoctor fleet" in done.stdout


def _check_report(path: Path) -> dict[str, Any]:
    assert path.is_file(), f"no report at {path}; the folder holds {sorted(p.name for p in path.parent.iterdir())}"
    report: dict[str, Any] = json.loads(path.read_text())
    assert report["tool"] == "bnbdoctor"
    assert report["source"]["kind"] == "live"
    assert isinstance(report["summary"]["errors"], int)
    return report


def _fleet_summary(bin_dir: Path, reports: Path, cluster: LocalSlurm) -> None:
    """``bnbdoctor fleet reports/`` over what came back: one group, naming this node."""
    assert _has_fleet(bin_dir), "bnbdoctor fleet is missing from this install"
    done = _run([str(bin_dir / "bnbdoctor"), "fleet", "--json", str(reports)], reports.parent, _env(cluster, bin_dir))
    assert done.returncode in (0, 1), done.stderr
    summary = json.loads(done.stdout)
    assert summary["kind"] == "fleet" and not summary["unreadable"]
    (group,) = summary["groups"]
    assert group["count"] == 1 and group["nodes"] == [cluster.node], group
    text = _run([str(bin_dir / "bnbdoctor"), "fleet", str(reports)], reports.parent, _env(cluster, bin_dir))
    assert "1 node" in text.stdout and cluster.node in text.stdout, text.stdout


@pytest.mark.slow
def test_srun_recipe_writes_one_report_per_node(cluster: LocalSlurm, bnbdoctor_bin: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    srun = ["srun", "-N", "1", "--ntasks-per-node=1"]
    if _expands_node_name(bnbdoctor_bin, tmp_path):
        command = [*srun, "bnbdoctor", "--json", "-o", "reports/%N.json"]  # the recipe as docs/fleet.md prints it
    else:
        command = [*srun, "bash", "-c", 'bnbdoctor --json -o "reports/$(hostname -s).json"']
    done = _run(command, tmp_path, _env(cluster, bnbdoctor_bin))
    # 0: no error findings, 1: error findings on the node (both are a report); 2 or more: it did not run.
    assert done.returncode in (0, 1), f"{done.returncode}\n{done.stderr}\n{cluster.log('slurmd')}"
    _check_report(reports / f"{cluster.node}.json")
    assert len(list(reports.glob("*.json"))) == 1
    _fleet_summary(bnbdoctor_bin, reports, cluster)


@pytest.mark.slow
def test_sbatch_recipe_runs_as_submitted(cluster: LocalSlurm, bnbdoctor_bin: Path, tmp_path: Path) -> None:
    env = _env(cluster, bnbdoctor_bin, BNBDOCTOR_REPORTS=str(tmp_path / "fleet-reports"))
    done = _run(["sbatch", "--wait", "--parsable", "-N", "1", str(SBATCH_RECIPE)], tmp_path, env)
    job = done.stdout.strip().split(";")[0]
    outputs = {p.name: p.read_text(errors="replace") for p in tmp_path.glob("bnbdoctor-*.out")}
    assert done.returncode in (0, 1), f"{done.returncode}\n{done.stderr}\n{outputs}\n{cluster.log('slurmd')}"
    assert list(outputs) == [f"bnbdoctor-{job}.out"], outputs
    assert "1 report(s) in" in outputs[f"bnbdoctor-{job}.out"]
    _check_report(tmp_path / "fleet-reports" / f"{cluster.node}.json")


def test_slurm_that_cannot_be_installed_is_a_failure_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """No binaries and no apt-get: the helper raises (the fixture errors), it does not skip."""
    monkeypatch.setattr(slurm_support, "_which", lambda name: None)
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    with pytest.raises(SlurmUnavailable, match="no apt-get to install slurm-wlm munge"):
        slurm_support.ensure_installed()
