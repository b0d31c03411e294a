"""``bnbdoctor merge-check --markdown``: a whole-document golden file (redacted), a real Markdown parser's view of
its tables, and a body that stays within an issue's size however many layers the adapter adapts."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT
from markdown_it import MarkdownIt

from bnbdoctor.merge_check import cli
from bnbdoctor.merge_check.cli import redacted
from bnbdoctor.merge_check_result import WAYS, LayerResult, MergeCheck, WayResult
from bnbdoctor.redact import Redactor
from bnbdoctor.render.markdown import MAX_BODY
from bnbdoctor.render.merge_check_markdown import render_markdown

GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("BNBDOCTOR_UPDATE_GOLDEN") == "1"
HOME = "/home/alice"
REDACTOR = Redactor(home=HOME, user="alice", host="gpu-node-07")
MODULES = ("self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj")


def _check(decoder_layers: int = 2) -> MergeCheck:
    """A measurement as the engine reports one: a 1B-shaped base in the Hugging Face cache under alice's home."""
    snapshot = f"{HOME}/.cache/huggingface/hub/models--meta-llama--Llama-3.2-1B/snapshots/4e20de36"
    check = MergeCheck(
        adapter=f"{HOME}/runs/gpu-node-07/qlora",
        base="meta-llama/Llama-3.2-1B",
        base_dir=snapshot,
        base_ref="meta-llama/Llama-3.2-1B",
        python=f"{HOME}/venvs/train/bin/python",
        quant_type="nf4",
        blocksize=64,
        double_quant=True,
        rank=16,
        alpha=32,
        base_bytes=2_471_645_184,
        largest_tensor_bytes=525_336_576,
        adapter_bytes=22_574_120,
        scale=2.0,
        versions={"torch": "2.8.0+cpu", "bitsandbytes": "0.47.0"},
        engine_peak_rss_bytes=1_046_478_848,
    )
    check.overall = {
        "4bit": WayResult(kept=0.0155, unmoved=0.563),
        "16bit": WayResult(kept=0.9998, unmoved=0.182),
        "dequantized": WayResult(kept=0.9998, unmoved=0.1815),
        "16bit_then_quantize": WayResult(kept=0.995, unmoved=0.0213),
    }
    for layer in range(decoder_layers):
        for number, module in enumerate(MODULES):
            shape = [2048, 8192] if module == "mlp.down_proj" else [2048 if module.endswith("q_proj") else 512, 2048]
            kept = 0.01 + 0.001 * (layer * len(MODULES) + number)
            check.layers.append(
                LayerResult(
                    module=f"base_model.model.model.layers.{layer}.{module}",
                    base_weight=f"model.layers.{layer}.{module}.weight",
                    shape=shape,
                    dtype="bfloat16",
                    delta_rel=0.01,
                    ways={way: WayResult(kept=kept if way == "4bit" else 0.999, unmoved=0.5) for way in WAYS},
                    seconds=0.8,
                )
            )
    check.layers.append(LayerResult(module="base_model.model.lm_head", error="no matching base weight"))
    return check


def test_merge_check_markdown_golden() -> None:
    text = render_markdown(redacted(_check(), REDACTOR))
    golden = GOLDEN / "merge-check.md"
    if UPDATE or not golden.exists():
        golden.write_text(text)
    assert text == golden.read_text(), "regenerate with BNBDOCTOR_UPDATE_GOLDEN=1 if the change is intended"


def test_redacted_leaves_no_home_user_or_host() -> None:
    text = render_markdown(redacted(_check(), REDACTOR))
    assert HOME not in text and "alice" not in text and "gpu-node-07" not in text
    assert "~/runs/<host>/qlora" in text
    assert "from_pretrained('meta-llama/Llama-3.2-1B'" in text  # the Hub id is kept


def _tables(text: str) -> list[list[list[str]]]:
    tokens = MarkdownIt("gfm-like").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type in ("th_open", "td_open"):
            row.append("")
        elif token.type == "inline" and tables and row:
            row[-1] = token.content
        elif token.type == "tr_close":
            tables[-1].append(row)
            row = []
    return tables


def test_tables_parse_with_one_row_per_way_and_per_layer() -> None:
    check = _check()
    ways, layers = _tables(render_markdown(check))
    assert [row[0].split(":")[0] for row in ways[1:]] == [
        "`4bit`",
        "`16bit`",
        "`dequantized`",
        "`16bit-then-quantized`",
    ]
    assert ways[1][1:] == ["1.6 %", "56.3 %"]
    assert len(layers) == 1 + len(check.layers) and all(len(row) == 7 for row in layers)
    assert layers[-1][2] == "no matching base weight"
    assert "```python" in render_markdown(check)


def test_many_layers_are_cut_to_fit_an_issue_least_kept_first() -> None:
    check = _check(decoder_layers=400)  # 1,201 layers: about 140,000 characters of table
    text = render_markdown(check)
    assert len(text) <= MAX_BODY
    shown = _tables(text)[1][1:]
    assert f"_{len(shown)} of {len(check.layers)} layers shown, least kept by the 4-bit merge first" in text
    assert shown[0][2] == "no matching base weight"  # a failed layer first, then the least kept
    assert shown[1][0] == "`model.layers.0.self_attn.q_proj`"
    assert text.rstrip().endswith("peak memory of the measurement 998.00 MiB.")  # the tail is kept whole


def test_an_error_is_the_verdict_alone() -> None:
    check = _check()
    check.error = "ImportError: No module named 'bitsandbytes'"
    text = render_markdown(check)
    assert "could not measure the adapter: ImportError" in text and "|" not in text


def test_markdown_is_exclusive_with_the_other_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.build_parser().parse_args(["a", "--markdown"]).format == "markdown"
    assert cli.main(["a", "--markdown", "--json"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
