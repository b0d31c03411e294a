"""bnbdoctor fit against the oracle: the real from_pretrained, stopped right after the device map.

Model folders are written here (a config.json and an empty model.safetensors). One oracle
subprocess (tests/data/fit/oracle.py) runs every case through the real from_pretrained; the engine
runs the same cases, one request per model, through the request ``bnbdoctor fit`` builds. Both
must give exactly the same device map, verdict and ValueError text. End-to-end runs (the CLI as a
subprocess, and run_fit) check the report, and every remedy they claim is run through the oracle
again and must pass there too.

Everything that starts a subprocess runs once per module, side by side in threads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.facts import FitFacts
from bnbdoctor.fit import FitOptions, run_fit
from bnbdoctor.fit.core import build_request
from bnbdoctor.fit.engine import run_engine
from bnbdoctor.fit.model_input import resolve_model
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.report import Report
from bnbdoctor.serde import from_dict

pytest.importorskip("transformers")
pytest.importorskip("accelerate")
#: Every test reads the module fixtures that run the engine and the real from_pretrained (seconds).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fit"
ORACLE = DATA / "oracle.py"
GiB, MiB = 1 << 30, 1 << 20
PYTHON = sys.executable
TIMEOUT = 240


def gpus(count: int, size: int, cpu: int | None = 64 * GiB) -> dict[str, int]:
    memory = {str(i): size for i in range(count)}
    if cpu is not None:
        memory["cpu"] = cpu
    return memory


#: model -> cases. A case is the from_pretrained call: device_map, max_memory (or simulated free
#: memory, "detected", for max_memory=None), quant, llm_int8_enable_fp32_cpu_offload.
CASES: dict[str, list[dict[str, Any]]] = {
    "tiny-llama": [
        {"id": "fits", "max_memory": {"0": 64 * MiB, "cpu": 4 * GiB}},
        {"id": "raises", "max_memory": {"0": 35 * MiB, "cpu": 4 * GiB}},
        {"id": "raises-to-disk", "max_memory": {"0": 35 * MiB}},
        {"id": "all-cpu", "max_memory": {"0": 20 * MiB, "cpu": 4 * GiB}},
        {"id": "fp32-offload", "max_memory": {"0": 35 * MiB, "cpu": 4 * GiB}, "fp32_offload": True},
        {"id": "sequential", "device_map": "sequential", "max_memory": {"0": 35 * MiB, "cpu": 4 * GiB}},
        {"id": "8bit", "quant": "8bit", "max_memory": {"0": 40 * MiB, "cpu": 4 * GiB}},
        {"id": "8bit-raises", "quant": "8bit", "max_memory": {"0": 35 * MiB, "cpu": 4 * GiB}},
        {"id": "balanced-low-0", "device_map": "balanced_low_0", "max_memory": gpus(3, 24 * MiB, 4 * GiB)},
        {"id": "dict-with-cpu", "device_map": {"model": 0, "lm_head": "cpu"}, "max_memory": None},
        {"id": "dict-gpu", "device_map": {"model": 0, "lm_head": 1}, "max_memory": None},
        {"id": "detected", "detected": {"0": 40 * MiB, "cpu": 4 * GiB}},
    ],
    "llama-3-8b": [
        {"id": "8x4GiB", "max_memory": gpus(8, 4 * GiB)},
        {"id": "8x2GiB", "max_memory": gpus(8, 2 * GiB)},
        {"id": "2x4GiB", "max_memory": gpus(2, 4 * GiB)},
        {"id": "detected-5.8GiB", "detected": {"0": 5939 * MiB, "cpu": 64 * GiB}},
        {
            "id": "detected-5.8GiB-sequential",
            "device_map": "sequential",
            "detected": {"0": 5939 * MiB, "cpu": 64 * GiB},
        },
        {"id": "8bit-detected-7.8GiB", "quant": "8bit", "detected": {"0": 7987 * MiB, "cpu": 64 * GiB}},
        {"id": "balanced", "device_map": "balanced", "max_memory": gpus(3, 3 * GiB)},
    ],
    "small-moe": [
        {"id": "4x600MiB", "max_memory": gpus(4, 600 * MiB)},
        {"id": "4x350MiB", "max_memory": gpus(4, 350 * MiB)},
        {"id": "4x350MiB-sequential", "device_map": "sequential", "max_memory": gpus(4, 350 * MiB)},
        {"id": "8bit-2x1GiB", "quant": "8bit", "max_memory": gpus(2, 1 * GiB)},
    ],
    "tied-qwen2": [
        {"id": "2x300MiB", "max_memory": gpus(2, 300 * MiB)},
        {"id": "1x300MiB", "max_memory": gpus(1, 300 * MiB)},
        {"id": "3x150MiB", "max_memory": gpus(3, 150 * MiB)},
        {"id": "detected-400MiB", "detected": {"0": 400 * MiB, "cpu": 8 * GiB}},
    ],
}


def write_model(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / f"{name}.json", folder / "config.json")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    return folder


def run_oracle(cases: list[dict[str, Any]], workdir: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    path = workdir / f"oracle-{os.getpid()}-{id(cases)}.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    proc = subprocess.run(
        [PYTHON, "-B", str(ORACLE), str(path)],
        capture_output=True,
        check=False,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return answer


def engine_request(folder: Path, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The request bnbdoctor fit builds for this folder, with the cases as its scenarios."""
    model = resolve_model(LiveHost(), str(folder))
    request = build_request(FitOptions(model=str(folder)), model, None, None, "4bit", False, "nf4", "auto")
    request["remedies"] = False
    request["scenarios"] = [
        {
            "id": c["id"],
            "device_map": c.get("device_map", "auto"),
            "max_memory": c.get("max_memory"),
            "detected": c.get("detected"),
            "quant": c.get("quant", "4bit"),
            "fp32_offload": c.get("fp32_offload", False),
        }
        for c in cases
    ]
    return request


def run_cli(args: list[str]) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [PYTHON, "-m", "bnbdoctor", "fit", *args, "--json"],
        capture_output=True,
        check=False,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fit-models")
    return {name: write_model(root, name) for name in CASES}


@pytest.fixture(scope="module")
def runs(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every subprocess of this module, side by side: the oracle, one engine run per model, and the
    end-to-end runs."""
    workdir = tmp_path_factory.mktemp("fit-oracle")
    oracle_cases = [
        dict(case, id=f"{name}/{case['id']}", folder=str(models[name]))
        for name, cases in CASES.items()
        for case in cases
    ]
    host = LiveHost()
    jobs = {
        "oracle": lambda: run_oracle(oracle_cases, workdir),
        "cli-tiny-8bit-raises": lambda: run_cli(
            [str(models["tiny-llama"] / "config.json"), "--quant", "8bit", "--max-memory", "0=35MiB,cpu=4GiB"]
        ),
        "fit-8b-detected": lambda: run_fit(
            FitOptions(model=str(models["llama-3-8b"]), gpus="5939MiB", cpu_memory="64GiB")
        ),
    }
    # the engine answers the four models in one process (one import of torch and transformers)
    batch = {"batch": [engine_request(models[name], cases) for name, cases in CASES.items()]}
    jobs["engine"] = lambda: run_engine(host, PYTHON, batch, TIMEOUT)
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {key: pool.submit(job) for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def _oracle(runs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in runs["oracle"]["results"]}


def _answer(runs: dict[str, Any], name: str) -> dict[str, Any]:
    batch = runs["engine"]
    assert batch.failure is None, batch.failure
    answer: dict[str, Any] = batch.data["batch"][list(CASES).index(name)]
    assert answer["ok"], answer.get("error") or answer.get("traceback")
    return answer


def _engine(runs: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in _answer(runs, name)["results"]}


ALL_CASES = [(name, case["id"]) for name, cases in CASES.items() for case in cases]


@pytest.mark.parametrize(("model", "case"), ALL_CASES, ids=[f"{m}/{c}" for m, c in ALL_CASES])
def test_engine_matches_from_pretrained(runs: dict[str, Any], model: str, case: str) -> None:
    expected = _oracle(runs)[f"{model}/{case}"]
    got = _engine(runs, model)[case]
    assert got["verdict"] == expected["verdict"]
    if "device_map" in expected:
        assert got["device_map"] == expected["device_map"]
    else:  # a dict device_map with cpu entries is refused before any map is computed
        assert got["raise_site"] == "get_hf_quantizer"
    assert got.get("error") == expected.get("error")


def test_cases_cover_every_verdict(runs: dict[str, Any]) -> None:
    verdicts = {r["verdict"] for r in runs["oracle"]["results"]}
    assert {"fits", "raises", "all_cpu", "fp32_offload"} <= verdicts
    assert _oracle(runs)["tiny-llama/raises-to-disk"]["device_map"]["lm_head"] == "disk"
    assert _engine(runs, "tiny-llama")["dict-with-cpu"]["raise_site"] == "get_hf_quantizer"


def test_versions_are_the_installed_ones(runs: dict[str, Any]) -> None:
    import transformers

    answer = _answer(runs, "tiny-llama")
    assert answer["versions"]["transformers"] == transformers.__version__ == runs["oracle"]["transformers"]
    assert answer["bnb_mode"] == "real"


def test_engine_details_explain_the_skipped_gpu(runs: dict[str, Any]) -> None:
    # Llama-3-8B 4-bit on 8x4GiB (transformers >= 5.18): GPU 0 is left empty because
    # embed_tokens (1002 MiB) is larger than its balanced cap minus the lm_head reservation.
    detail = _engine(runs, "llama-3-8b")["8x4GiB"]
    if detail["device_map"].get("model.embed_tokens") != 1:
        pytest.skip("this transformers packs Llama-3-8B differently")
    gpu0 = detail["devices"][0]
    assert gpu0["device"] == "0" and gpu0["used_bytes"] == 0
    assert gpu0["skipped_at"] == "model.embed_tokens"
    assert gpu0["skipped_atom_bytes"] > gpu0["remaining_bytes"]
    assert gpu0["remaining_bytes"] == gpu0["budget_bytes"] - gpu0["reserved_bytes"]
    assert gpu0["budget_bytes"] == int(gpu0["balanced_cap_bytes"] * 0.9)
    inventory = detail["inventory"]
    kinds = inventory["unquantized_by_kind"]
    assert kinds["embedding"] == kinds["lm_head"] == 128256 * 4096 * 2


def test_fused_experts_stay_unquantized(runs: dict[str, Any]) -> None:
    inventory = _engine(runs, "small-moe")["4x600MiB"]["inventory"]
    experts = inventory["unquantized_by_kind"].get("experts", 0)
    assert experts > 0.5 * inventory["model_bytes"]
    assert inventory["largest_unquantized"][0]["kind"] in ("experts", "embedding", "lm_head")


def test_tied_embeddings_counted_once(runs: dict[str, Any]) -> None:
    detail = _engine(runs, "tied-qwen2")["2x300MiB"]
    names = [t["name"] for t in detail["inventory"]["largest_unquantized"]]
    assert "model.embed_tokens.weight" in names and "lm_head.weight" not in names
    assert detail["device_map"].get("lm_head") == detail["device_map"].get("model.embed_tokens")


# -- end to end ---------------------------------------------------------------------------------


def test_cli_json_report_for_a_raising_load(runs: dict[str, Any]) -> None:
    code, data, stderr = runs["cli-tiny-8bit-raises"]
    assert code == 1, stderr
    report = from_dict(Report, data)
    fit = report.facts.fit
    assert fit is not None and fit.engine == "transformers" and fit.quant == "8bit"
    expected = _oracle(runs)["tiny-llama/8bit-raises"]
    assert fit.verdict == "raises" and fit.placement == expected["device_map"]
    assert fit.error_text == expected["error"]
    assert fit.raise_site == "_get_device_map"
    assert [f.rule_id for f in report.findings if f.severity.value == "error"] == ["BNB401"]
    gpu0 = fit.devices[0]
    assert gpu0.given_bytes == 35 * MiB and gpu0.budget_bytes == int(35 * MiB * 0.9)
    assert gpu0.skipped_at and (gpu0.skipped_atom_bytes or 0) > (gpu0.remaining_bytes or 0)
    four = [r for r in fit.remedies if r.kind == "quant_4bit"]
    assert four and four[0].quant == "4bit"


def test_cli_json_validates_against_the_schema(runs: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text())
    jsonschema.validate(runs["cli-tiny-8bit-raises"][1], schema)


def test_fit_single_gpu_detected_is_underpacking(runs: dict[str, Any]) -> None:
    report = runs["fit-8b-detected"]
    fit = report.facts.fit
    assert fit.verdict == _oracle(runs)["llama-3-8b/detected-5.8GiB"]["verdict"] == "raises"
    assert fit.memory_source == "--gpus" and fit.free_memory == {"0": 5939 * MiB, "cpu": 64 * GiB}
    assert "BNB402" in [f.rule_id for f in report.findings]
    kinds = {r.kind for r in fit.remedies if r.status == "passes"}
    assert {"sequential", "max_memory", "explicit_map"} <= kinds
    assert report.exit_code() == 1


def _claimed(runs: dict[str, Any]) -> list[tuple[str, FitFacts, Any]]:
    out: list[tuple[str, FitFacts, Any]] = []
    _code, data, _ = runs["cli-tiny-8bit-raises"]
    reports = {"cli-tiny-8bit-raises": from_dict(Report, data), "fit-8b-detected": runs["fit-8b-detected"]}
    for key, report in reports.items():
        fit = report.facts.fit
        out.extend((key, fit, r) for r in fit.remedies if r.status == "passes" and r.kind != "upgrade_transformers")
    return out


@pytest.fixture(scope="module")
def rechecked(runs: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every remedy the end-to-end runs claim, run again through the real from_pretrained."""
    cases: list[dict[str, Any]] = []
    for key, fit, remedy in _claimed(runs):
        folder = fit.model_dir
        cases.append(
            {
                "id": f"{key}/{remedy.kind}/{len(cases)}",
                "folder": folder,
                "device_map": remedy.device_map_arg or remedy.device_map,
                "max_memory": remedy.max_memory,
                "detected": remedy.free_memory,
                "quant": remedy.quant or fit.quant,
                "fp32_offload": remedy.fp32_offload,
            }
        )
    assert len(cases) >= 6, cases
    return {"cases": cases, "oracle": run_oracle(cases, tmp_path_factory.mktemp("fit-recheck"))}


def test_claimed_remedies_pass_in_from_pretrained(rechecked: dict[str, Any]) -> None:
    claimed = {c["id"]: c for c in rechecked["cases"]}
    for result in rechecked["oracle"]["results"]:
        kind = result["id"].split("/")[1]
        want = "fp32_offload" if kind == "fp32_offload" else "fits"
        assert result["verdict"] == want, (claimed[result["id"]], result)


def test_claimed_remedies_carry_code(runs: dict[str, Any]) -> None:
    for _, _fit, remedy in _claimed(runs):
        if remedy.kind in ("sequential", "max_memory", "explicit_map", "quant_4bit", "fp32_offload"):
            assert "from_pretrained(" in remedy.code, remedy
        if remedy.kind == "explicit_map":
            namespace: dict[str, Any] = {}
            exec(remedy.code.split("\nmodel =")[0], namespace)  # noqa: S102 - our own generated literal
            assert namespace["device_map"] == remedy.device_map


def test_text_report(runs: dict[str, Any]) -> None:
    from bnbdoctor.render.fit_text import render_fit_text

    text = render_fit_text(runs["fit-8b-detected"], width=120)
    assert "raises ValueError" in text and "Some modules are dispatched on the CPU or the disk" in text
    assert "model.layers.0-25" in text and "Remedies that pass" in text
    assert 'device_map="sequential"' in text and "BNB402" in text


def test_markdown_report(runs: dict[str, Any]) -> None:
    from bnbdoctor.render import OutputFormat, ReportKind, render

    text = render(runs["fit-8b-detected"], OutputFormat.MARKDOWN, ReportKind.FIT, color=False)
    assert text.startswith("## bnbdoctor fit: ")
    assert "| GPU 0 |" in text and "```python" in text and "Some modules are dispatched" in text
