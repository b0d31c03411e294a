"""``--json``: the whole report as one JSON document (see docs/report.schema.json).

One layout for every report kind: the doctor's, explain's (with the matched log lines in
``facts.log``) and fit's (``facts.fit``).
"""

from __future__ import annotations

import json

from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable


def render_json(report: Report) -> str:
    return json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n"


class JsonRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``--json``; JSON has no colour."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return render_json(report)
