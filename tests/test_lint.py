"""bnbdoctor lint: each script in tests/data/lint/ gives exactly the findings it must, clean ones none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bnbdoctor.cli import main
from bnbdoctor.lint.analyze import analyze_source, lint_facts
from bnbdoctor.lint.cli import lint_report

DATA = Path(__file__).parent / "data" / "lint"

#: file -> the (rule id, line) findings it must produce, and nothing else (with no interpreter read).
EXPECTED: dict[str, set[tuple[str, int]]] = {
    "qlora_merge_notebook_style.py": {("BNB601", 14)},
    "merge_16bit_clean.py": set(),
    "bare_kwargs.py": {("BNB602", 5), ("BNB603", 5)},
    "config_clean.py": set(),
    "comfy_node_cast.py": {("BNB604", 11), ("BNB604", 12), ("BNB606", 10)},
    "trainer_ddp_fsdp.py": {("BNB605", 12), ("BNB607", 12)},
    "trainer_ddp_clean.py": set(),
    "qlora_notebook.ipynb": {("BNB601", 1)},
    "merge_8bit_adapter.py": {("BNB601", 8)},
    "unparseable.py": set(),
}


def _found(name: str) -> set[tuple[str, int]]:
    report = lint_report([str(DATA / name)], read_python=False)
    return {(f.rule_id, int(f.evidence[0].label.rsplit(":", 2)[-2])) for f in report.findings}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_script_findings(name: str) -> None:
    assert _found(name) == EXPECTED[name]


def test_every_data_file_has_expectations() -> None:
    assert {p.name for p in DATA.iterdir()} == set(EXPECTED)


def test_notebook_evidence_names_the_cell() -> None:
    report = lint_report([str(DATA / "qlora_notebook.ipynb")], read_python=False)
    assert report.findings[0].evidence[0].label.endswith("qlora_notebook.ipynb cell 4:1:10")


def test_unparseable_file_is_one_line_and_the_rest_is_linted() -> None:
    facts = lint_facts([str(DATA)])
    assert list(facts.unparsed) == [str(DATA / "unparseable.py")]
    assert len(facts.files) == len(EXPECTED)
    assert {s.kind for s in facts.sites} >= {"merge", "move", "kbit_kwarg", "offload_kwarg"}


def test_merge_fix_uses_the_names_in_the_code() -> None:
    report = lint_report([str(DATA / "qlora_merge_notebook_style.py")], read_python=False)
    fix = report.findings[0].remediation.text
    assert '"meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16' in fix
    assert 'PeftModel.from_pretrained(base16, "outputs/checkpoint-500")' in fix


def test_kwargs_dict_and_get_peft_model_are_followed() -> None:
    source = (
        "from transformers import BitsAndBytesConfig as B\n"
        "kw = dict(quantization_config=BitsAndBytesConfig(load_in_8bit=True))\n"
        "m = AutoModelForCausalLM.from_pretrained('x', **kw)\n"
        "p = get_peft_model(m, cfg)\n"
        "def save():\n    p.merge_adapter()\n"
    )
    sites = analyze_source(source)
    assert [(s.kind, s.line, s.detail["bits"]) for s in sites] == [("merge", 6, "8")]


def test_cli_exit_codes_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-python", str(DATA / "config_clean.py")]) == 0
    capsys.readouterr()
    assert main(["lint", "--no-python", "--json", str(DATA / "bare_kwargs.py")]) == 1
    document = json.loads(capsys.readouterr().out)
    assert {f["rule_id"] for f in document["findings"]} == {"BNB602", "BNB603"}
    assert main(["lint", "--no-python", str(DATA / "missing.py")]) == 2
    assert main(["lint", "--no-python", "--strict", str(DATA / "qlora_merge_notebook_style.py")]) == 1


def test_every_fix_written_as_code_is_valid_python() -> None:
    """A fix is pasted into the user's code: each indented block of a remediation must parse (BNB601's
    placeholder once put a comment inside the call, swallowing its closing parentheses)."""
    import ast
    import textwrap

    report = lint_report([str(DATA)], read_python=False)
    blocks = 0
    for finding in report.findings:
        assert finding.remediation is not None
        code = [line for line in finding.remediation.text.splitlines() if line.startswith("    ")]
        if code:
            blocks += 1
            ast.parse(textwrap.dedent("\n".join(code)), filename=finding.rule_id)
    assert blocks >= 5


def test_the_adapter_is_the_model_id_argument_whatever_its_place() -> None:
    """``is_trainable=False`` first once made the fix read ``PeftModel.from_pretrained(base16, False)``."""
    source = (
        "m = AutoModelForCausalLM.from_pretrained('b', quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n"
        "p = PeftModel.from_pretrained(m, is_trainable=False, model_id='out/adapter')\n"
        "p.merge_and_unload()\n"
    )
    sites = analyze_source(source)
    assert [(s.kind, s.detail["adapter"]) for s in sites] == [("merge", "'out/adapter'")]


# -- issue 25, item 15: what lint parses is bounded, and one odd file never ends the run --------------

GOOD = (
    "from transformers import AutoModelForCausalLM\n"
    'm = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=True)\n'
    "m.half()\n"
)


def test_deep_nesting_is_one_line_and_the_other_files_are_still_linted(tmp_path: Path) -> None:
    """A notebook whose JSON nests 100,000 deep (RecursionError), 100,000 ``not``s or lambdas (the parser's
    MemoryError) ended the whole run in "internal error", and the good file's findings were lost."""
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "deep.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "notnot.py").write_text("x = " + "not " * 100_000 + "y\n")
    (tmp_path / "lambdas.py").write_text("x = " + "lambda: " * 100_000 + "0\n")
    report = lint_report([str(tmp_path)], read_python=False)
    assert report.facts.lint is not None
    unparsed = report.facts.lint.unparsed
    assert set(unparsed) == {str(tmp_path / name) for name in ("deep.ipynb", "notnot.py", "lambdas.py")}
    assert unparsed[str(tmp_path / "deep.ipynb")] == "not a notebook (JSON nested too deeply)"
    assert unparsed[str(tmp_path / "notnot.py")] == "nested too deeply to parse"
    assert {f.rule_id for f in report.findings} >= {"BNB602", "BNB604"}  # good.py's findings are all there


def test_a_generated_data_module_or_a_huge_cell_is_not_parsed(tmp_path: Path) -> None:
    """~8 KB of memory per source line: a 16 MB data module took 2.2 GB, a notebook with a 50 MB cell > 14 GB."""
    from bnbdoctor.lint.sources import MAX_SOURCE_BYTES

    items = ", ".join(str(i) for i in range(MAX_SOURCE_BYTES // 7))
    (tmp_path / "data.py").write_text(f"DATA = [{items}]\n")
    cell = {"cell_type": "code", "source": [f"DATA = [{items}]\n"], "metadata": {}, "outputs": []}
    (tmp_path / "big.ipynb").write_text(json.dumps({"cells": [cell], "nbformat": 4}))
    (tmp_path / "good.py").write_text(GOOD)
    facts = lint_facts([str(tmp_path)])
    assert facts.unparsed == {
        str(tmp_path / "data.py"): "more than 2 MiB of source; not linted (generated data?)",
        str(tmp_path / "big.ipynb"): "more than 2 MiB of code in its cells; not linted",
    }
    assert {s.kind for s in facts.sites} >= {"kbit_kwarg", "move"}
