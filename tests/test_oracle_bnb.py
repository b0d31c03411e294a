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
