"""The committed JSON Schema matches the dataclasses, and reports round-trip through JSON."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from conftest import ROOT, fixture_names

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.report import Report, created_now
from bnbdoctor.schema import report_schema
from bnbdoctor.serde import DecodeError, from_dict, to_jsonable


def test_committed_schema_is_current() -> None:
    committed = json.loads((ROOT / "docs" / "report.schema.json").read_text())
    assert committed == report_schema(), "run: python -m bnbdoctor.schema > docs/report.schema.json"


@pytest.mark.parametrize("name", fixture_names())
def test_report_round_trip(name: str) -> None:
    report = diagnose(FixtureHost.named(name))
    data = json.loads(json.dumps(to_jsonable(report)))
    again = from_dict(Report, data)
    assert to_jsonable(again) == data


def test_decode_errors_name_the_field() -> None:
    data = to_jsonable(diagnose(FixtureHost.named(fixture_names()[0])))
    data["summary"]["errors"] = "many"
    with pytest.raises(DecodeError, match=r"Report.summary.errors: expected int, got str"):
        from_dict(Report, data)


def test_created_is_written_as_datetime_writes_it() -> None:
    """A report's ``created``: UTC, seconds, "+00:00", as datetime.isoformat(timespec="seconds") spells it."""
    before = datetime.now(timezone.utc).replace(microsecond=0)
    created = created_now()
    after = datetime.now(timezone.utc)
    parsed = datetime.fromisoformat(created)
    assert before <= parsed <= after
    assert created == parsed.isoformat(timespec="seconds")
