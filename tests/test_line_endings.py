"""A log reads the same with LF, CRLF and CR line ends (issue 13, item 1).

Terminals turn the newlines of a paste into CRs (tmux's paste, many emulators): before, such a log
was one line, every finding pointed at line 1, and ``tr '\\n' '\\r' < log | bnbdoctor explain -``
invented a fact out of the one long line. Here every recorded log is read with each line ending,
through the pipeline, through the command line (standard input, as it was seen) and in the app.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bnbdoctor.explain import explain_stream
from bnbdoctor.logs.clean import normalize_newlines, read_blocks, read_lines, split_lines
from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT / "tests" / "data").glob("*_logs/*.txt"))
ENDINGS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def with_endings(text: str, ending: str) -> bytes:
    return text.replace("\n", ending).encode("utf-8")


def outcome(report: Report) -> tuple[object, list[tuple[str, list[int]]]]:
    """What must not depend on the line ends: every fact (the line numbers of the matches too), and
    each finding with the lines it rests on. Only the byte count of the input differs."""
    facts = to_jsonable(report.facts)
    facts["source"].pop("bytes")
    return facts, [(f.rule_id, list(f.log_lines)) for f in report.findings]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_lf_crlf_and_cr_give_the_same_facts_findings_and_line_numbers(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    seen = {name: outcome(explain_stream(io.BytesIO(with_endings(text, e)), "log")) for name, e in ENDINGS.items()}
    facts, _ = seen["lf"]
    assert isinstance(facts, dict) and facts["log"]["lines"] > 1
    assert seen["crlf"] == seen["lf"], path.name
    assert seen["cr"] == seen["lf"], path.name  # before: one line, every finding at line 1


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_a_crlf_split_between_two_blocks_is_one_line_end(block: int) -> None:
    data = b"a\r\nb\r\rc\n\nd\r\ne\r"
    got = [text for _, text in _lines(data, block)]
    assert got == ["a", "b", "", "c", "", "d", "e"]  # a last line end ends the last line, as with LF
    assert got == split_lines(data.decode())[:-1]


def _lines(data: bytes, block: int) -> list[tuple[int, str]]:
    out = []
    for first, chunk in read_blocks(io.BytesIO(data), block=block):
        out += [(first + i, line.decode()) for i, line in enumerate(chunk.split(b"\n"))]
    return out


def test_a_progress_bar_redrawn_with_cr_is_one_line_per_redraw() -> None:
    assert list(read_lines(io.BytesIO(b"x\rprogress 10%\rprogress 100%\nlast"))) == [
        (1, "x"),
        (2, "progress 10%"),
        (3, "progress 100%"),
        (4, "last"),
    ]


def test_normalize_and_split_break_only_at_cr_and_lf() -> None:
    assert normalize_newlines("a\r\nb\rc\nd\x0ce\u2028f") == "a\nb\nc\nd\x0ce\u2028f"
    assert split_lines("a\r\n\rb") == ["a", "", "b"]


@pytest.mark.slow
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_explain_from_stdin_numbers_lines_alike_whatever_the_line_ends(ending: str) -> None:
    """``tr '\\n' '\\r' < log | bnbdoctor explain --json -``, as it was seen."""
    path = ROOT / "tests" / "data" / "real_logs" / "cxxabi_not_found.txt"
    text = path.read_text(encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "explain", "--json", "-"],
        input=with_endings(text, ENDINGS[ending]),
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert report["facts"]["log"]["lines"] == len(text.splitlines()) == 16
    first = report["findings"][0]
    assert first["rule_id"] == "BNB306" and first["log_lines"] == [9, 14]


@pytest.mark.parametrize("seed", range(4))
def test_cr_and_crlf_ends_are_made_newlines_as_two_replaces_made_them(seed: int) -> None:
    """One pass over a chunk (``\\r\\n?``) gives what ``replace(b"\\r\\n", b"\\n").replace(b"\\r", b"\\n")`` gave."""
    from bnbdoctor.logs.clean import _CR_ENDS

    rng = random.Random(seed)
    chunk = bytes(rng.choice(b"\r\nab") for _ in range(20_000))
    assert _CR_ENDS.sub(b"\n", chunk) == chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


@pytest.mark.parametrize("max_line", [4096, 600, 511, 40])
def test_a_line_longer_than_the_limit_is_seen_wherever_it_lies(max_line: int) -> None:
    """The windows that spare measuring every line miss no line over ``max_line``, at whatever offset it
    starts: one of exactly ``max_line`` bytes is not over it, one byte more is."""
    from bnbdoctor.logs.clean import _has_long_line

    short = b"\n".join(b"x" * (i % (max_line // 2)) for i in range(300))
    assert not _has_long_line(short, max_line)
    for offset in range(max_line + 1):  # the long line starts at every offset of a window
        for length in (max_line, max_line + 1):
            data = b"p" * offset + b"\n" + b"y" * length + b"\n" + short
            assert _has_long_line(data, max_line) == (length > max_line), (offset, length)
            assert _has_long_line(short + b"\n" + b"p" * offset + b"\n" + b"y" * length, max_line) == (
                length > max_line
            )
