"""Progress on slow work (issue 13, item 10): a status line on stderr when it is a terminal, nothing otherwise.

Seen: ``fit`` ran 5-10 s and the doctor 20 s (a hanging interpreter) without a sign of life. The status line is
rich's, on stderr only; stdout stays the report (``--json`` stays one JSON document), and off a terminal nothing
is written and rich is not imported for it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bnbdoctor import progress
from bnbdoctor.cli import main as cli_main
from bnbdoctor.facts import ProbeRun

ROOT = Path(__file__).resolve().parents[1]


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr in tmux does."""

    def isatty(self) -> bool:
        return True


def test_nothing_is_shown_off_a_terminal() -> None:
    stream = io.StringIO()
    with progress.status("working", stream=stream) as update:
        update("still working")
    assert stream.getvalue() == "" and not progress.wanted(stream)


def test_a_dumb_terminal_gets_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert not progress.wanted(Terminal())


def test_a_terminal_sees_the_status_and_the_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(progress, "SHOW_SECONDS_AFTER", 0.0)
    stream = Terminal()
    with progress.status("bnbdoctor fit: reading org/name", stream=stream) as update:
        update("bnbdoctor fit: building org/name on the meta device")
        time.sleep(0.3)  # rich refreshes the line several times a second
    shown = stream.getvalue()
    assert "building org/name on the meta device" in shown and " s  bnbdoctor fit" in shown


def test_probe_waits_names_what_is_still_running() -> None:
    seen: list[str] = []
    on_probe = progress.probe_waits(seen.append, "examining", ["gpu", "python", "native"])
    on_probe(ProbeRun("gpu", True, 0.1))
    on_probe(ProbeRun("native", True, 0.1))
    on_probe(ProbeRun("python", False, 20.0, "timed out after 20s"))
    assert seen == [
        "examining: waiting on gpu, python, native",
        "examining: waiting on python, native",
        "examining: waiting on python",
        "examining",
    ]


def test_the_doctor_shows_progress_on_a_terminal_and_json_stays_pure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    stderr = Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    code = cli_main(["--fixture", "a100-healthy", "--json"])
    out, _ = capsys.readouterr()
    json.loads(out)  # one JSON document on stdout, nothing else
    assert code in (0, 1) and "examining this machine" in stderr.getvalue()


def test_json_off_a_terminal_writes_nothing_to_stderr_and_imports_no_status() -> None:
    code = (
        "import sys; from bnbdoctor.cli import main; rc = main(['--fixture', 'a100-healthy', '--json']); "
        "print('rich.status' in sys.modules, file=sys.stderr); sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    json.loads(proc.stdout)
    assert proc.stderr.strip() == "False", proc.stderr
