"""Runs the placement engine (``engine_script.py``) in the patient interpreter and reads its answer.

The script is sent through :meth:`Host.run_python`, time-limited, with one JSON request appended.
It answers with one ``@@BNBDOCTOR-FIT@@{...}`` line; anything else it printed (transformers'
warnings) is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from bnbdoctor.hosts.base import CommandResult, Host

MARKER = "@@BNBDOCTOR-FIT@@"
#: Errors that mean the input is wrong, not the engine: exit 2.
INPUT_ERRORS = ("unknown_model_type", "unknown_architecture", "remote_code", "config_error")


@lru_cache(maxsize=1)
def engine_script() -> str:
    """The engine's source (bnbdoctor's own file, not the machine's)."""
    with open(os.path.join(os.path.dirname(__file__), "engine_script.py"), encoding="utf-8") as handle:
        return handle.read()


def script_with_request(request: dict[str, Any]) -> str:
    return engine_script() + f"\n\nmain(json.loads({json.dumps(request)!r}))\n"


@dataclass
class EngineAnswer:
    """The engine's JSON answer, or why there is none (``failure``)."""

    data: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.data.get("ok"))

    @property
    def error_kind(self) -> str | None:
        return self.data.get("error_kind") if self.failure is None else "run_failed"

    @property
    def error(self) -> str | None:
        return self.failure or self.data.get("error")


def parse_answer(result: CommandResult) -> EngineAnswer:
    for line in reversed(result.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError:
                break
            if isinstance(data, dict):
                return EngineAnswer(data=data, duration_s=result.duration_s)
            break
    if result.ok:
        return EngineAnswer(failure="the engine printed no answer", duration_s=result.duration_s)
    return EngineAnswer(failure=result.describe_failure(), duration_s=result.duration_s)


def run_engine(host: Host, python: str, request: dict[str, Any], timeout: float) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess."""
    result = host.run_python(python, script_with_request(request), timeout=timeout, purpose="fit")
    return parse_answer(result)
