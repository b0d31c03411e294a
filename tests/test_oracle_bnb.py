"""bnbdoctor's loader model against what every bitsandbytes release's own code did (issue 22).

tests/data/oracle/bnb_loader.json is written by tools/oracle_bnb.py, which imports each release's real
``bitsandbytes`` package (from its PyPI wheel, never committed) on simulated machines. Every row must
agree with ``knowledge/selection.py`` on the library the release ends up holding, whether import raises,
whether the first native call fails, and the message; a disagreement is a bnbdoctor bug unless
tools/oracle_diff.py gives its reason in words.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import oracle_diff  # noqa: E402

TABLE = oracle_diff.load()


def test_the_table_covers_every_release_from_0_37_and_2000_rows() -> None:
    published = json.loads((ROOT / "bnbdoctor" / "data" / "bnb_releases.json").read_text())["releases"]
    wanted = {r["version"] for r in published if Version(r["version"]) >= Version("0.37.0") and not r["yanked"]}
    covered = {row["release"] for row in TABLE["rows"]}
    assert wanted <= covered, sorted(wanted - covered, key=Version)
    assert len(covered) >= 50
    assert len(TABLE["rows"]) >= 2000


def test_every_row_agrees_with_bnbdoctor_or_has_a_written_reason() -> None:
    unexplained = [d.line() for d in oracle_diff.disagreements(TABLE) if d.reason is None]
    assert not unexplained, f"{len(unexplained)} disagreements, e.g.\n" + "\n".join(unexplained[:25])


def test_a_changed_outcome_is_caught() -> None:
    """The comparison can fail: a release that 'loaded' a file bnbdoctor does not predict is reported."""
    table = copy.deepcopy(TABLE)
    row = next(r for r in table["rows"] if r["outcome"]["loaded"] and r["outcome"]["import"] == "ok")
    row["outcome"]["loaded"] = "libbitsandbytes_cuda999.so"
    assert any(d.row is row for d in oracle_diff.disagreements(table))


@pytest.mark.network
@pytest.mark.slow
def test_a_rotating_sample_of_releases_still_does_what_the_table_says() -> None:
    """Re-run the real code of three releases (which ones changes by the day) and compare."""
    releases = sorted({row["release"] for row in TABLE["rows"]}, key=Version)
    day = date.today().toordinal()
    sample = sorted({releases[(day * k) % len(releases)] for k in (1, 7, 13)}, key=Version)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "oracle_bnb.py"), "--check", "--releases", ",".join(sample)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, f"{sample}: {done.stdout[-3000:]}{done.stderr[-2000:]}"


# ------------------------------------------------------------------ what the releases print, read back by explain
#: Python's last-resort logging handler prints records of these levels, bare, when an app configures none.
_SHOWN_LEVELS = ("WARNING", "ERROR", "CRITICAL")


def console_of(outcome: dict[str, object]) -> str:
    """What a user's console shows of one oracle outcome: the release's prints, its warnings as ``warnings``
    shows them, its log records of level WARNING and above as Python's last-resort handler prints them, then the
    exception that import or the first native call raised, under a traceback header."""
    lines: list[str] = []
    for message in outcome.get("messages") or []:  # type: ignore[attr-defined]
        kind, rest = str(message).split(":", 1)
        if kind == "print":
            lines.append(rest)
        elif kind == "warn":
            category, text = rest.split(":", 1)
            lines.append(f"/venv/lib/python3.11/site-packages/bitsandbytes/cextension.py:34: {category}: {text}")
        elif kind == "log":
            level, text = rest.split(":", 1)
            if level in _SHOWN_LEVELS:
                lines.append(text)
    for key in ("import", "first_call"):
        raised = outcome.get(key)
        if isinstance(raised, str) and raised not in ("ok", "no library object"):
            lines += ["Traceback (most recent call last):", '  File "/work/train.py", line 3, in <module>', raised]
    return "\n".join(lines) + "\n"


def failing(outcome: dict[str, object]) -> bool:
    return outcome.get("import") != "ok" or outcome.get("first_call") not in ("ok", None)


def test_what_every_release_prints_when_it_fails_is_never_no_error() -> None:
    """Every failure the releases' own code produced on the simulated machines (import raising, the first native
    call raising), as a console shows it, is reported by explain as an error or a warning, never 'no error'; and
    almost all of them by a finding that names the failure, not only the unrecognised-error fallback (BNB549).
    The few that stay generic show no more than a bare exception the harness raised (a traceback's frames, which
    a real console shows, are not in the table)."""
    from bnbdoctor.explain import explain_text

    consoles = {console_of(row["outcome"]) for row in TABLE["rows"] if failing(row["outcome"])}
    assert len(consoles) > 300
    generic, silent = [], []
    for text in sorted(consoles):
        report = explain_text(text, label="console.log")
        said = {f.rule_id for f in report.findings if f.severity.value in ("error", "warning")}
        if not said:
            silent.append(text[-200:])
        elif said <= {"BNB549"}:
            generic.append(text[-200:])
    assert silent == []
    assert len(generic) <= len(consoles) // 50, generic
