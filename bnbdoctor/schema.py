"""JSON Schema for the report, generated from the dataclasses so it cannot drift.

``python -m bnbdoctor.schema > docs/report.schema.json`` regenerates the committed copy; a test
checks that the committed file matches and that real reports validate against it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from enum import Enum
from typing import Any, Union, get_args, get_origin, get_type_hints

from bnbdoctor.facts import SCHEMA_VERSION
from bnbdoctor.report import Report


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin in (Union, types.UnionType):
        options = [_schema(a, defs) for a in get_args(tp)]
        return {"anyOf": options}
    if tp is type(None):
        return {"type": "null"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = get_type_hints(tp)
            props = {f.name: _schema(hints[f.name], defs) for f in dataclasses.fields(tp)}
            required = [f.name for f in dataclasses.fields(tp)]
            doc = (tp.__doc__ or "").strip().split("\n")[0]
            defs[name] = {
                "type": "object",
                "description": doc,
                "properties": props,
                "required": required,
                "additionalProperties": True,
            }
        return {"$ref": f"#/$defs/{name}"}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"enum": [m.value for m in tp]}
    if origin in (list, tuple):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return {"type": "array", "items": _schema(args[0], defs) if args else {}}
    if origin is dict:
        key_value = get_args(tp)
        return {"type": "object", "additionalProperties": _schema(key_value[1], defs) if key_value else {}}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if tp in simple:
        return {"type": simple[tp]}
    raise TypeError(f"no schema for {tp!r}")


def dataclass_schema(root_type: Any, *, name: str, version: int, title: str) -> dict[str, Any]:
    """The schema of a document whose root is the dataclass ``root_type`` (the report, the fleet report):
    its id is ``name``'s schema at ``version``, its title ``title`` with the version."""
    defs: dict[str, Any] = {}
    root = _schema(root_type, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://bnbdoctor.invalid/{name}.schema.v{version}.json",
        "title": f"{title}, schema version {version}",
        **root,
        "$defs": defs,
    }


def write_schema(schema: dict[str, Any]) -> None:
    """A schema on stdout as the committed copy under ``docs/`` holds it."""
    sys.stdout.write(json.dumps(schema, indent=2) + "\n")


def report_schema() -> dict[str, Any]:
    return dataclass_schema(Report, name="report", version=SCHEMA_VERSION, title="bnbdoctor report")


if __name__ == "__main__":
    write_schema(report_schema())
