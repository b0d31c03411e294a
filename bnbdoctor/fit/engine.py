"""Runs the placement engine in the patient interpreter and reads its answer.

The engine is one script, assembled once per process from its typed parts
(``bnbdoctor/fit/engine_parts/``, see :mod:`bnbdoctor.fit.script_assembly`), sent through
:meth:`Host.run_python`, time-limited, with one JSON request appended. It answers with one
``@@BNBDOCTOR-FIT@@{...}`` line (:data:`~bnbdoctor.fit_protocol.MARKER`); anything else it printed
(transformers' warnings) is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from bnbdoctor.fit.script_assembly import assemble
from bnbdoctor.fit_protocol import ERROR_RUN_FAILED, MARKER
from bnbdoctor.hosts.base import CommandResult, Host


@lru_cache(maxsize=1)
def engine_script() -> str:
    """The engine's source, assembled from bnbdoctor's own files (not the machine's); cached."""
    return assemble()


def script_with_request(request: dict[str, Any]) -> str:
    """The script that answers ``request``: the engine, then a call of its ``main``."""
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
        return self.data.get("error_kind") if self.failure is None else ERROR_RUN_FAILED

    @property
    def error(self) -> str | None:
        return self.failure or self.data.get("error")


def parse_answer(result: CommandResult) -> EngineAnswer:
    data = result.marked_answer(MARKER)
    if data is not None:
        return EngineAnswer(data=data, duration_s=result.duration_s)
    if result.ok:
        return EngineAnswer(failure="the engine printed no answer", duration_s=result.duration_s)
    return EngineAnswer(failure=result.describe_failure(), duration_s=result.duration_s)


def run_engine(host: Host, python: str, request: dict[str, Any], timeout: float) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess."""
    result = host.run_python(python, script_with_request(request), timeout=timeout, purpose="fit")
    return parse_answer(result)
