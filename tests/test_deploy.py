"""The fleet recipes in ``deploy/`` parse, have the structure ``docs/fleet.md`` promises, and run.

Issue 16, part 2. The Kubernetes manifest is checked as data (one pod per GPU node, pinned images, nothing
privileged); the scripts that a cluster calls — the node-problem-detector plugin, the LBNL NHC check, the
Ray driver — are run here against a stand-in ``bnbdoctor`` that diagnoses a recorded machine, so the exit
codes and messages the engines act on are the ones tested. The Slurm recipe runs on a real Slurm in
``tests/test_slurm.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
JOB = DEPLOY / "kubernetes" / "bnbdoctor-job.yaml"
NPD = DEPLOY / "kubernetes" / "node-problem-detector"
NHC = DEPLOY / "nhc" / "bnbdoctor.nhc"
RAY = DEPLOY / "ray" / "bnbdoctor_ray.py"
SBATCH = DEPLOY / "slurm" / "bnbdoctor-fleet.sbatch"
BROKEN, HEALTHY = "centos7-cxxabi", "a100-healthy"  # recorded machines: BNB306 error / no error


def _documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(DEPLOY.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                yield path, document


def _walk(node: object) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _pod_specs(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node["spec"] for node in _walk(document) if isinstance(node.get("spec"), dict) and "containers" in node["spec"]
    ]


def test_every_manifest_parses_and_names_its_kind() -> None:
    documents = list(_documents())
    assert documents, "no manifests under deploy/"
    for path, document in documents:
        assert {"apiVersion", "kind", "metadata"} <= set(document), path


def test_no_pod_is_privileged_or_reaches_into_the_host() -> None:
    for path, document in _documents():
        for spec in _pod_specs(document):
            for key in ("hostPID", "hostIPC", "hostNetwork"):
                assert not spec.get(key), f"{path}: {key}"
            assert not [v for v in spec.get("volumes", []) if "hostPath" in v], f"{path}: hostPath volume"
            assert spec.get("securityContext", {}).get("runAsNonRoot") is True, path
            for container in spec["containers"] + spec.get("initContainers", []):
                context = container.get("securityContext", {})
                assert context.get("privileged") is not True, f"{path}: {container['name']} is privileged"
                assert context.get("allowPrivilegeEscalation") is False, path
                assert context.get("capabilities", {}).get("drop") == ["ALL"], path
                assert not context.get("capabilities", {}).get("add"), path


def test_every_image_is_pinned() -> None:
    for path, document in _documents():
        for spec in _pod_specs(document):
            for container in spec["containers"] + spec.get("initContainers", []):
                image = container["image"]
                name, _, tag = image.rpartition(":") if "@" not in image else (image, "", "digest")
                assert name and tag and tag != "latest" and "/" not in tag, f"{path}: image {image!r} is not pinned"


def test_the_job_runs_one_pod_on_each_gpu_node() -> None:
    (job,) = [d for path, d in _documents() if path == JOB]
    assert job["kind"] == "Job" and job["apiVersion"] == "batch/v1"
    spec = job["spec"]
    assert spec["completions"] == spec["parallelism"]
    pod = spec["template"]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    script = container["args"][0]
    assert "--json" in script and "--python" in script
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/doctor", "/tmp"} <= mounts  # the root filesystem is read-only; venv and HOME live here


def test_the_job_script_is_valid_shell() -> None:
    (job,) = [d for path, d in _documents() if path == JOB]
    script = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    done = subprocess.run(["sh", "-n"], input=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# -- the scripts, run against a stand-in bnbdoctor ----------------------------------------------------------

Doctor = Callable[[str], Path]


@pytest.fixture
def doctor(tmp_path: Path) -> Doctor:
    """``doctor("fixture NAME")`` / ``doctor("exit 2")`` / ``doctor("hang")``: a bnbdoctor command."""

    def make(behaviour: str) -> Path:
        path = tmp_path / f"bnbdoctor-{behaviour.replace(' ', '-')}"
        if behaviour.startswith("fixture "):
            body = f'PYTHONPATH="{ROOT}" exec "{sys.executable}" -m bnbdoctor --fixture {behaviour.split()[1]} "$@"'
        elif behaviour == "hang":
            body = "exec sleep 30"
        else:
            body = behaviour
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
        return path

    return make


def _npd(doctor: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "BNBDOCTOR": str(doctor), "BNBDOCTOR_REPORTS": str(tmp_path / "npd")}
    return subprocess.run(
        ["bash", str(NPD / "bnbdoctor-check.sh")], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_npd_monitor_config_points_at_its_plugin() -> None:
    config = json.loads((NPD / "bnbdoctor-monitor.json").read_text())
    assert config["plugin"] == "custom"
    (rule,) = config["rules"]
    assert rule["type"] == "permanent"
    assert rule["condition"] in {c["type"] for c in config["conditions"]}
    assert (NPD / Path(rule["path"]).name).is_file()

    def seconds(text: str) -> int:
        return int(text.rstrip("s"))

    doctor_limit = int(re.search(r"timeout -k (\d+) (\d+)", (NPD / "bnbdoctor-check.sh").read_text())[2])  # type: ignore[index]
    assert doctor_limit + 5 <= seconds(rule["timeout"]) <= seconds(config["pluginConfig"]["timeout"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("behaviour", "code", "message"),
    [
        (f"fixture {HEALTHY}", 0, "bnbdoctor found no error"),
        (f"fixture {BROKEN}", 1, "bnbdoctor: BNB306 (see "),
        ("exit 2", 2, "bnbdoctor failed (exit 2)"),
    ],
)
def test_npd_plugin_speaks_npd_exit_codes(
    doctor: Doctor, tmp_path: Path, behaviour: str, code: int, message: str
) -> None:
    done = _npd(doctor(behaviour), tmp_path)
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stdout.startswith(message) and done.stdout.count("\n") == 1, done.stdout


def _nhc(doctor: Path, tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """Source the check as NHC does, with NHC's ``die``/``log`` stubbed to print what NHC would record."""
    script = (
        f'die() {{ echo "DIE $1 $2"; }}; log() {{ echo "LOG $*"; }}; . "{NHC}"; '
        f'check_bnbdoctor -o "{tmp_path / "nhc"}" {" ".join(options)}; echo "RC $?"'
    )
    env = {"PATH": "/usr/bin:/bin", "BNBDOCTOR": str(doctor), "HOSTNAME": "gpu017.cluster.example"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.slow
def test_nhc_check_drains_a_broken_node_with_the_rule_ids(doctor: Doctor, tmp_path: Path) -> None:
    done = _nhc(doctor(f"fixture {BROKEN}"), tmp_path)
    report = tmp_path / "nhc" / "gpu017.json"
    assert done.stdout.splitlines() == [f"DIE 1 bnbdoctor: BNB306 (see {report})", "RC 1"], done.stdout
    assert json.loads(report.read_text())["summary"]["errors"] == 1
    strict = _nhc(doctor(f"fixture {BROKEN}"), tmp_path, "-s")
    assert strict.stdout.startswith("DIE 1 bnbdoctor: BNB306,BNB205 (see "), strict.stdout


@pytest.mark.slow
def test_nhc_check_passes_a_healthy_node(doctor: Doctor, tmp_path: Path) -> None:
    done = _nhc(doctor(f"fixture {HEALTHY}"), tmp_path)
    assert done.stdout.splitlines() == ["RC 0"], done.stdout
    assert (tmp_path / "nhc" / "gpu017.json").is_file()


@pytest.mark.parametrize(
    ("behaviour", "logged"),
    [
        ("exit 2", "bnbdoctor failed (exit 2); not checked"),
        ("hang", "no answer within 1s; not checked"),
    ],
)
def test_nhc_check_never_drains_for_its_own_failure(
    doctor: Doctor, tmp_path: Path, behaviour: str, logged: str
) -> None:
    done = _nhc(doctor(behaviour), tmp_path, "-t", "1")
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and logged in lines[0] and lines[0].startswith("LOG ") and lines[1] == "RC 0", lines


def test_the_nhc_limit_leaves_room_under_slurms_60_seconds() -> None:
    default = re.search(r"local limit=(\d+)", NHC.read_text())
    assert default and int(default[1]) + 5 < 60  # + the kill grace of `timeout -k 5`


# -- Ray ----------------------------------------------------------------------------------------------------


class _FakeRemote:
    """Just enough of Ray's remote function for the driver: ``options(...).remote(...)`` runs it here."""

    def __init__(self, function: Callable[..., Any], calls: list[dict[str, Any]]) -> None:
        self.function, self.calls = function, calls

    def options(self, **options: Any) -> _FakeRemote:
        self.calls.append(options)
        return self

    def remote(self, *args: Any) -> Any:
        return self.function(*args)


def _fake_ray(nodes: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, types.ModuleType]:
    ray = types.ModuleType("ray")
    strategies = types.ModuleType("ray.util.scheduling_strategies")

    def remote(**resources: Any) -> Callable[[Callable[..., Any]], _FakeRemote]:
        assert resources == {"num_cpus": 0}
        return lambda function: _FakeRemote(function, calls)

    ray.remote = remote  # type: ignore[attr-defined]
    ray.init = lambda address: None  # type: ignore[attr-defined]
    ray.nodes = lambda: nodes  # type: ignore[attr-defined]
    ray.get = list  # type: ignore[attr-defined]
    strategies.NodeAffinitySchedulingStrategy = lambda node_id, soft: ("affinity", node_id, soft)  # type: ignore[attr-defined]
    util = types.ModuleType("ray.util")
    return {"ray": ray, "ray.util": util, "ray.util.scheduling_strategies": strategies}


@pytest.mark.slow
def test_ray_driver_pins_one_task_to_each_alive_node(
    doctor: Doctor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    nodes = [{"NodeID": "a1", "Alive": True}, {"NodeID": "b2", "Alive": False}]
    for name, module in _fake_ray(nodes, calls).items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    spec = importlib.util.spec_from_file_location("bnbdoctor_ray", RAY)
    assert spec and spec.loader
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    code = driver.main(["--out", str(tmp_path / "reports"), "--bnbdoctor", str(doctor(f"fixture {BROKEN}"))])
    assert code == 0
    assert calls == [{"scheduling_strategy": ("affinity", "a1", False)}]
    (report,) = (tmp_path / "reports").glob("*.json")
    assert json.loads(report.read_text())["findings"][0]["rule_id"] == "BNB306"


def test_sbatch_recipe_is_valid_bash_with_one_task_per_node() -> None:
    done = subprocess.run(["bash", "-n", str(SBATCH)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --ntasks-per-node=1" in SBATCH.read_text()


def test_every_deploy_file_the_fleet_page_names_exists() -> None:
    page = (ROOT / "docs" / "fleet.md").read_text()
    linked = re.findall(r"\]\(\.\./(deploy/[^)]+)\)", page)
    assert len(linked) >= 5
    for target in linked:
        assert (ROOT / target).exists(), target
    assert not [
        f
        for f in DEPLOY.rglob("*")
        if f.is_file()
        and f.relative_to(ROOT).as_posix() not in page
        and f.parent.relative_to(ROOT).as_posix() + "/" not in page
    ], "a deploy/ file docs/fleet.md never names"
