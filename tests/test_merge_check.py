"""``bnbdoctor merge-check`` on a real tiny Llama base and real peft LoRA adapters, all on CPU.

The kept / unmoved figures are checked against a direct computation here, with
``bitsandbytes.functional`` (not the tool's code path); a large update survives a 4-bit merge, a tiny
one does not. The engine runs in this venv's interpreter, as it would in the patient's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bnbdoctor.merge_check.core import MergeOptions, run_merge_check
from bnbdoctor.merge_check_result import MergeCheck
from bnbdoctor.render.merge_check import render_json, render_text
from bnbdoctor.render.merge_check_words import _percent

pytestmark = pytest.mark.slow

MAKE = r"""
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
from peft import LoraConfig, get_peft_model
out = sys.argv[1]
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=128, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4)
LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out + "/base")
for name, std, extra in (("big", 0.3, {}), ("tiny", 0.001, {}), ("dora", 0.05, {"use_dora": True}),
                         ("rslora", 0.05, {"use_rslora": True})):
    base = LlamaForCausalLM.from_pretrained(out + "/base", dtype=torch.bfloat16)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], **extra)
    model = get_peft_model(base, config)
    for key, param in model.named_parameters():
        if "lora_B" in key:
            with torch.no_grad():
                param.normal_(0, std)
    model.save_pretrained(out + "/" + name)
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    out = tmp_path_factory.mktemp("merge")
    subprocess.run([sys.executable, "-c", MAKE, str(out)], check=True, capture_output=True, timeout=600)
    return out


_CHECKS: dict[tuple[Path, str], MergeCheck] = {}


def _check(models: Path, name: str) -> MergeCheck:
    """One engine run per adapter for the whole module (each run imports torch in a new process)."""
    if (models, name) not in _CHECKS:
        check = run_merge_check(MergeOptions(adapter=str(models / name), python=sys.executable))
        assert check.error is None, check.error
        _CHECKS[(models, name)] = check
    return _CHECKS[(models, name)]


def _direct(models: Path, name: str, blocksize: int = 64) -> dict[str, dict[str, float]]:
    """Kept and unmoved per module, computed here with bitsandbytes.functional."""
    import bitsandbytes.functional as bnbf
    import torch
    from safetensors.torch import load_file

    config = json.loads((models / name / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    base = load_file(str(models / "base" / "model.safetensors"))
    adapter = load_file(str(models / name / "adapter_model.safetensors"))

    def q(tensor: torch.Tensor) -> torch.Tensor:
        packed, state = bnbf.quantize_4bit(tensor.contiguous(), blocksize=blocksize, quant_type="nf4")
        return bnbf.dequantize_4bit(packed, state).to(tensor.dtype)

    found = {}
    for key in adapter:
        if ".lora_A." not in key:
            continue
        module = key.split(".lora_A.")[0]
        weight = base[module.removeprefix("base_model.model.") + ".weight"]
        delta = (adapter[module + ".lora_B.weight"].float() @ adapter[key].float()) * scale
        start = q(weight).float()
        merged_4bit = q((start + delta).to(weight.dtype)).float()
        merged_once = q((weight.float() + delta).to(weight.dtype)).float()
        norm2 = float((delta * delta).sum())
        found[module] = {
            "kept_4bit": float(((merged_4bit - start) * delta).sum()) / norm2,
            "unmoved_4bit": float((merged_4bit == start).float().mean()),
            "kept_once": float(((merged_once - weight.float()) * delta).sum()) / norm2,
        }
    return found


@pytest.mark.parametrize("name", ["big", "tiny"])
def test_figures_match_a_direct_bitsandbytes_computation(models: Path, name: str) -> None:
    check = _check(models, name)
    direct = _direct(models, name)
    assert {layer.module for layer in check.layers} == set(direct)
    assert len(check.layers) == 2 * 3
    for layer in check.layers:
        expected = direct[layer.module]
        assert layer.ways["4bit"].kept == pytest.approx(expected["kept_4bit"], abs=1e-3)
        assert layer.ways["4bit"].unmoved == pytest.approx(expected["unmoved_4bit"], abs=1e-3)
        assert layer.ways["16bit_then_quantize"].kept == pytest.approx(expected["kept_once"], abs=1e-3)


def test_large_update_survives_tiny_update_is_rounded_away(models: Path) -> None:
    big, tiny = _check(models, "big"), _check(models, "tiny")
    assert big.overall["4bit"].kept is not None and big.overall["4bit"].kept > 0.5
    assert tiny.overall["4bit"].kept is not None and tiny.overall["4bit"].kept < 0.2
    assert tiny.overall["4bit"].unmoved is not None and tiny.overall["4bit"].unmoved > 0.3
    for check in (big, tiny):
        assert check.overall["16bit"].kept == pytest.approx(1.0, abs=0.05)
        assert check.overall["dequantized"].kept == pytest.approx(1.0, abs=0.05)
        assert check.overall["16bit_then_quantize"].kept == pytest.approx(1.0, abs=0.1)
    # the verdict names the measured share, in the words for an update the 4-bit merge loses
    assert f"merging into 4-bit keeps {_percent(tiny.overall['4bit'].kept)} of what you trained" in render_text(tiny)
    document = json.loads(render_json(tiny))
    assert document["kind"] == "merge-check"
    assert set(document["overall"]) == {"4bit", "16bit", "dequantized", "16bit_then_quantize"}
    assert "merge_and_unload()" in document["workflow_script"]
    assert document["merge_peak_bytes"] >= (models / "base" / "model.safetensors").stat().st_size - 10_000


def test_dora_and_rslora_adapters_are_measured(models: Path) -> None:
    dora = _check(models, "dora")
    assert dora.use_dora and len(dora.layers) == 6
    assert dora.overall["16bit"].kept == pytest.approx(1.0, abs=0.05)
    rslora = _check(models, "rslora")
    assert rslora.use_rslora and rslora.scale == pytest.approx(16 / 8**0.5)


def test_cli_json_and_exit_codes(models: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "bnbdoctor", "merge-check", *args, "--python", sys.executable]
        return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=models)

    tiny = run("tiny", "--json", "--max-layers", "2")
    assert tiny.returncode == 1, tiny.stderr
    data = json.loads(tiny.stdout)
    assert len(data["layers"]) == 2 and data["overall"]["4bit"]["kept"] < 0.2
    assert "layer" not in tiny.stderr  # stderr is not a terminal here: no progress line
    big = run("big", "--base", str(models / "base"), "--text")
    assert big.returncode == 0, big.stderr
    assert "(a) into the 4-bit model" in big.stdout
    markdown = run("tiny", "--markdown", "--max-layers", "1")
    assert markdown.returncode == 1, markdown.stderr
    assert markdown.stdout.startswith("## bnbdoctor merge-check: `") and "| `4bit`: (a)" in markdown.stdout
    assert "### Per layer (1 adapted layers)" in markdown.stdout and "```python" in markdown.stdout
    missing = run(str(models / "nowhere"))
    assert missing.returncode == 2 and "adapter_config.json" in missing.stderr


def test_layer_progress_arrives_while_the_engine_runs(models: Path) -> None:
    heard: list[tuple[float, str]] = []

    def progress(message: str) -> None:
        heard.append((time.monotonic(), message))

    check = run_merge_check(MergeOptions(adapter=str(models / "big"), python=sys.executable), progress=progress)
    returned = time.monotonic()
    assert check.error is None, check.error
    layers = [(at, message) for at, message in heard if ": layer " in message]
    expected = [
        f"bnbdoctor merge-check: layer {i}/6 {layer.module.removeprefix('base_model.model.')}"
        for i, layer in enumerate(check.layers, start=1)
    ]
    assert [message for _, message in layers] == expected  # every layer, in order, without peft's prefix
    # Each line is written as its layer starts, so the first came before all six layers were measured
    # (and the engine answered and exited): not collected at the end.
    measuring = sum(layer.seconds or 0.0 for layer in check.layers)
    assert returned - layers[0][0] >= 0.5 * measuring > 0
