"""Runs the placement engine in the patient interpreter and reads its answer.

The engine is one script, assembled once per process from its typed parts
(``bnbdoctor/fit/engine_parts/``, see :mod:`bnbdoctor.fit.script_assembly`), sent through
:meth:`Host.run_python`, time-limited, with one JSON request appended. It answers with one
``@@BNBDOCTOR-FIT@@{...}`` line (:data:`~bnbdoctor.fit_protocol.MARKER`); anything else it printed
(transformers' warnings) is ignored.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from bnbdoctor.fit.script_assembly import assemble
from bnbdoctor.fit_protocol import ERROR_RUN_FAILED, MARKER
from bnbdoctor.hosts.base import CommandResult, Host
from bnbdoctor.hosts.base import EngineAnswer as HostEngineAnswer


@lru_cache(maxsize=1)
def engine_script() -> str:
    """The engine's source, assembled from bnbdoctor's own files (not the machine's); cached."""
    return assemble()


def script_with_request(request: dict[str, Any]) -> str:
    """The script that answers ``request``: the engine, then a call of its ``main``."""
    return engine_script() + f"\n\nmain(json.loads({json.dumps(request)!r}))\n"


class EngineAnswer(HostEngineAnswer):
    """The fit engine's JSON answer, or why there is none (``failure``)."""

    @property
    def error_kind(self) -> str | None:
        return self.data.get("error_kind") if self.failure is None else ERROR_RUN_FAILED


def parse_answer(result: CommandResult) -> EngineAnswer:
    return EngineAnswer.from_result(result, MARKER, "the engine")


def run_engine(host: Host, python: str, request: dict[str, Any], timeout: float) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess."""
    result = host.run_python(python, script_with_request(request), timeout=timeout, purpose="fit")
    return parse_answer(result)
