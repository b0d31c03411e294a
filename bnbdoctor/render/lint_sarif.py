"""``bnbdoctor lint --sarif``: the lint findings as one SARIF 2.1.0 log, for code scanning (GitHub, editors).

One run; its ``tool.driver`` lists every rule the lint ran (from the report: the rules that found
something and those that passed or were skipped), each with its page; one result per finding, at
the ``file:line:col`` its evidence names (``file cell N:line:col`` in a notebook: the line within
the cell, the cell in the result's properties). Levels: error, warning, note. A file that could not be
parsed is no result but an error notification of the run's invocation, which is then not successful.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bnbdoctor.findings import Finding, Severity
from bnbdoctor.render.markdown import DOCS_URL
from bnbdoctor.report import Report

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/bnbdoctor/bnbdoctor"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
#: A lint finding's location, as :attr:`bnbdoctor.facts.LintSite.where` writes it.
_WHERE = re.compile(r"(?P<file>.+?)(?: cell (?P<cell>\d+))?:(?P<line>\d+):(?P<col>\d+)")


def _rules(report: Report) -> list[dict[str, Any]]:
    """The rules the lint ran, by id: name, one-line description and page."""
    described: dict[str, tuple[str, str]] = {}
    for finding in report.findings:
        described.setdefault(finding.rule_id, (finding.rule_name, finding.title))
    for check in (*report.passed, *report.skipped):
        described.setdefault(check.rule_id, (check.rule_name, check.summary))
    return [
        {
            "id": rule_id,
            "name": name,
            "shortDescription": {"text": text},
            "helpUri": f"{DOCS_URL}/{rule_id}.md",
        }
        for rule_id, (name, text) in sorted(described.items())
    ]


def _location(finding: Finding) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the SARIF location of ``finding``, extra result properties); no location when its evidence names none."""
    found = _WHERE.fullmatch(finding.evidence[0].label) if finding.evidence else None
    if found is None:
        return None, {}
    uri = found["file"].replace("\\", "/")
    region = {"startLine": int(found["line"]), "startColumn": int(found["col"])}
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}
    return location, ({"cell": int(found["cell"])} if found["cell"] else {})


def _result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    message = finding.title
    if finding.remediation.text:
        message += "\n" + finding.remediation.text
    result: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": index[finding.rule_id],
        "level": _LEVEL[finding.severity],
        "message": {"text": message},
    }
    location, properties = _location(finding)
    if location is not None:
        result["locations"] = [location]
    if properties:
        result["properties"] = properties
    return result


def _invocation(report: Report) -> dict[str, Any]:
    """The run's one invocation: successful only when every file was linted; each file that could not be
    parsed is an error notification at that file (code scanning shows them as the tool's problems)."""
    unparsed = report.facts.lint.unparsed if report.facts.lint is not None else {}
    invocation: dict[str, Any] = {"executionSuccessful": not unparsed}
    if unparsed:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": f"not linted: {reason}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": file.replace("\\", "/")}}}],
            }
            for file, reason in sorted(unparsed.items())
        ]
    return invocation


def to_sarif(report: Report) -> dict[str, Any]:
    """The SARIF 2.1.0 log of a lint report."""
    rules = _rules(report)
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    driver = {
        "name": "bnbdoctor",
        "version": report.tool_version,
        "informationUri": INFORMATION_URI,
        "rules": rules,
    }
    run = {
        "tool": {"driver": driver},
        "invocations": [_invocation(report)],
        "results": [_result(finding, index) for finding in report.findings],
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


class SarifRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``bnbdoctor lint --sarif``; no colour."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return json.dumps(to_sarif(report), indent=2, ensure_ascii=False) + "\n"
