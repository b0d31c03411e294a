"""``bnbdoctor fit org/name``: a model id read offline from the Hugging Face cache, and explain's ``fit`` commands.

Seen (issue 13, item 4): ``bnbdoctor fit meta-llama/Llama-3.1-8B --gpus 24GiB`` said "no such file or folder"
with the model in the cache, and ``explain`` printed such a command (or one with a ``MODEL`` placeholder).
The cache here is built in tmp the way huggingface_hub lays it out: ``models--org--name/blobs/<hash>``,
``snapshots/<sha>/config.json`` linking to the blob, ``refs/main`` naming the snapshot. No network.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.cli import main as cli_main
from bnbdoctor.explain import explain_text
from bnbdoctor.fit import core
from bnbdoctor.fit.cli import build_parser
from bnbdoctor.fit.model_input import resolve_model
from bnbdoctor.fit.options import FitInputError
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.modelfiles.hub_cache import hub_cache, is_repo_id

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fit"
LOGS = sorted((ROOT / "tests" / "data").glob("*_logs/*.txt"))
TINY = json.loads((DATA / "tiny-llama.json").read_text())
LLAMA_8B = json.loads((DATA / "llama-3-8b.json").read_text())
GiB = 1 << 30
CACHE_VARS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


def cache_model(
    hub: Path, repo_id: str, config: dict[str, Any] | None, sha: str = "0123abcd", ref: bool = True
) -> Path:
    """A cache entry as huggingface_hub writes it; ``config=None`` leaves config.json undownloaded."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / sha
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    if config is not None:
        blob = repo / "blobs" / f"cfg{sha}"
        blob.write_text(json.dumps(config), encoding="utf-8")
        (snapshot / "config.json").symlink_to(Path("..", "..", "blobs", blob.name))
    (snapshot / "generation_config.json").write_text("{}")
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(sha)  # huggingface_hub writes it without a newline
    return repo


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache named by HF_HUB_CACHE, with no other cache variable set."""
    for name in CACHE_VARS:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "hub"
    folder.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(folder))
    return folder


# -- where the cache is -------------------------------------------------------------------------


def test_the_cache_folder_is_chosen_as_huggingface_hub_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CACHE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hub_cache(LiveHost()) == str(tmp_path / "home" / ".cache" / "huggingface" / "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache(LiveHost()) == str(tmp_path / "xdg" / "huggingface" / "hub")
    monkeypatch.setenv("HF_HOME", "~/hf")
    assert hub_cache(LiveHost()) == str(tmp_path / "home" / "hf" / "hub")
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "legacy"))
    assert hub_cache(LiveHost()) == str(tmp_path / "legacy")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert hub_cache(LiveHost()) == str(tmp_path / "hub")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("meta-llama/Llama-3.1-8B", True),
        ("Qwen/Qwen2.5-0.5B-Instruct", True),
        ("./llama", False),
        ("../x/y", False),
        ("models/llama/config.json", False),
        ("/abs/path", False),
        ("llama", False),
    ],
)
def test_what_looks_like_a_model_id(text: str, expected: bool) -> None:
    assert is_repo_id(text) is expected


# -- resolving an id --------------------------------------------------------------------------------


def test_a_cached_model_id_resolves_to_its_snapshot(hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no local folder named meta-llama/
    repo = cache_model(hub, "meta-llama/Llama-3.1-8B", LLAMA_8B)
    model = resolve_model(LiveHost(), "meta-llama/Llama-3.1-8B")
    assert model.model_dir == str(repo / "snapshots" / "0123abcd") and model.from_cache == str(repo)
    assert model.architecture == "LlamaForCausalLM" and model.config["hidden_size"] == 4096


def test_refs_main_picks_the_snapshot(hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    cache_model(hub, "org/tiny", dict(TINY, hidden_size=128), sha="old0", ref=False)
    repo = cache_model(hub, "org/tiny", TINY, sha="new1")
    model = resolve_model(LiveHost(), "org/tiny")
    assert model.model_dir == str(repo / "snapshots" / "new1") and model.config["hidden_size"] == TINY["hidden_size"]


def test_a_local_folder_wins_over_the_cache(hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache_model(hub, "org/tiny", TINY)
    local = tmp_path / "org" / "tiny"
    local.mkdir(parents=True)
    (local / "config.json").write_text(json.dumps(TINY))
    monkeypatch.chdir(tmp_path)
    assert resolve_model(LiveHost(), "org/tiny").model_dir == "org/tiny"  # from_pretrained looks locally first


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = cli_main(["fit", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnbdoctor: error: "), err
    return lines[0]


def test_an_id_not_in_the_cache_says_how_to_fetch_only_its_config(
    hub: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line_exit_2(capsys, ["meta-llama/Llama-3.1-8B", "--gpus", "24GiB"])
    assert "no such file" not in line and str(hub) in line
    assert line.endswith("hf download meta-llama/Llama-3.1-8B config.json"), line


def test_a_cached_id_without_its_config_says_how_to_fetch_it(
    hub: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    cache_model(hub, "org/weights-only", None)
    line = _one_line_exit_2(capsys, ["org/weights-only", "--gpus", "24GiB"])
    assert "hf download org/weights-only config.json" in line, line


def test_a_path_that_is_not_an_id_still_says_no_such_file(hub: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no such file or folder" in _one_line_exit_2(capsys, ["./nowhere/model", "--gpus", "24GiB"])
    with pytest.raises(FitInputError, match="no such file or folder"):
        resolve_model(LiveHost(), "/no/such/place")


# -- explain's fit commands run as printed -----------------------------------------------------------


def fit_commands(log: Path) -> list[str]:
    report = explain_text(log.read_text(encoding="utf-8", errors="replace"))
    return [
        command
        for finding in report.findings
        for command in (finding.remediation.commands if finding.remediation else [])
        if command.startswith("bnbdoctor fit")
    ]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_fit_command_explain_prints_parses_and_names_a_model(log: Path) -> None:
    for command in fit_commands(log):
        argv = shlex.split(command)
        args = build_parser().parse_args(argv[2:])  # exits on a flag fit does not have
        assert is_repo_id(args.model), command  # never a placeholder such as MODEL


def test_a_log_that_names_no_model_gets_advice_not_a_placeholder() -> None:
    log = ROOT / "tests" / "data" / "real_logs" / "dispatch_cpu_disk_valueerror.txt"
    report = explain_text(log.read_text(encoding="utf-8"))
    finding = next(f for f in report.findings if f.rule_id == "BNB450")
    assert finding.remediation is not None
    assert not any("bnbdoctor fit" in c for c in finding.remediation.commands)
    assert "bnbdoctor fit with the model's id or folder" in finding.remediation.text


EXPLAINED = [
    ("synthetic_logs/accelerate_4bit_device_map_imbalance.txt", "google/gemma-3-27b-it"),
    ("synthetic_logs/dispatch_valueerror_device_map_underpacking.txt", "MiniMaxAI/MiniMax-M3"),
]


@pytest.mark.parametrize(("log", "repo_id"), EXPLAINED)
def test_explains_fit_command_names_the_cached_model(
    log: str, repo_id: str, hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    repo = cache_model(hub, repo_id, TINY)
    (command,) = fit_commands(ROOT / "tests" / "data" / log)
    args = build_parser().parse_args(shlex.split(command)[2:])
    assert resolve_model(LiveHost(), args.model).from_cache == str(repo)


@pytest.mark.slow  # runs the placement engine (the user's transformers) once
def test_explains_fit_command_runs_as_printed(
    hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command, copied from explain's output, run on the machine the log came from (8 GPUs of 22 GiB)."""
    monkeypatch.chdir(tmp_path)
    log = ROOT / "tests" / "data" / "synthetic_logs" / "accelerate_4bit_device_map_imbalance.txt"
    (command,) = fit_commands(log)
    cache_model(hub, "google/gemma-3-27b-it", TINY)
    gpus = {str(i): 22 * GiB for i in range(8)}
    monkeypatch.setattr(core, "detect_gpus", lambda host: (gpus, "8 x NVIDIA A10G (simulated)"))
    argv = shlex.split(command)
    assert argv[:2] == ["bnbdoctor", "fit"]
    code = cli_main([*argv[1:], "--json"])  # --json only to read the answer; the command is as printed
    out, err = capsys.readouterr()
    assert code == 0, err
    fit = json.loads(out)["facts"]["fit"]
    assert fit["model"] == "google/gemma-3-27b-it" and fit["verdict"] == "fits"
    assert fit["config_path"].endswith("config.json") and "models--google--gemma-3-27b-it" in fit["config_path"]
