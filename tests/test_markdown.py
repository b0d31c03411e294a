"""The Markdown report: whole-document golden files, and a real Markdown parser's view of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT
from markdown_it import MarkdownIt
from pinned_rules import pinned_rules

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.redact import Redactor
from bnbdoctor.render.markdown import code, plain, render_markdown
from bnbdoctor.report import Report
from bnbdoctor.report_io import redact_report

GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("BNBDOCTOR_UPDATE_GOLDEN") == "1"


def stable_report(name: str) -> Report:
    """A fixture's redacted report with the run-dependent values (time, durations) and the rule set pinned."""
    host = FixtureHost.named(name)
    report = diagnose(host, rules=pinned_rules())
    report.created = "2026-01-01T00:00:00+00:00"
    report.timings = dict.fromkeys(report.timings, 0.0)
    for run in report.facts.probes:
        run.duration_s = 0.0
    if report.facts.load is not None:
        report.facts.load.duration_s = 0.0
    return redact_report(report, Redactor.for_machine(host.os_info()))


@pytest.mark.parametrize("name", ["kepler-k80", "windows-bnb041"])
def test_markdown_golden(name: str) -> None:
    text = render_markdown(stable_report(name))
    golden = GOLDEN / f"{name}.md"
    if UPDATE or not golden.exists():
        golden.write_text(text)
    assert text == golden.read_text(), "regenerate with BNBDOCTOR_UPDATE_GOLDEN=1 if the change is intended"


@pytest.mark.parametrize("name", ["kepler-k80", "windows-bnb041", "a100-healthy"])
def test_markdown_parses_into_the_expected_table(name: str) -> None:
    report = stable_report(name)
    tokens = MarkdownIt("gfm-like").parse(render_markdown(report))
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    if not report.findings:
        assert not tables or tokens[tables[0] + 3].content != "Severity"
        return
    start = tables[0]
    end = next(i for i in range(start, len(tokens)) if tokens[i].type == "table_close")
    rows, row = [], []
    for token in tokens[start:end]:
        if token.type == "inline":
            row.append(token.content)
        elif token.type == "tr_close":
            rows.append(row)
            row = []
    assert rows[0] == ["Severity", "Rule", "Finding"]
    assert len(rows) == len(report.findings) + 1
    for finding, cells in zip(report.findings, rows[1:], strict=True):
        assert len(cells) == 3
        assert cells[1].startswith(f"[{finding.rule_id}](")
        assert finding.severity.value in cells[0]


def test_escaping_survives_pipes_backticks_and_html() -> None:
    assert code("a|b") == "`a\\|b`"
    assert code("use `pip`") == "`` use `pip` ``"  # a longer fence, padded because the text ends in a backtick
    assert plain("C:\\Users\\x | <script>") == "C:\\\\Users\\\\x \\| \\<script\\>"
    cell = f"| {code('x`y|z')} | {plain('a|b')} |"
    tokens = MarkdownIt("gfm-like").parse("| h1 | h2 |\n|---|---|\n" + cell + "\n")
    cells = [t.content for t in tokens if t.type == "inline"]
    assert len(cells) == 4


def test_large_report_points_to_an_attachment(tmp_path: Path) -> None:
    report = stable_report("kepler-k80")
    report.facts.env["PATH"] = "/x" * 30_000
    text = render_markdown(report)
    assert "too large to paste here" in text and "```json" not in text
