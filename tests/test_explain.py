"""``bnbdoctor explain``: every catalog entry is diagnosed from a log, root cause first, and any input
(binary, empty, huge, coloured, CRLF, fenced) gets an answer, never a traceback.

Real logs (tests/data/real_logs/, first line = the source URL) and synthetic ones written from the
catalog (tests/data/synthetic_logs/) are named by the catalog id the top finding must cover.
"""

from __future__ import annotations

import html
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT

from bnbdoctor.catalog import catalog
from bnbdoctor.explain import (
    explain_file,
    explain_stream,
    explain_text,
    main,
    render_explain_text,
)
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.report import Report
from bnbdoctor.rules import all_rules

DATA = ROOT / "tests" / "data"
REAL = sorted((DATA / "real_logs").glob("*.txt"))
SYNTHETIC = sorted((DATA / "synthetic_logs").glob("*.txt"))
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


def catalog_ids() -> list[str]:
    return [entry["id"] for entry in catalog()]


def top(report: Report) -> Finding | None:
    return report.findings[0] if report.findings else None


def top_id(report: Report) -> str | None:
    """The rule id of the top finding; None when there is no finding."""
    first = top(report)
    return first.rule_id if first is not None else None


def bnbdoctor(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "explain", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


# ------------------------------------------------------------------------------------------ coverage
def test_every_catalog_id_is_covered_by_a_rule() -> None:
    covered = {c for rule in all_rules() for c in rule.covers}
    missing = [entry for entry in catalog_ids() if entry not in covered]
    assert not missing, f"catalog entries no rule covers: {missing}"


def test_every_catalog_id_has_a_test_log() -> None:
    have = {p.stem for p in REAL + SYNTHETIC}
    missing = [entry for entry in catalog_ids() if entry not in have]
    assert not missing, f"catalog entries without a real or synthetic log: {missing}"
    assert not {p.stem for p in REAL} & {p.stem for p in SYNTHETIC}, "a catalog id has both a real and a synthetic log"


def test_real_logs_keep_their_source_line() -> None:
    assert len(REAL) >= 20
    for path in REAL:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: https://"), path.name


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_real_log_top_finding_covers_its_catalog_id(path: Path) -> None:
    report = explain_file(str(path))
    first = top(report)
    assert first is not None, f"{path.name}: no finding"
    assert path.stem in first.covers, (path.name, [(f.rule_id, f.title) for f in report.findings])
    assert first.rank == 1 and first.confidence in ("high", "medium") and first.confirm and first.log_lines


@pytest.mark.parametrize("path", SYNTHETIC, ids=lambda p: p.stem)
def test_synthetic_log_top_finding_covers_its_catalog_id(path: Path) -> None:
    report = explain_file(str(path))
    first = top(report)
    assert first is not None, f"{path.name}: no finding"
    assert path.stem in first.covers, (path.name, [(f.rule_id, f.title) for f in report.findings])


# ------------------------------------------------------------------------------------------ messy input
def _variants(text: str) -> dict[str, bytes]:
    lines = text.split("\n")
    return {
        "ansi": "\n".join(
            f"\x1b[31m{line}\x1b[0m" if i % 2 else f"\x1b[1;33m{line[:4]}\x1b[0m{line[4:]}"
            for i, line in enumerate(lines)
        ).encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "fenced": ("Here is the log:\n\n```text\n" + text + "\n```\n\nAny idea? 谢谢\n").encode(),
        "quoted": "\n".join("> " + line for line in lines).encode(),
        "html-escaped": html.escape(text, quote=True).encode(),
        "repeated": ((text + "\n") * 3).encode(),
        "utf-16": text.encode("utf-16"),
        "noise-around": ("Epoch 1/3 loss=2.31\n" * 50 + text + "\n" + "wandb: synced run 42\n" * 50).encode(),
    }


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_messy_variants_of_a_real_log_give_the_same_top_finding(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = top_id(explain_text(text))
    assert expected is not None, path.name
    for name, data in _variants(text).items():
        got = top(explain_stream(io.BytesIO(data), name))
        assert got is not None and got.rule_id == expected, (path.name, name, got and got.rule_id)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n\n",
        bytes(range(256)) * 2000,
        b"\x00" * 100_000,
        b"nothing to see here\r\njust a normal run\n",
        b"\xff\xfe\xfd" * 1000,
    ],
    ids=["empty", "blank-lines", "binary", "nul-bytes", "no-failure", "invalid-utf8"],
)
def test_garbage_gets_a_clear_answer(data: bytes) -> None:
    report = explain_stream(io.BytesIO(data), "garbage")
    assert not [f for f in report.findings if f.severity is not Severity.INFO]
    assert report.exit_code() == 0
    answer = "Nothing to explain" if not data.strip() else "No error in this log: no known bitsandbytes failure found"
    assert answer in render_explain_text(report)


def test_a_line_without_newline_for_megabytes_is_cut_not_kept() -> None:
    data = b"x" * 3_000_000 + b"\n" + b"ValueError: Some modules are dispatched on the CPU or the disk.\n"
    report = explain_stream(io.BytesIO(data), "long")
    assert top_id(report) == "BNB450"
    log = report.facts.log
    assert log is not None
    assert log.lines == 2 and log.matches[0].line == 2
    assert report.source["truncated_lines"] == "1"


@pytest.mark.slow  # explains 50 MB
def test_a_50_mb_log_is_explained_in_linear_time() -> None:
    real = (DATA / "real_logs" / "cxxabi_not_found.txt").read_bytes()
    noise = b"".join(b"{'loss': 1.%03d, 'learning_rate': 0.0002, 'epoch': 0.%d}\n" % (i, i % 10) for i in range(1000))
    noise += (
        b'  File "/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501, in _call\n' * 200
    )
    block = noise + real
    data = block * (50 * 1024 * 1024 // len(block) + 1)
    started = time.perf_counter()
    report = explain_stream(io.BytesIO(data), "50MB")
    elapsed = time.perf_counter() - started
    assert top_id(report) == "BNB306"
    log = report.facts.log
    assert log is not None
    assert log.lines == data.count(b"\n")
    assert len(log.matches) < 2000  # bounded, whatever the size
    assert elapsed < 60, f"50 MB took {elapsed:.1f} s"


# ------------------------------------------------------------------------------------------ the command
def test_json_is_one_document_with_the_matched_lines_and_validates() -> None:
    path = DATA / "real_logs" / "cxxabi_not_found.txt"
    result = bnbdoctor("--json", str(path))
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    jsonschema.validate(report, SCHEMA)
    assert report["source"]["kind"] == "log" and report["source"]["label"] == path.name
    matches = report["facts"]["log"]["matches"]
    assert any(m["signature"] == "cxxabi_version_not_found" and m["line"] == 9 for m in matches)
    first = report["findings"][0]
    assert first["rule_id"] == "BNB306" and first["rank"] == 1 and "bnbdoctor --rule BNB306" in first["confirm"]
    assert report["facts"]["native"]["abi"][0]["missing"] == ["CXXABI_1.3.9"]


def test_text_is_the_default_and_names_root_cause_and_checks() -> None:
    result = bnbdoctor(str(DATA / "real_logs" / "kepler_gpu_unsupported.txt"))
    out = result.stdout.decode()
    assert result.returncode == 1
    assert out.index("BNB103") < out.index("BNB519")  # the GPU before the CPU-library symptom
    assert "check on the machine" in out and "$ bnbdoctor --rule BNB103" in out
    assert "\x1b[" not in out


def test_stdin_and_no_failure_exit_0() -> None:
    result = bnbdoctor("-", stdin=b"all good\n")
    assert result.returncode == 0 and b"No error in this log: no known bitsandbytes failure found" in result.stdout


def test_warning_only_exits_0_and_1_with_strict() -> None:
    path = str(DATA / "real_logs" / "peft_merge_lora_into_4bit_rounding_warning.txt")
    assert main([path, "--json", "-o", "/dev/null"]) == 0
    assert main([path, "--strict", "--json", "-o", "/dev/null"]) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/log.txt"], "bnbdoctor: error: /no/such/log.txt: no such file"),
        ([str(DATA)], "is a directory"),
        (["--rule", "BNB999", str(DATA / "real_logs" / "cxxabi_not_found.txt")], "unknown rule 'BNB999'"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    result = bnbdoctor(*args)
    assert result.returncode == 2
    assert result.stdout == b""
    err = result.stderr.decode().strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_markdown_output(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    assert main([str(DATA / "real_logs" / "glibc_2_34_not_found.txt"), "--markdown", "-o", str(out)]) == 1
    text = out.read_text()
    assert "BNB307" in text


def test_only_chosen_rules_run() -> None:
    report = explain_file(
        str(DATA / "real_logs" / "kepler_gpu_unsupported.txt"), [r for r in all_rules() if r.id == "BNB516"]
    )
    assert [f.rule_id for f in report.findings] == ["BNB516"]


def test_the_doctor_on_a_machine_is_unchanged_by_log_rules() -> None:
    from bnbdoctor.doctor import diagnose
    from bnbdoctor.hosts.fixture import FixtureHost

    report = diagnose(FixtureHost.named("centos7-cxxabi"))
    assert [f.rule_id for f in report.findings][:1] == ["BNB306"]
    assert all(f.rank is None and f.confidence is None and not f.confirm for f in report.findings)
    judged = {c.rule_id for c in report.passed + report.skipped} | {f.rule_id for f in report.findings}
    assert not {rid for rid in judged if rid >= "BNB450"}, "log rules are not part of a machine diagnosis"
