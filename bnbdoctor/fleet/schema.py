"""JSON Schema for the fleet report, generated from :mod:`.model` like docs/report.schema.json.

``python -m bnbdoctor.fleet.schema > docs/fleet.schema.json`` regenerates the committed copy.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bnbdoctor.fleet_report import FLEET_SCHEMA_VERSION, FleetReport
from bnbdoctor.schema import dataclass_schema


def fleet_schema() -> dict[str, Any]:
    return dataclass_schema(
        FleetReport,
        schema_id=f"https://bnbdoctor.invalid/fleet.schema.v{FLEET_SCHEMA_VERSION}.json",
        title=f"bnbdoctor fleet report, schema version {FLEET_SCHEMA_VERSION}",
    )


if __name__ == "__main__":
    sys.stdout.write(json.dumps(fleet_schema(), indent=2) + "\n")
