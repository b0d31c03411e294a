"""Each reader of saved reports knows which kinds it takes (issue 25, item 3).

``--from`` replays a machine's report and ``fleet`` reads machines' reports as nodes. An ``explain`` report holds
what a log showed (a log that names no torch is not a machine without torch: replayed, it made "PyTorch is not
installed" up), a ``fit`` or ``lint`` report no machine at all, a ``fleet`` or ``merge-check`` document no facts:
each is refused with one line naming what it is, never read as a machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from bnbdoctor.fleet.aggregate import aggregate
from bnbdoctor.fleet.extract import summarize, summarize_dict
from bnbdoctor.fleet.inputs import iter_reports
from bnbdoctor.report_io import ReportError

LOG = ROOT / "tests" / "data" / "real_logs" / "cxxabi_not_found.txt"
LINT_SCRIPT = ROOT / "tests" / "data" / "lint" / "qlora_merge_notebook_style.py"


def bnbdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One saved document of each kind, as the commands write them (JSON, and explain's Markdown too)."""
    folder = tmp_path_factory.mktemp("kinds")
    made = {
        "machine": bnbdoctor("--fixture", "centos7-cxxabi", "--json"),
        "explain": bnbdoctor("explain", str(LOG), "--json"),
        "explain.md": bnbdoctor("explain", str(LOG), "--markdown"),
        "lint": bnbdoctor("lint", str(LINT_SCRIPT), "--json"),
    }
    paths = {}
    for name, done in made.items():
        assert done.returncode in (0, 1), done.stderr
        paths[name] = folder / (name if name.endswith(".md") else f"{name}.json")
        paths[name].write_text(done.stdout)
    fit = json.loads(paths["machine"].read_text())  # a fit report's header: its source names the model
    fit["source"] = {"kind": "fit", "label": "org/model"}
    fit["facts"]["source"] = fit["source"]
    paths["fit"] = folder / "fit.json"
    paths["fit"].write_text(json.dumps(fit, indent=2))
    fleet = bnbdoctor("fleet", "--json", str(paths["machine"]))
    assert fleet.returncode in (0, 1), fleet.stderr
    paths["fleet"] = folder / "fleet.json"
    paths["fleet"].write_text(fleet.stdout)
    return paths


REFUSED = {
    "explain": "a `bnbdoctor explain` report",
    "explain.md": "a `bnbdoctor explain` report",
    "lint": "a `bnbdoctor lint` report",
    "fit": "a `bnbdoctor fit` report",
    "fleet": "a `bnbdoctor fleet` report",
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_from_replays_only_a_machines_report(documents: dict[str, Path], kind: str) -> None:
    done = bnbdoctor("--from", str(documents[kind]), "--json")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert REFUSED[kind] in line and "--from takes only a machine's report" in line
    assert "PyTorch" not in done.stderr


def test_from_still_replays_a_machines_report(documents: dict[str, Path]) -> None:
    done = bnbdoctor("--from", str(documents["machine"]), "--json")
    assert done.returncode == 1, done.stderr
    assert [f["rule_id"] for f in json.loads(done.stdout)["findings"]][:1] == ["BNB306"]


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_fleet_reads_only_machines_reports_both_ways(documents: dict[str, Path], kind: str) -> None:
    text = documents[kind].read_text()
    with pytest.raises(ReportError, match="fleet takes only a machine's report"):
        summarize(text, kind)  # the fast path (an indented JSON report) or the whole decode (Markdown)
    if not kind.endswith(".md"):
        with pytest.raises(ReportError, match=REFUSED[kind].replace("`", ".")):
            summarize_dict(json.loads(text), kind)


def test_a_fleet_lists_the_other_kinds_as_unreadable(documents: dict[str, Path]) -> None:
    report = aggregate(iter_reports([str(path) for path in documents.values()]))
    assert report.nodes == 1
    assert sorted(u.error.split(" is ", 1)[1].split(";")[0] for u in report.unreadable) == sorted(
        REFUSED[kind].split(" (")[0] + rest
        for kind, rest in (
            ("explain", " (what a log shows, not a machine)"),
            ("explain.md", " (what a log shows, not a machine)"),
            ("fit", " (a model's placement, not a machine)"),
            ("fleet", " (many machines' summaries)"),
            ("lint", " (code, not a machine)"),
        )
    )
