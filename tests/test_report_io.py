"""--from: every recorded machine round-trips; bad reports get one clear line, exit 2."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, fixture_names

from bnbdoctor.report_io import ReportError, parse_report


def bnbdoctor(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], capture_output=True, text=True, cwd=ROOT, timeout=120, input=stdin
    )


def finding_ids(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["rule_id"], f["title"]) for f in report["findings"]]


#: Round-tripped in the fast suite too; the other recorded machines only with the slow tests.
FAST_ROUND_TRIPS = ("a100-healthy", "kepler-k80", "windows-bnb041")


@pytest.mark.parametrize(
    "name",
    [name if name in FAST_ROUND_TRIPS else pytest.param(name, marks=pytest.mark.slow) for name in fixture_names()],
)
def test_round_trip_every_fixture(name: str, tmp_path: Path) -> None:
    first = bnbdoctor("--fixture", name, "--json")
    saved = tmp_path / "report.json"
    saved.write_text(first.stdout)
    again = bnbdoctor("--from", str(saved), "--json")
    assert again.returncode == first.returncode, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert finding_ids(a) == finding_ids(b)
    assert b["replayed_from"] == a["created"]


def test_round_trip_through_markdown_and_stdin() -> None:
    markdown = bnbdoctor("--fixture", fixture_names()[0], "--markdown").stdout
    replay = bnbdoctor("--from", "-", "--json", stdin="Some user text before the report\n\n" + markdown)
    assert replay.returncode in (0, 1), replay.stderr
    assert json.loads(replay.stdout)["tool"] == "bnbdoctor"


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: codecs.BOM_UTF16_LE + text.encode("utf-16-le"),  # PowerShell 5's > and Out-File
        lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),  # PowerShell 5's Set-Content -Encoding UTF8
        lambda text: text.encode("utf-16-le"),
    ],
    ids=["utf-16-bom", "utf-8-bom", "utf-16-no-bom"],
)
def test_a_report_saved_by_powershell_replays(encode: Any, tmp_path: Path) -> None:
    """Issue 25, item 18: --from refused a report saved as UTF-16 or as UTF-8 with a BOM (explain read them)."""
    from bnbdoctor.report_io import load_facts

    report = bnbdoctor("--fixture", "kepler-k80", "--json").stdout
    for name, text in (("r.json", report), ("r.md", bnbdoctor("--fixture", "kepler-k80", "--markdown").stdout)):
        saved = tmp_path / name
        saved.write_bytes(encode(text))
        facts, header = load_facts(str(saved))
        assert header["tool"] == "bnbdoctor" and facts.gpu is not None


def test_incomplete_facts_give_what_they_can(tmp_path: Path) -> None:
    report = json.loads(bnbdoctor("--fixture", "kepler-k80", "--json").stdout)
    for section in ("python", "native", "load"):
        report["facts"][section] = None
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(report))
    replay = json.loads(bnbdoctor("--from", str(path), "--json").stdout)
    assert "BNB103" in {f["rule_id"] for f in replay["findings"]}  # GPU facts suffice
    skipped = {c["rule_id"]: c["reason"] for c in replay["skipped"]}
    assert "python: no facts" in skipped["BNB201"]


def _hostile(tmp_path: Path) -> dict[str, str]:
    text = bnbdoctor("--fixture", "a100-healthy", "--json").stdout
    base = json.loads(text)
    cases = {}
    cases["truncated"] = json.dumps(base)[:500]
    cases["not json"] = "hello, this is not a report"
    cases["a list"] = "[1, 2, 3]"
    cases["other tool"] = json.dumps({"tool": "pip-audit", "schema_version": 1})
    newer = dict(base, schema_version=99)
    cases["newer schema"] = json.dumps(newer)
    older = dict(base, schema_version=0)
    cases["older schema"] = json.dumps(older)
    wrong = json.loads(json.dumps(base))
    wrong["facts"]["gpu"]["devices"] = "many"
    cases["wrong type"] = json.dumps(wrong)
    huge = json.loads(json.dumps(base))
    huge["facts"]["env"]["PATH"] = "x" * 1_000_000
    cases["huge string"] = json.dumps(huge)
    deep = "[" * 5000 + "1" + "]" * 5000
    cases["deep nesting"] = '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"env": ' + deep + "}}"
    cases["empty"] = ""
    # 5,000 digits: Python's int-max-str-digits limit makes json.loads raise a plain ValueError
    # (no .msg, unlike JSONDecodeError); a reliability finding crashed with AttributeError here.
    cases["huge integer literal"] = text.replace('"schema_version": 1', '"schema_version": 1' + "0" * 5000, 1)
    cases["huge number"] = text.replace('"schema_version": 1', '"schema_version": 1' + "0" * 40, 1)
    cases["not finite"] = text.replace('"schema_version": 1', '"schema_version": NaN', 1)
    # A lone surrogate escape: not text, and --json would fail writing it back out.
    cases["lone surrogate"] = text.replace('"label": "', '"label": "jos\\udce9', 1)
    return cases


EXPECTED = {
    "truncated": "is not valid JSON",
    "not json": "neither JSON nor a Markdown report",
    "a list": "holds a JSON list",
    "other tool": "is not a bnbdoctor report",
    "newer schema": "schema 99, newer than this bnbdoctor reads (1)",
    "older schema": "schema 0, which this bnbdoctor (schema 1) can no longer read",
    "wrong type": "facts.gpu.devices: expected a list, got str",
    "huge string": "a string of 1000000 characters",
    "deep nesting": "nested",
    "empty": "is empty",
    "huge integer literal": "a number of thousands of digits",
    "huge number": "json.schema_version: a number of 41 digits",
    "not finite": "a number that is not finite (nan)",
    "lone surrogate": "text that is not valid Unicode",
}


@pytest.mark.slow  # a CLI run per case; test_hostile_values_are_one_line checks the parser in process
def test_bad_reports_are_one_line_exit_2(tmp_path: Path) -> None:
    for label, content in _hostile(tmp_path).items():
        path = tmp_path / f"{label.replace(' ', '_')}.json"
        path.write_text(content)
        before = set(tmp_path.iterdir())
        run = bnbdoctor("--from", str(path), "--json")
        assert run.returncode == 2, (label, run.stdout[:200], run.stderr)
        assert run.stdout == "" and "Traceback" not in run.stderr, label
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and EXPECTED[label] in lines[0], (label, lines)
        assert set(tmp_path.iterdir()) == before, f"{label}: something was written"


HOSTILE_VALUES = {
    "int-max-str-digits": (
        '{"tool": "bnbdoctor", "schema_version": 1' + "0" * 5000 + "}",
        "r.json: a number of thousands of digits",
    ),
    "int-max-str-digits in a list": (
        '{"tool": "bnbdoctor", "schema_version": 1, "x": [' + "9" * 4400 + "]}",
        "a number of thousands of digits",
    ),
    "huge integer": (
        '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"gpu": -1' + "0" * 30 + "}}",
        "r.json.facts.gpu: a number of 31 digits",
    ),
    "infinity": (
        '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"load": {"duration_s": Infinity}}}',
        "r.json.facts.load.duration_s: a number that is not finite (inf)",
    ),
    "lone surrogate": (
        '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"env": {"HOME": "/home/jos\\udce9"}}}',
        "r.json.facts.env.HOME: text that is not valid Unicode",
    ),
    "lone surrogate in a key": (
        '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"env": {"\\ud800": 1}}}',
        "a key that is not valid Unicode",
    ),
    "newline in a key": (
        '{"tool": "bnbdoctor", "schema_version": 1, "facts": {"a\\nb": "' + "x" * 300_000 + '"}}',
        "r.json.facts.a\\nb…: a string of 300000 characters",
    ),
}


@pytest.mark.parametrize(("text", "expected"), HOSTILE_VALUES.values(), ids=HOSTILE_VALUES.keys())
def test_hostile_values_are_one_line(text: str, expected: str) -> None:
    """In process: each is a ReportError whose message is one line (never an AttributeError)."""
    with pytest.raises(ReportError) as caught:
        parse_report(text, "r.json")
    message = str(caught.value)
    assert expected in message and "\n" not in message and len(message) < 300, message


def test_missing_report_file() -> None:
    run = bnbdoctor("--from", "/no/such/report.json")
    assert run.returncode == 2 and "cannot read /no/such/report.json" in run.stderr
