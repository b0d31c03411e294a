"""bnbdoctor fit's inputs: memory strings, model folders, bad input (one line, exit 2), and the fallbacks.

Bad input that bnbdoctor can see without transformers is refused before any subprocess starts.
An unknown model_type and a model that needs its own code are decided by the user's transformers,
so those cases (and the two fallbacks: a bitsandbytes that does not import, a transformers outside
the supported range) run the CLI as subprocesses, side by side, once per module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.cli import main as cli_main
from bnbdoctor.fit.model_input import resolve_model
from bnbdoctor.fit.options import (
    FitInputError,
    parse_gpus,
    parse_max_memory,
    parse_size,
)
from bnbdoctor.fit.snippets import device_map_python, memory_literal
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.render.fit_lines import collapse_runs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fit"
GiB, MiB = 1 << 30, 1 << 20
TINY = json.loads((DATA / "tiny-llama.json").read_text())


def write(folder: Path, config: dict[str, Any] | str, weights: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "config.json").write_text(text, encoding="utf-8")
    if weights:
        (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    return folder


# -- memory strings -----------------------------------------------------------------------------

SIZES = ["24GiB", "24GB", "512MiB", "1.5GiB", "80GB", "10Gb", "100KiB", "7MB", "0.5GiB", "24gib"]


@pytest.mark.parametrize("text", SIZES)
def test_sizes_parse_like_accelerate(text: str) -> None:
    from accelerate.utils import convert_file_size_to_int

    assert parse_size(text) == convert_file_size_to_int(text)


def test_plain_numbers_are_bytes() -> None:
    assert parse_size("123456") == 123456 and parse_size(77) == 77


@pytest.mark.parametrize("text", ["lots", "24", "24 GiBs", "-1GiB", "GiB", "1e3GiB", ""])
def test_bad_sizes(text: str) -> None:
    if text == "24":
        assert parse_size(text) == 24
        return
    with pytest.raises(FitInputError):
        parse_size(text)


def test_max_memory_spec() -> None:
    assert parse_max_memory("0=24GiB, 1=24GiB,cpu=64GiB") == {"0": 24 * GiB, "1": 24 * GiB, "cpu": 64 * GiB}
    assert parse_max_memory("cuda:0=1GiB,disk=2GiB") == {"0": GiB, "disk": 2 * GiB}
    for bad in ["0=24GiB,0=1GiB", "gpu0=24GiB", "0=", "24GiB", "mps=1GiB,", "cpu=many"]:
        with pytest.raises(FitInputError):
            parse_max_memory(bad)


def test_gpus_spec() -> None:
    assert parse_gpus("24GiB,24GiB") == [24 * GiB] * 2
    assert parse_gpus("8x80GB") == [80 * 10**9] * 8
    with pytest.raises(FitInputError):
        parse_gpus("0x24GiB")


def test_device_map_python_is_exact() -> None:
    device_map: dict[str, int | str] = {
        "model.embed_tokens": 0,
        **{f"model.layers.{i}": 0 for i in range(12)},
        **{f"model.layers.{i}": 1 for i in range(12, 32)},
        "model.layers.32": "cpu",
        "model.norm": "cpu",
        "lm_head": "disk",
    }
    namespace: dict[str, Any] = {}
    code = device_map_python(device_map)
    exec(code, namespace)  # noqa: S102 - our own generated literal
    assert namespace["device_map"] == device_map and list(namespace["device_map"]) == list(device_map)
    assert len(code.splitlines()) == 8
    assert [g[2:] for g in collapse_runs(device_map)][1:3] == [(0, 11), (12, 31)]


def test_memory_literals_round_trip() -> None:
    for size in (24 * GiB, 5939 * MiB, 25393692672 + 1):
        literal = memory_literal(size)
        assert parse_size(literal.strip('"')) == size


# -- model folders ------------------------------------------------------------------------------


def test_hugging_face_cache_entry(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--meta-llama--Tiny"
    write(repo / "snapshots" / "abc123", TINY)
    write(repo / "snapshots" / "old456", TINY)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123\n")
    for given in (repo, tmp_path / "hub"):
        model = resolve_model(LiveHost(), str(given))
        assert model.model_dir == str(repo / "snapshots" / "abc123") and model.from_cache == str(repo)
        assert model.checkpoint_files == [str(repo / "snapshots" / "abc123" / "model.safetensors")]


def test_config_file_and_sharded_index(tmp_path: Path) -> None:
    folder = write(tmp_path / "m", TINY, weights=False)
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (folder / shard).write_bytes(b"")
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors"}})
    )
    model = resolve_model(LiveHost(), str(folder / "config.json"))
    assert model.model_dir == str(folder) and [Path(f).name for f in model.checkpoint_files] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]


def test_pre_quantized_bnb_checkpoint(tmp_path: Path) -> None:
    config = dict(
        TINY,
        quantization_config={
            "quant_method": "bitsandbytes",
            "load_in_4bit": True,
            "bnb_4bit_quant_type": "nf4",
            "bnb_4bit_use_double_quant": True,
        },
    )
    model = resolve_model(LiveHost(), str(write(tmp_path / "q", config)))
    assert model.pre_quantized == "4bit" and model.pre_double_quant


# -- bad input: one line on stderr, exit 2 --------------------------------------------------------


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], contains: str) -> None:
    code = cli_main(["fit", *argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnbdoctor: error: "), err
    assert contains in lines[0], lines[0]


def test_missing_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _one_line_exit_2(capsys, [str(tmp_path / "nope"), "--gpus", "24GiB"], "no such file or folder")


def test_folder_without_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _one_line_exit_2(capsys, [str(tmp_path), "--gpus", "24GiB"], "no config.json")


def test_config_without_architectures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = {k: v for k, v in TINY.items() if k != "architectures"}
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", config)), "--gpus", "24GiB"], "architectures")


def test_config_not_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", "{not json")), "--gpus", "24GiB"], "not valid JSON")


def test_other_quantization_method(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = dict(TINY, quantization_config={"quant_method": "gptq", "bits": 4})
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", config)), "--gpus", "24GiB"], "gptq")


def test_remote_code_without_model_type(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = {"architectures": ["X"], "auto_map": {"AutoModelForCausalLM": "modeling_x.X"}}
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", config)), "--gpus", "24GiB"], "--trust-remote-code")


@pytest.mark.parametrize(
    ("args", "contains"),
    [
        (["--max-memory", "0=24GB,1=lots"], "'lots' is not a memory size"),
        (["--max-memory", "gpu0=24GiB"], "unknown device"),
        (["--max-memory", "0:24GiB,0=1GiB"], "given twice"),
        (["--gpus", "24 gigs"], "not a memory size"),
        (["--gpus", "24GiB", "--cpu-memory", "a lot"], "--cpu-memory"),
        (["--gpus", "24GiB", "--dtype", "int3"], "--dtype"),
        (["--gpus", "24GiB", "--device-map", "everywhere"], "--device-map"),
    ],
)
def test_malformed_options(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], contains: str) -> None:
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", TINY)), *args], contains)


def test_no_gpu_and_no_simulation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from bnbdoctor.probes.base import ProbeContext
    from bnbdoctor.probes.gpu import gather_gpu

    if gather_gpu(ProbeContext(LiveHost())).visible:
        pytest.skip("this machine has a GPU")
    _one_line_exit_2(capsys, [str(write(tmp_path / "m", TINY))], "--gpus")


def test_missing_python(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _one_line_exit_2(
        capsys, [str(write(tmp_path / "m", TINY)), "--gpus", "1GiB", "--python", str(tmp_path / "python9")], "--python"
    )


# -- decided by the user's transformers, and the fallbacks ----------------------------------------

_CUSTOM_CONFIG = """from transformers import LlamaConfig


class MyConfig(LlamaConfig):
    model_type = "my_custom"
"""
_CUSTOM_MODEL = """from transformers import LlamaForCausalLM

from .configuration_my import MyConfig


class MyModelForCausalLM(LlamaForCausalLM):
    config_class = MyConfig
"""


def _cli(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "fit", *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, str]]:
    root = tmp_path_factory.mktemp("fit-inputs")
    unknown = write(root / "unknown", dict(TINY, model_type="not_a_model_type", architectures=["FooForCausalLM"]))
    custom = write(
        root / "custom",
        dict(
            TINY,
            model_type="my_custom",
            architectures=["MyModelForCausalLM"],
            auto_map={
                "AutoConfig": "configuration_my.MyConfig",
                "AutoModelForCausalLM": "modeling_my.MyModelForCausalLM",
            },
        ),
    )
    (custom / "configuration_my.py").write_text(_CUSTOM_CONFIG)
    (custom / "modeling_my.py").write_text(_CUSTOM_MODEL)
    tiny = write(root / "tiny", TINY)
    old = root / "old-transformers" / "transformers"  # a transformers outside the supported range
    old.mkdir(parents=True)
    (old / "__init__.py").write_text('__version__ = "4.40.0"\n')
    broken = root / "broken-bnb" / "bitsandbytes"  # a bitsandbytes that fails on import
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise RuntimeError("CUDA Setup failed despite GPU being available")\n')
    modules = {"HF_MODULES_CACHE": str(root / "hf-modules")}
    memory = ["--max-memory", "0=35MiB,cpu=4GiB"]
    jobs = {
        "unknown": lambda: _cli([str(unknown), *memory]),
        "custom-refused": lambda: _cli([str(custom), *memory], modules),
        "custom-trusted": lambda: _cli(
            [str(custom), *memory, "--trust-remote-code", "--json", "--no-remedies"], modules
        ),
        "approximate": lambda: _cli([str(tiny), *memory, "--json"], {"PYTHONPATH": str(old.parent)}),
        "standin": lambda: _cli([str(tiny), *memory, "--json", "--no-remedies"], {"PYTHONPATH": str(broken.parent)}),
    }
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {key: pool.submit(job) for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def _one_line(result: tuple[int, str, str], contains: str) -> None:
    code, out, err = result
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnbdoctor: error: ") and contains in lines[0], err


@pytest.mark.slow  # cli_runs: bnbdoctor fit runs the engine for each case
def test_unknown_model_type(cli_runs: dict[str, tuple[int, str, str]]) -> None:
    _one_line(cli_runs["unknown"], "does not know model_type 'not_a_model_type'")


@pytest.mark.slow  # cli_runs: bnbdoctor fit runs the engine for each case
def test_remote_code_refused_without_flag(cli_runs: dict[str, tuple[int, str, str]]) -> None:
    _one_line(cli_runs["custom-refused"], "--trust-remote-code")


@pytest.mark.slow  # cli_runs: bnbdoctor fit runs the engine for each case
def test_remote_code_runs_with_flag(cli_runs: dict[str, tuple[int, str, str]]) -> None:
    code, out, err = cli_runs["custom-trusted"]
    assert code == 1, err
    fit = json.loads(out)["facts"]["fit"]
    assert fit["model_class"] == "MyModelForCausalLM" and fit["verdict"] == "raises"


@pytest.mark.slow  # cli_runs: bnbdoctor fit runs the engine for each case
def test_transformers_out_of_range_falls_back_to_approximate(cli_runs: dict[str, tuple[int, str, str]]) -> None:
    code, out, _err = cli_runs["approximate"]
    report = json.loads(out)
    fit = report["facts"]["fit"]
    assert fit["engine"] == "approximate" and "4.40.0" in fit["engine_note"]
    assert fit["verdict"] == "likely_raises" and fit["placement"] == {}
    # config sizes by name: the same embedding and lm_head bytes the engine counts
    assert fit["unquantized_by_kind"]["embedding"] == fit["unquantized_by_kind"]["lm_head"] == 32000 * 256 * 2
    ids = [f["rule_id"] for f in report["findings"]]
    assert "BNB408" in ids and "BNB401" in ids
    assert next(f for f in report["findings"] if f["rule_id"] == "BNB401")["severity"] == "warning"
    assert code == 0  # an estimate is a warning, not an error


@pytest.mark.slow  # cli_runs: bnbdoctor fit runs the engine for each case
def test_broken_bitsandbytes_uses_the_standin(cli_runs: dict[str, tuple[int, str, str]]) -> None:
    code, out, _err = cli_runs["standin"]
    fit = json.loads(out)["facts"]["fit"]
    assert fit["engine"] == "transformers+standin" and "CUDA Setup failed" in fit["engine_note"]
    assert code == 1 and fit["verdict"] == "raises"
    # the same map as real bitsandbytes computes (tests/test_fit.py: tiny-llama/raises)
    assert fit["placement"] == {
        "model.embed_tokens": 0,
        "model.norm": "cpu",
        "model.rotary_emb": "cpu",
        "lm_head": "cpu",
        "model.layers": "cpu",
    }


def test_approximate_sizes_from_safetensors_headers(tmp_path: Path) -> None:
    import struct

    from bnbdoctor.fit.approx import estimate

    def bf16(*shape: int) -> dict[str, Any]:
        return {"dtype": "BF16", "shape": list(shape), "data_offsets": [0, 0]}

    header = {
        "model.embed_tokens.weight": bf16(1000, 64),
        "model.layers.0.mlp.experts.3.up_proj.weight": bf16(128, 64),
        "model.layers.0.self_attn.q_proj.weight": bf16(64, 64),
        "model.norm.weight": bf16(64),
        "__metadata__": {"format": "pt"},
    }
    blob = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(blob)) + blob)
    sizes = estimate(LiveHost(), {}, [str(path)], "4bit", None, False)
    assert sizes is not None and sizes["source"] == "safetensors headers"
    assert sizes["quantized_bytes"] == 64 * 64 // 2
    assert sizes["unquantized_by_kind"] == {"embedding": 128000, "experts": 128 * 64 * 2, "norm": 128}
