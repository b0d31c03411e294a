"""``--json``: the whole report as one JSON document (see docs/report.schema.json)."""

from __future__ import annotations

import json

from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable


def render_json(report: Report) -> str:
    return json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"
