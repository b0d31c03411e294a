"""Runs the merge-check engine script in the patient interpreter and reads its one-line JSON answer.

The script is :mod:`bnbdoctor.merge_check.engine_script`'s source, read as text (bnbdoctor never
imports torch in its own process), with one ``main(request)`` call appended, sent through
:meth:`Host.run_python`, time-limited. Anything else it prints (warnings, progress) is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bnbdoctor.hosts.base import CommandResult, Host

MARKER = "@@BNBDOCTOR-MERGE@@"


@lru_cache(maxsize=1)
def engine_source() -> str:
    """The engine script's source, from bnbdoctor's own files."""
    return (Path(__file__).with_name("engine_script.py")).read_text(encoding="utf-8")


def script_with_request(request: dict[str, Any]) -> str:
    return engine_source() + f"\n\nmain(json.loads({json.dumps(request)!r}))\n"


@dataclass
class EngineAnswer:
    """The engine's answer, or why there is none (``failure``)."""

    data: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.data.get("ok"))

    @property
    def error(self) -> str | None:
        return self.failure or self.data.get("error")


def parse_answer(result: CommandResult) -> EngineAnswer:
    data = result.marked_answer(MARKER)
    if data is not None:
        return EngineAnswer(data=data, duration_s=result.duration_s)
    if result.ok:
        return EngineAnswer(failure="the merge-check engine printed no answer", duration_s=result.duration_s)
    return EngineAnswer(failure=result.describe_failure(), duration_s=result.duration_s)


def run_engine(host: Host, python: str, request: dict[str, Any], timeout: float) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess."""
    result = host.run_python(python, script_with_request(request), timeout=timeout, purpose="merge-check")
    return parse_answer(result)
