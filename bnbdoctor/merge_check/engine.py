"""Runs the merge-check engine script in the patient interpreter and reads its one-line JSON answer.

The script is :mod:`bnbdoctor.merge_check.engine_script`'s source, read as text (bnbdoctor never
imports torch in its own process), with one ``main(request)`` call appended, sent through
:meth:`Host.run_python`, time-limited. Anything else it prints (warnings, progress) is ignored.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from bnbdoctor.hosts.base import CommandResult, EngineAnswer, Host

MARKER = "@@BNBDOCTOR-MERGE@@"


@lru_cache(maxsize=1)
def engine_source() -> str:
    """The engine script's source, from bnbdoctor's own files."""
    return (Path(__file__).with_name("engine_script.py")).read_text(encoding="utf-8")


def script_with_request(request: dict[str, Any]) -> str:
    return engine_source() + f"\n\nmain(json.loads({json.dumps(request)!r}))\n"


def parse_answer(result: CommandResult) -> EngineAnswer:
    return EngineAnswer.from_result(result, MARKER, "the merge-check engine")


def run_engine(host: Host, python: str, request: dict[str, Any], timeout: float) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess."""
    result = host.run_python(python, script_with_request(request), timeout=timeout, purpose="merge-check")
    return parse_answer(result)
