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
