"""merge-check without torch: inputs, safetensors headers, the engine's pure helpers, the verdict and output."""

from __future__ import annotations

import ast
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.hosts.base import CommandResult
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.merge_check import cli
from bnbdoctor.merge_check.core import MergeInputError, MergeOptions, resolve_base, run_merge_check, safetensors_bytes
from bnbdoctor.merge_check.engine import MARKER, engine_source, parse_answer
from bnbdoctor.merge_check_result import WAYS, MergeCheck, WayResult
from bnbdoctor.render.merge_check import render_json, render_text
from bnbdoctor.render.merge_check_words import verdict, workflow_script


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def _engine() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "merge_engine"}
    exec(  # noqa: S102 - the engine script is ours; run here to test its functions
        compile(engine_source(), "engine_script.py", "exec"),
        namespace,
    )
    return namespace


def test_engine_imports_only_the_stdlib_at_module_level() -> None:
    tree = ast.parse(engine_source())
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = {alias.name for node in top if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module or "" for node in top if isinstance(node, ast.ImportFrom)}
    assert names <= {"__future__", "json", "math", "os", "re", "sys", "time", "typing"}
    assert _engine()["MARKER"] == MARKER


def test_engine_pairs_lora_tensors_and_finds_the_base_weight() -> None:
    engine = _engine()
    keys = [
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector",
        "base_model.model.model.layers.0.mlp.up_proj.lora_A.weight",  # no B: not a layer
    ]
    layers = engine["_layers"](keys)
    assert list(layers) == ["base_model.model.model.layers.0.self_attn.q_proj"]
    assert set(layers["base_model.model.model.layers.0.self_attn.q_proj"]) == {"A", "B", "m"}
    base = {"model.layers.0.self_attn.q_proj.weight": "model.safetensors"}
    assert engine["_base_name"]("base_model.model.model.layers.0.self_attn.q_proj", base) == (
        "model.layers.0.self_attn.q_proj.weight"
    )
    assert engine["_base_name"]("base_model.model.lm_head", base) is None


def test_engine_scale_honours_rslora_and_alpha_pattern() -> None:
    scale = _engine()["_scale"]
    assert scale({"lora_alpha": 16}, "m.q_proj", 8) == 2.0
    assert scale({"lora_alpha": 16, "use_rslora": True}, "m.q_proj", 16) == 4.0
    assert scale({"lora_alpha": 16, "alpha_pattern": {"q_proj": 32}}, "model.layers.0.q_proj", 8) == 4.0
    assert scale({"lora_alpha": 16, "alpha_pattern": {"q_proj": 32}}, "model.layers.0.k_proj", 8) == 2.0


def test_safetensors_sizes_come_from_the_headers(tmp_path: Path) -> None:
    _write_safetensors(tmp_path / "model-00001.safetensors", {"a": ("BF16", [4, 4], 32), "b": ("BF16", [8], 16)})
    _write_safetensors(tmp_path / "model-00002.safetensors", {"c": ("F32", [16], 64)})
    assert safetensors_bytes(LiveHost(), str(tmp_path)) == (112, 64)


def test_base_from_the_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "models--org--tiny"
    (repo / "snapshots" / "abc").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    (repo / "snapshots" / "abc" / "config.json").write_text("{}")  # what from_pretrained reads first
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve_base(LiveHost(), "org/tiny", str(tmp_path)) == (str(repo / "snapshots" / "abc"), "org/tiny")
    with pytest.raises(MergeInputError, match="hf download org/other"):
        resolve_base(LiveHost(), "org/other", str(tmp_path))


def test_a_base_that_is_not_safetensors_is_one_line(tmp_path: Path) -> None:
    """A 3-byte model.safetensors once ended in 'internal error: unpack requires a buffer of 8 bytes'."""
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    with pytest.raises(MergeInputError, match=r"model\.safetensors: not a safetensors file"):
        safetensors_bytes(LiveHost(), str(tmp_path))


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(MergeInputError, match=r"adapter_config\.json"):
        run_merge_check(MergeOptions(adapter=str(tmp_path)))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (tmp_path / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(MergeInputError, match="--base"):
        run_merge_check(MergeOptions(adapter=str(tmp_path)))
    with pytest.raises(MergeInputError, match="--blocksize"):
        run_merge_check(MergeOptions(adapter=str(tmp_path), blocksize=100))
    assert cli.main([str(tmp_path / "missing")]) == 2
    assert cli.main([str(tmp_path), "--quant-type", "int8"]) == 2


def test_answer_parsing() -> None:
    good = CommandResult(("py",), 0, stdout="noise\n" + MARKER + json.dumps({"ok": True}) + "\n")
    assert parse_answer(good).ok
    crashed = CommandResult(("py",), 1, stderr="Traceback\nImportError: torch")
    answer = parse_answer(crashed)
    assert not answer.ok and answer.error is not None and "ImportError" in answer.error


def _check(kept_4bit: float) -> MergeCheck:
    check = MergeCheck(
        adapter="out/adapter",
        base="org/base",
        base_dir="/cache/base",
        base_ref="org/base",
        python="python",
        quant_type="nf4",
        blocksize=64,
        double_quant=True,
        rank=8,
        alpha=16,
        base_bytes=2_000_000_000,
        largest_tensor_bytes=100,
        adapter_bytes=10,
    )
    check.overall = {way: WayResult(kept=1.0, unmoved=0.1) for way in WAYS}
    check.overall["4bit"] = WayResult(kept=kept_4bit, unmoved=0.62)
    return check


def test_verdict_and_workflow_in_the_users_names() -> None:
    low = _check(0.01)
    assert verdict(low) == (
        "merging into 4-bit keeps 1 % of what you trained; merge into the 16-bit base, then quantize once (keeps 100 %)"
    )
    assert cli.exit_code(low) == 1 and cli.exit_code(_check(0.9)) == 0
    script = workflow_script(low)
    assert "from_pretrained('org/base'" in script and "'out/adapter-merged'" in script
    assert "bnb_4bit_use_double_quant=True" in script
    compile(script, "workflow", "exec")
    text = render_text(low)
    assert "(a) into the 4-bit model" in text and "1.86 GiB" in text
    document = json.loads(render_json(low))
    assert document["overall"]["4bit"] == {"kept": 0.01, "unmoved": 0.62}
    assert document["merge_peak_bytes"] == 2_000_000_110


def test_progress_listener_shows_layer_lines_only() -> None:
    from bnbdoctor.merge_check.engine import LayerProgress

    shown: list[str] = []
    heard = LayerProgress(shown.append)
    for line in (
        "merge-check: layer 3/16 base_model.model.model.layers.1.self_attn.q_proj",
        "UserWarning: something torch said",
        "merge-check: layer 4/16 model.layers.1.mlp.up_proj",
    ):
        heard(line)
    assert shown == [
        "bnbdoctor merge-check: layer 3/16 model.layers.1.self_attn.q_proj",
        "bnbdoctor merge-check: layer 4/16 model.layers.1.mlp.up_proj",
    ]
    assert _engine()["PROGRESS"] == "merge-check: layer "


class _SlowEngineHost(LiveHost):
    """This machine, but the engine "measures" three of ten layers and then runs into its time limit."""

    def run_python(
        self,
        executable: str,
        script: str,
        timeout: float = 10.0,
        *,
        purpose: str = "facts",
        isolated: bool = False,
        on_stderr_line: Callable[[str], None] | None = None,
    ) -> CommandResult:
        assert purpose == "merge-check" and on_stderr_line is not None
        for position in (1, 2, 3, 4):
            on_stderr_line(f"merge-check: layer {position}/10 base_model.model.model.layers.0.mlp.up_proj")
        return CommandResult((executable, "-c", "<merge-check script>"), None, timed_out=True, duration_s=timeout)


def test_a_timeout_says_how_far_it_got_and_the_limit_that_would_do(tmp_path: Path) -> None:
    import sys

    (tmp_path / "base").mkdir()
    _write_safetensors(tmp_path / "base" / "model.safetensors", {"model.layers.0.mlp.up_proj.weight": ("BF16", [4], 8)})
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8, "lora_alpha": 16}))
    (tmp_path / "adapter_model.safetensors").write_bytes(b"")
    shown: list[str] = []
    options = MergeOptions(adapter=str(tmp_path), base=str(tmp_path / "base"), python=sys.executable, timeout_s=60)
    check = run_merge_check(options, host=_SlowEngineHost(), progress=shown.append)
    assert shown[-1] == "bnbdoctor merge-check: layer 4/10 model.layers.0.mlp.up_proj"
    assert check.error is not None and "timed out after 60.0s" in check.error
    assert check.error.endswith(
        "(at layer 4/10; all 10 layers need about 240 s here: pass --timeout 240 (or --max-layers 3))"
    )


def test_the_verdict_never_rounds_a_share_onto_nothing_or_everything() -> None:
    from bnbdoctor.render.merge_check_words import _percent

    assert [_percent(s) for s in (1.0096, 0.995, 0.9949, 0.004, 0.0155, 1.0, 0.0, None)] == [
        "101 %",
        "99.5 %",
        "99 %",
        "0.4 %",
        "2 %",
        "100 %",
        "0 %",
        "?",
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"r": 8.5}, "r is 8.5, not a whole number"),
        ({"r": "8"}, 'r is "8", not a whole number'),
        ({"r": True}, "r is true, not a whole number"),
        ({"r": 0}, "r is 0, not a whole number"),
        ({"r": 8, "lora_alpha": "16"}, 'lora_alpha is "16", not a finite number'),
        ({"r": 8, "lora_alpha": float("nan")}, "lora_alpha is NaN, not a finite number"),
        ({"r": 8, "lora_alpha": float("inf")}, "lora_alpha is Infinity, not a finite number"),
    ],
)
def test_a_config_of_the_wrong_types_is_one_line_in_every_format(
    config: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, item 15: ``r: 8.5`` or ``"8"`` made ``--markdown`` end in "internal error: DecodeError", and
    ``lora_alpha: NaN`` (Python's json reads it) made ``--json`` print a bare NaN."""
    (tmp_path / "base").mkdir()
    _write_safetensors(tmp_path / "base" / "model.safetensors", {"model.layers.0.mlp.up_proj.weight": ("BF16", [4], 8)})
    (tmp_path / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "base_model_name_or_path": "base", **config})
    )
    (tmp_path / "adapter_model.safetensors").write_bytes(b"")
    for fmt in ("--json", "--text", "--markdown"):
        assert cli.main([str(tmp_path), fmt]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and message in captured.err and "internal error" not in captured.err


def test_json_is_strict_even_when_the_engine_answers_nan() -> None:
    check = _check(0.9)
    check.overall["4bit"] = WayResult(kept=float("nan"), unmoved=float("inf"))
    check.scale = float("nan")
    text = render_json(check)

    def refuse(constant: str) -> None:
        raise AssertionError(f"bare {constant} in --json")

    data = json.loads(text, parse_constant=refuse)
    assert data["overall"]["4bit"]["kept"] is None and data["scale"] is None
