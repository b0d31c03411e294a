"""Any output encoding: every format of every command under cp1252, latin-1, ascii and LANG=C; NO_COLOR/FORCE_COLOR.

Seen: ``PYTHONIOENCODING=cp1252 bnbdoctor --text`` (a Windows redirect) ended in ``internal error:
UnicodeEncodeError``; latin-1 too. Now the report is written whole, with ASCII symbols where the encoding lacks
the Unicode ones, and JSON stays the same data.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from test_render import reports  # noqa: F401  (the module-scoped fixture: one report of each kind)

from bnbdoctor import contract
from bnbdoctor.charset import ASCII_FALLBACK, fit_to_encoding
from bnbdoctor.render import REPORT_KINDS, OutputFormat, ReportKind, ReportKinds, render
from bnbdoctor.render.options import emit
from bnbdoctor.report import Report

ENCODINGS = ["cp1252", "latin-1", "ascii"]
DOCUMENTS = [OutputFormat.TEXT, OutputFormat.MARKDOWN, OutputFormat.JSON]


def emitted(
    report: Report, fmt: OutputFormat, kind: ReportKinds, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> str:
    """What ``emit`` writes to a stdout in ``encoding``, decoded; a strict stream, as Python's own stdout is."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", stream)
    emit(report, fmt, kind, None, error=RuntimeError)
    return raw.getvalue().decode(encoding)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("fmt", DOCUMENTS)
@pytest.mark.parametrize("kind", REPORT_KINDS)
def test_every_format_and_command_writes_under_any_encoding(
    reports: dict[ReportKinds, Report],  # noqa: F811
    kind: ReportKinds,
    fmt: OutputFormat,
    encoding: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = reports[kind]
    text = emitted(report, fmt, kind, encoding, monkeypatch)
    unicode = render(report, fmt, kind)
    if fmt is OutputFormat.JSON:
        assert json.loads(text) == json.loads(unicode)  # the same data, escaped where it must be
    else:
        assert len(text.splitlines()) == len(unicode.splitlines())  # nothing lost, only symbols changed
        assert "?" not in set(text) - set(unicode)  # every symbol bnbdoctor writes has a stand-in
    if encoding == "ascii":
        assert text.isascii()


def test_text_symbols_fall_back_to_ascii(reports: dict[ReportKinds, Report], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    text = emitted(reports[ReportKind.DOCTOR], OutputFormat.TEXT, ReportKind.DOCTOR, "cp1252", monkeypatch)
    assert "x error   BNB103" in text and "  + BNB001" in text
    markdown = emitted(reports[ReportKind.DOCTOR], OutputFormat.MARKDOWN, ReportKind.DOCTOR, "ascii", monkeypatch)
    assert "| :red_circle: error | [BNB103]" in markdown


def test_characters_the_encoding_has_are_kept() -> None:
    assert fit_to_encoding("✖ a — b · c", "cp1252") == "x a — b · c"
    assert fit_to_encoding("✖ a — b · c", "latin-1") == "x a - b · c"
    assert fit_to_encoding("✖ a — b", "utf-8") == "✖ a — b"
    assert fit_to_encoding("✖ 水", "ascii") == "x ?"
    assert fit_to_encoding("✖", "no-such-codec") == "x"
    assert all(stand_in.isascii() for stand_in in ASCII_FALLBACK.values())


def test_json_escapes_keep_the_data() -> None:
    document = json.dumps({"why": "🔴 GPUs 0–3 — Jos\u00e9"}, ensure_ascii=False)
    for encoding in ENCODINGS:
        fitted = fit_to_encoding(document, encoding, json=True)
        fitted.encode(encoding)
        assert json.loads(fitted) == json.loads(document)


def run_doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG", "LC_ALL", "PYTHONUTF8")}
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "--fixture", "kepler-k80", *args],
        capture_output=True,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "cp1252"},
        {"PYTHONIOENCODING": "latin-1"},
        {"PYTHONIOENCODING": "ascii"},
        {"LANG": "C", "LC_ALL": "C"},
        {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"},
    ],
    ids=["cp1252", "latin-1", "ascii", "LANG=C", "LANG=C-no-utf8-mode"],
)
def test_the_doctor_as_seen_never_ends_in_unicode_encode_error(env: dict[str, str]) -> None:
    for flag in ("--text", "--markdown", "--json"):
        done = run_doctor(env, flag)
        assert done.returncode == 1, done.stderr  # findings, not bnbdoctor's own error (2)
        assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr
        assert b"BNB103" in done.stdout
        if flag == "--json":
            json.loads(done.stdout)


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # no-color.org: set and not empty
        ({"FORCE_COLOR": "1"}, False, True),  # force-color.org: a CI log, less -R
        ({"FORCE_COLOR": ""}, False, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False),  # the user's opt-out wins
    ],
)
def test_no_color_and_force_color(
    env: dict[str, str], tty: bool, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    assert contract.use_color(True, None) is expected
    assert contract.use_color(False, None) is False  # JSON and Markdown are never coloured
    assert contract.use_color(True, "report.txt") is False  # nor is a file


def test_force_color_colours_a_pipe() -> None:
    done = run_doctor({"FORCE_COLOR": "1"}, "--text")
    assert b"\x1b[" in done.stdout
    assert b"\x1b[" not in run_doctor({"FORCE_COLOR": "1", "NO_COLOR": "1"}, "--text").stdout


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "latin-1"])
def test_every_command_writing_through_the_contract_fits_its_stdout(
    encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """merge-check's text (ΔW, a multiplication sign) once ended in ``internal error: UnicodeEncodeError`` on an ASCII
    terminal: it wrote through ``contract.write_output``, which the report renderers' fitting bypassed.
    Now write_output itself fits what it writes to stdout."""
    import io

    from bnbdoctor.contract import write_output

    for text, as_json in (("kept of ΔW: 99.5 % · 256\u00d7512 ≠ ✔\n", False), ('{"way": "Q(W + ΔW)"}\n', True)):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
        monkeypatch.setattr(sys, "stdout", stream)
        write_output(text, None, ValueError, json=as_json)
        written = raw.getvalue().decode(encoding)
        if as_json:
            assert json.loads(written) == json.loads(text)
        else:
            assert "99.5 %" in written and "256" in written


@pytest.mark.parametrize(
    "args", [["rule", "BNB601"], ["lint", "tests/data/lint"], ["lint", "--sarif", "tests/data/lint"]]
)
def test_other_commands_as_seen_under_ascii(args: list[str]) -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG", "LC_ALL", "PYTHONUTF8")}
    done = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args],
        capture_output=True,
        env={**clean, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"},
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr
    done.stdout.decode("ascii")
