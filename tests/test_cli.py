"""The command-line contract, exercised through real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, fixture_names

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


def bnbdoctor(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )


def test_json_is_one_document_on_stdout_and_validates() -> None:
    result = bnbdoctor("--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # nothing else on stdout
    jsonschema.validate(report, SCHEMA)
    assert report["tool"] == "bnbdoctor" and report["schema_version"] == 1
    assert report["interpreter"] and report["facts"]["python"]["torch"]["installed"]
    assert {"probe.python", "probe.gpu", "total"} <= set(report["timings"])


def test_json_never_imports_textual_torch_or_bitsandbytes() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from bnbdoctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--json'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'bitsandbytes', 'rich')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_text_output_on_this_machine() -> None:
    result = bnbdoctor("--text")
    assert result.returncode == 0
    assert "BNB101" in result.stdout and "Summary:" in result.stdout
    assert "\x1b[" not in result.stdout  # no colour codes when stdout is not a terminal


def test_list_rules_and_fixtures() -> None:
    rules = bnbdoctor("--list-rules")
    assert rules.returncode == 0 and rules.stdout.splitlines()[0].startswith("BNB001")
    fixtures = bnbdoctor("--list-fixtures")
    assert fixtures.returncode == 0
    assert {line.split()[0] for line in fixtures.stdout.splitlines()} == set(fixture_names())


def test_single_rule() -> None:
    result = bnbdoctor("--json", "--rule", "BNB101")
    report = json.loads(result.stdout)
    ids = {c["rule_id"] for c in report["passed"] + report["skipped"]} | {f["rule_id"] for f in report["findings"]}
    assert ids == {"BNB101"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rule", "BNB999"], "unknown rule 'BNB999'"),
        (["--fixture", "no-such-machine"], "no recorded machine named 'no-such-machine'"),
        (["--python", "/no/such/python"], "--python /no/such/python: no such file"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    result = bnbdoctor(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def _crashing_venv(root: Path) -> Path:
    """A virtualenv whose python is a real program that dies of SIGSEGV, as a broken build does."""
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nkill -SEGV $$\n")
    python.chmod(0o755)
    return python


@pytest.mark.parametrize("how", ["VIRTUAL_ENV", "--python", "not-python"])
def test_an_interpreter_that_cannot_be_examined_is_an_error_finding(tmp_path: Path, how: str) -> None:
    import os

    python = _crashing_venv(tmp_path)
    env = dict(os.environ)
    args = ["--json", "--no-load"]
    if how == "VIRTUAL_ENV":
        env["VIRTUAL_ENV"] = str(python.parent.parent)
    elif how == "--python":
        args += ["--python", str(python)]
    else:
        args += ["--python", "/bin/true"]  # exits 0 and prints nothing
    result = bnbdoctor(*args, env=env)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    jsonschema.validate(report, SCHEMA)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["rule_id"] for f in errors] == ["BNB001"]
    seen = errors[0]["evidence"][0]["value"]
    if how == "not-python":
        assert "printed nothing" in seen
    else:
        assert "killed by signal 11 (SIGSEGV)" in seen and f"chosen by {how}" in seen
    assert report["summary"]["errors"] == 1 and "BNB201" in {c["rule_id"] for c in report["skipped"]}


def test_malformed_fixture_path(tmp_path: Path) -> None:
    (tmp_path / "machine.json").write_text("{broken")
    result = bnbdoctor("--fixture", str(tmp_path))
    assert result.returncode == 2 and "not valid JSON" in result.stderr and "Traceback" not in result.stderr


def _fixture_with(kind: str) -> str | None:
    """A recorded machine whose expected exit code is 1 (errors) or 0 with warnings."""
    for name in fixture_names():
        expect = json.loads((ROOT / "platform_fixtures" / name / "machine.json").read_text()).get("expect", {})
        if kind == "error" and expect.get("exit_code") == 1:
            return name
        if kind == "warning" and expect.get("exit_code") == 0 and expect.get("findings"):
            return name
    return None


def test_exit_codes_errors_and_strict() -> None:
    errored = _fixture_with("error")
    assert errored is not None, "a recorded machine with errors is needed for this test"
    assert bnbdoctor("--fixture", errored, "--text").returncode == 1
    # pascal-gtx1080: only the LLM.int8() slow-path warning
    result = bnbdoctor("--fixture", "pascal-gtx1080", "--json")
    report = json.loads(result.stdout)
    assert report["summary"]["warnings"] >= 1 and report["summary"]["errors"] == 0
    assert result.returncode == 0
    assert bnbdoctor("--fixture", "pascal-gtx1080", "--json", "--strict").returncode == 1


def test_output_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = bnbdoctor("--json", "--output", str(target))
    assert result.returncode == 0 and result.stdout == ""
    jsonschema.validate(json.loads(target.read_text()), SCHEMA)


def test_exit_code_enum_is_documented() -> None:
    from bnbdoctor.report import ExitCode

    assert [int(c) for c in ExitCode] == [0, 1, 2]
    assert all(c.__doc__ and c.__doc__ != ExitCode.__doc__ for c in ExitCode)
