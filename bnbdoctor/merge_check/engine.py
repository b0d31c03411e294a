"""Runs the merge-check engine script in the patient interpreter and reads its one-line JSON answer.

The script is :mod:`bnbdoctor.merge_check.engine_script`'s source, read as text (bnbdoctor never
imports torch in its own process), with one ``main(request)`` call appended, sent through
:meth:`Host.run_python`, time-limited. Its per-layer progress lines on stderr are read as they come
(:func:`progress_listener`); anything else it prints (warnings) is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from bnbdoctor.hosts.base import CommandResult, EngineAnswer, Host
from bnbdoctor.merge_check.result import short_module

MARKER = "@@BNBDOCTOR-MERGE@@"
#: The engine's stderr line as a layer's measurement begins (``PROGRESS`` in the engine script).
_PROGRESS_LINE = re.compile(r"merge-check: layer (\d+)/(\d+) (\S+)")


@lru_cache(maxsize=1)
def engine_source() -> str:
    """The engine script's source, from bnbdoctor's own files."""
    return (Path(__file__).with_name("engine_script.py")).read_text(encoding="utf-8")


def script_with_request(request: dict[str, Any]) -> str:
    return engine_source() + f"\n\nmain(json.loads({json.dumps(request)!r}))\n"


def parse_answer(result: CommandResult) -> EngineAnswer:
    return EngineAnswer.from_result(result, MARKER, "the merge-check engine")


def progress_listener(update: Callable[[str], None]) -> Callable[[str], None]:
    """A stderr line listener that shows the engine's "layer i/N MODULE" lines through ``update``
    (``bnbdoctor merge-check: layer 3/16 model.layers.1.self_attn.q_proj``) and ignores the rest."""

    def heard(line: str) -> None:
        found = _PROGRESS_LINE.fullmatch(line.strip())
        if found is None:
            return
        position, count, module = found.groups()
        update(f"bnbdoctor merge-check: layer {position}/{count} {short_module(module)}")

    return heard


def run_engine(
    host: Host,
    python: str,
    request: dict[str, Any],
    timeout: float,
    on_stderr_line: Callable[[str], None] | None = None,
) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess. ``on_stderr_line`` hears the engine's
    stderr as it runs (see :func:`progress_listener`)."""
    result = host.run_python(
        python, script_with_request(request), timeout=timeout, purpose="merge-check", on_stderr_line=on_stderr_line
    )
    return parse_answer(result)
