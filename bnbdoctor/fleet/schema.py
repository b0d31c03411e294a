"""JSON Schema for the fleet report, generated from :mod:`.model` like docs/report.schema.json.

``python -m bnbdoctor.fleet.schema > docs/fleet.schema.json`` regenerates the committed copy.
"""

from __future__ import annotations

from typing import Any

from bnbdoctor.fleet_report import FLEET_SCHEMA_VERSION, FleetReport
from bnbdoctor.schema import dataclass_schema, write_schema


def fleet_schema() -> dict[str, Any]:
    return dataclass_schema(FleetReport, name="fleet", version=FLEET_SCHEMA_VERSION, title="bnbdoctor fleet report")


if __name__ == "__main__":
    write_schema(fleet_schema())
