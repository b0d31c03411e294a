"""bnbdoctor's model of transformers' bitsandbytes gates against what every release's own code did.

tests/data/oracle/transformers_gates.json is written by tools/oracle_transformers.py, which runs each final
transformers release's own gate code (from its PyPI wheel, never committed) against simulated environments.
Every row must agree with ``knowledge/transformers.py`` (``bnb_gate``, ``bitsandbytes_available``,
``accelerate_available``, ``_torch_usable``) on whether the gate passes, the availability checks, and, where it
refuses, the message, the raise site and the log family bnbdoctor files the message under; a disagreement is a
bnbdoctor bug unless the table's ``reasons`` give it in words. The comparison is the tool's own
(``oracle_transformers.disagreements``, what ``--summary`` prints).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import oracle_transformers  # noqa: E402

TABLE = oracle_transformers.load_table()
RELEASES = sorted(TABLE["releases"], key=Version)


def _rows(table: dict[str, Any], releases: set[str]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """The rows of these releases, by (release, scenario), with message and warning ids resolved to their text
    (ids are numbered per table)."""
    out: dict[tuple[str, str], tuple[Any, ...]] = {}
    for row in table["rows"]:
        if row[0] not in releases:
            continue
        message = table["messages"][row[4]] if len(row) > 4 and row[4] is not None else None
        warned = sorted(table["warnings"][i] for i in (row[5] if len(row) > 5 else []))
        out[row[0], row[1]] = (row[2], row[3], message, warned)
    return out


def test_the_header_names_its_source_and_every_release_from_4_30() -> None:
    assert "https://pypi.org/pypi/transformers/json" in TABLE["source"]
    assert "tools/oracle_transformers.py" in TABLE["source"]
    assert TABLE["stand_ins"] == oracle_transformers.STAND_INS
    assert RELEASES[0] == oracle_transformers.FIRST_RELEASE
    assert len(RELEASES) >= 141
    assert {"4.30.0", "4.37.2", "4.38.0", "4.44.2", "4.45.0", "4.53.0", "4.57.6", "5.0.0"} <= set(RELEASES)
    for version, release in TABLE["releases"].items():
        assert release["gate"] in {"from_pretrained", "validate_environment", "get_hf_quantizer"}, version
        assert date.fromisoformat(release["uploaded"]) >= date(2023, 6, 1), version  # 4.30.0: June 2023
    # Only pre-releases are skipped (every final release from 4.30 has a wheel).
    assert all(entry.endswith("(pre-release)") for entry in TABLE["skipped"]), TABLE["skipped"]
    # The gate each era runs, as the tool's docstring says.
    assert {TABLE["releases"][v]["gate"] for v in RELEASES if Version(v) < Version("4.38")} == {"from_pretrained"}
    assert TABLE["releases"]["4.38.0"]["gate"] == "validate_environment"
    assert TABLE["releases"]["5.0.0"]["gate"] == "get_hf_quantizer"


def test_every_release_ran_every_scenario_of_the_tool() -> None:
    plan = {s.id: s.describe() for s in oracle_transformers.scenarios()}
    assert TABLE["scenarios"] == plan
    assert len(TABLE["rows"]) == len(RELEASES) * len(plan)
    assert {(row[0], row[1]) for row in TABLE["rows"]} == {(r, s) for r in RELEASES for s in plan}
    errors = [row[:2] for row in TABLE["rows"] if row[2] == "error"]
    assert not errors, f"{len(errors)} rows the harness could not run, e.g. {errors[:5]}"


def test_every_row_agrees_with_bnbdoctor_or_has_a_written_reason() -> None:
    unexplained = [str(d) for d in oracle_transformers.disagreements(TABLE) if d.reason is None]
    assert not unexplained, f"{len(unexplained)} disagreements, e.g.\n" + "\n".join(unexplained[:25])


def test_every_written_reason_still_explains_a_row() -> None:
    used = {d.reason for d in oracle_transformers.disagreements(TABLE) if d.reason is not None}
    stale = [entry["why"] for entry in TABLE["reasons"] if entry["why"] not in used]
    assert not stale, f"reasons that explain no disagreement any more: {stale}"


def test_a_reason_covers_its_releases_checks_and_scenarios_only() -> None:
    """A scenario prefix without ``4:``/``8:`` covers both bit widths, one with it only that one."""
    reasons = [{"releases": ["4.30", "4.38"], "checks": ["family"], "scenarios": ["8:no-bnb", "mps"], "why": "w"}]
    covered = [
        ("4.30.0", "8:no-bnb", "family"),
        ("4.37.2", "8:no-bnb", "family"),
        ("4.30.0", "4:mps", "family"),
        ("4.30.0", "8:mps,bnb=0.45.5", "family"),
    ]
    not_covered = [
        ("4.30.0", "4:no-bnb", "family"),
        ("4.38.0", "8:no-bnb", "family"),
        ("4.30.0", "8:no-bnb", "message"),
        ("4.30.0", "8:no-bnb,map=auto", "outcome"),
        ("4.30.0", "8:base", "family"),
    ]
    for release, scenario, check in covered:
        assert oracle_transformers._reason(reasons, release, scenario, check) == "w", (release, scenario, check)
    for release, scenario, check in not_covered:
        assert oracle_transformers._reason(reasons, release, scenario, check) is None, (release, scenario, check)


def test_a_changed_outcome_is_caught() -> None:
    """The comparison can fail: a refusal turned into a pass, or a pass into a refusal, is reported."""
    table = copy.deepcopy(TABLE)
    refused = next(i for i, row in enumerate(table["rows"]) if row[2] == "fail")
    passed = next(i for i, row in enumerate(table["rows"]) if row[2] == "pass")
    refused_row, passed_row = table["rows"][refused], table["rows"][passed]
    table["rows"] = [[*refused_row[:2], "pass", refused_row[3]], [*passed_row[:2], "fail", passed_row[3], 0]]
    found = {(d.release, d.scenario, d.check) for d in oracle_transformers.disagreements(table)}
    assert (refused_row[0], refused_row[1], "outcome") in found
    assert (passed_row[0], passed_row[1], "outcome") in found


def test_a_changed_message_and_availability_are_caught() -> None:
    table = copy.deepcopy(TABLE)
    row = next(r for r in table["rows"] if r[2] == "fail" and r[0] == "4.45.0" and r[1] == "4:no-accelerate")
    exc, site, _text = table["messages"][row[4]]
    table["messages"] = [[exc, site, "something else entirely"]]
    table["rows"] = [[row[0], row[1], "fail", "000" if row[3] != "000" else "111", 0]]
    found = {d.check for d in oracle_transformers.disagreements(table)}
    assert {"message", "available"} <= found


@pytest.mark.network
@pytest.mark.slow
def test_two_releases_rerun_through_the_tool_reproduce_the_committed_rows(tmp_path: Path) -> None:
    """Re-run the real gate code of the newest release in the table and one chosen by the day, and compare every row
    (outcome, availability, message, warnings) with the committed one."""
    day = date.today().toordinal()
    sample = sorted({RELEASES[-1], RELEASES[day % (len(RELEASES) - 1)]}, key=Version)
    out = tmp_path / "gates.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "oracle_transformers.py"), "--releases", *sample, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{sample}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    rerun = oracle_transformers.load_table(out)
    assert sorted(rerun["releases"], key=Version) == sample
    for version in sample:
        assert rerun["releases"][version]["gate"] == TABLE["releases"][version]["gate"]
        assert rerun["releases"][version]["constants"] == TABLE["releases"][version]["constants"]
    committed, fresh = _rows(TABLE, set(sample)), _rows(rerun, set(sample))
    assert fresh.keys() == committed.keys()
    changed = [
        f"{key}: committed {committed[key]}, now {fresh[key]}" for key in committed if fresh[key] != committed[key]
    ]
    assert not changed, f"{len(changed)} rows changed, e.g.\n" + "\n".join(changed[:10])


def test_no_message_in_the_table_cites_a_held_out_thread() -> None:
    """A release's message may cite a URL kept held out (transformers 4.30-4.37 name an index that is one): the tool
    writes a placeholder instead, so the committed table cites none (../shared/tools/heldout_check.py decides)."""
    tools = ROOT.parent / "shared" / "tools"
    if not (tools / "heldout_check.py").is_file():
        pytest.skip("../shared/tools/heldout_check.py is not beside this checkout")
    done = subprocess.run(
        [sys.executable, str(tools / "heldout_check.py"), "--scan", str(ROOT / "tests" / "data" / "oracle")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "", done.stdout
    held = [m for m in TABLE["messages"] if oracle_transformers.HELD_OUT in m[2]]
    assert held, "the 4.30-4.37 ImportError names the placeholder where its index URL stood"


#: Refusals whose line alone is restated (BNB550) rather than diagnosed: BNB562 wants the log to show it is
#: transformers' check (the ``available_devices.discard`` source line a real traceback prints) or bitsandbytes.
_NEEDS_MORE_THAN_THE_LINE = ("'frozenset' object has no attribute 'discard'",)


def test_every_refusal_a_release_raised_is_explained_by_the_finding_for_its_family() -> None:
    """Each message a transformers release raised in the table (its exception, under a traceback whose last frame
    is the raise site), read by explain, is reported first by a finding that names the family the model gives that
    refusal; a refusal the model has no family for is still never 'no error'."""
    from bnbdoctor.explain import explain_text
    from bnbdoctor.knowledge import transformers as model
    from bnbdoctor.knowledge.signatures import SIGNATURES

    families: dict[tuple[str, ...], set[str]] = {}
    for row in TABLE["rows"]:
        if row[2] != "fail" or len(row) < 5 or row[4] is None:
            continue
        refusal = model.bnb_gate(oracle_transformers.gate_input(TABLE, row[0], row[1]))
        if refusal is not None:
            families.setdefault(tuple(TABLE["messages"][row[4]]), set()).add(refusal.family or "")
    assert len(families) >= 30
    wrong = []
    for (exc, site, text), family in sorted(families.items()):
        path, _, function = site.partition(":")
        log = (
            "Traceback (most recent call last):\n"
            f'  File "/venv/lib/python3.11/site-packages/transformers/{path}", line 120, in {function}\n'
            f"    raise {exc}(\n{exc}: {text}\n"
        )
        report = explain_text(log, label="console.log")
        top = report.findings[0] if report.findings else None
        expected = {c for f in family if f for c in SIGNATURES[f].catalog}
        if top is None or top.severity.value not in ("error", "warning"):
            wrong.append(f"no error: {exc}: {text[:80]}")
        elif expected and not expected & set(top.covers) and text not in _NEEDS_MORE_THAN_THE_LINE:
            wrong.append(f"{top.rule_id} {top.covers} for {sorted(expected)}: {exc}: {text[:80]}")
    assert not wrong, "\n".join(wrong)
