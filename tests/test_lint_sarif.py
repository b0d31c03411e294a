"""``bnbdoctor lint --sarif``: a SARIF 2.1.0 log with the structure code scanning reads (one run, the driver's
rules from the lint rule ids, results with a physical location), checked against the lint's own findings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from bnbdoctor.lint import cli
from bnbdoctor.lint.cli import lint_report
from bnbdoctor.render import OutputFormat, ReportKind, UnsupportedFormat, render, renderer_for
from bnbdoctor.render.lint_sarif import SARIF_VERSION, to_sarif

LINT = ROOT / "tests" / "data" / "lint"


def _check_structure(log: dict[str, Any]) -> None:
    """What SARIF 2.1.0 requires of the parts bnbdoctor writes (sarif-schema-2.1.0: sarifLog, run, tool,
    toolComponent, reportingDescriptor, result, location, region)."""
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "bnbdoctor" and isinstance(driver["version"], str)
    ids = [rule["id"] for rule in driver["rules"]]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"BNB6\d\d", rule_id) for rule_id in ids)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["helpUri"].endswith(f"/{rule['id']}.md")
    for result in run["results"]:
        assert result["level"] in ("error", "warning", "note", "none")
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        for location in result.get("locations", []):
            physical = location["physicalLocation"]
            assert isinstance(physical["artifactLocation"]["uri"], str)
            region = physical["region"]
            assert isinstance(region["startLine"], int) and region["startLine"] >= 1
            assert isinstance(region["startColumn"], int) and region["startColumn"] >= 1


@pytest.mark.parametrize("name", ["bare_kwargs.py", "qlora_merge_notebook_style.py", "qlora_notebook.ipynb"])
def test_sarif_log_has_one_result_per_finding_at_its_place(name: str) -> None:
    report = lint_report([str(LINT / name)], read_python=False)
    log = json.loads(render(report, OutputFormat.SARIF, ReportKind.LINT))
    _check_structure(log)
    assert log == to_sarif(report)
    run = log["runs"][0]
    ran = {f.rule_id for f in report.findings} | {c.rule_id for c in (*report.passed, *report.skipped)}
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == sorted(ran)
    assert len(run["results"]) == len(report.findings) > 0
    for result, finding in zip(run["results"], report.findings, strict=True):
        assert result["ruleId"] == finding.rule_id
        assert result["level"] == {"error": "error", "warning": "warning", "info": "note"}[finding.severity.value]
        assert result["message"]["text"].startswith(finding.title)
        region = result["locations"][0]["physicalLocation"]["region"]
        label = finding.evidence[0].label
        assert label.endswith(f":{region['startLine']}:{region['startColumn']}")
        assert label.startswith(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
        if name.endswith(".ipynb"):
            assert f" cell {result['properties']['cell']}:" in label


def test_sarif_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(LINT / "bare_kwargs.py"), "--sarif", "--no-python"]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == SARIF_VERSION and log["runs"][0]["results"]
    assert cli.main([str(LINT / "bare_kwargs.py"), "--sarif", "--json"]) == 2  # one format at a time


def test_sarif_is_for_lint_reports_only() -> None:
    for kind in ReportKind:
        if kind is not ReportKind.LINT:
            with pytest.raises(UnsupportedFormat, match=rf"^bnbdoctor {kind.value} has no --sarif output \(it offers "):
                renderer_for(OutputFormat.SARIF, kind)
