"""Runs the merge-check engine script in the patient interpreter and reads its one-line JSON answer.

The script is :mod:`bnbdoctor.merge_check.engine_script`'s source, read as text (bnbdoctor never
imports torch in its own process), with one ``main(request)`` call appended, sent through
:meth:`Host.run_python`, time-limited. Its per-layer progress lines on stderr are read as they come
(:class:`LayerProgress`); anything else it prints (warnings) is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from bnbdoctor.hosts.base import CommandResult, EngineAnswer, Host
from bnbdoctor.render.merge_check_words import short_module

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


class LayerProgress:
    """Hears the engine's stderr while it runs: which layer it is on (``position`` of ``count``, 0 before the
    first), shown through ``update`` as ``bnbdoctor merge-check: layer 3/16 model.layers.1.self_attn.q_proj``;
    other lines (warnings) are ignored. Called from the host's reader thread."""

    def __init__(self, update: Callable[[str], None] | None = None) -> None:
        self.position = 0
        self.count = 0
        self._update = update

    def __call__(self, line: str) -> None:
        found = _PROGRESS_LINE.fullmatch(line.strip())
        if found is None:
            return
        self.position, self.count = int(found[1]), int(found[2])
        if self._update is not None:
            self._update(f"bnbdoctor merge-check: layer {self.position}/{self.count} {short_module(found[3])}")

    def where(self, seconds: float, timed_out: bool) -> str:
        """Where a run that stopped after ``seconds`` had got to, and for a timeout the limit that would do."""
        if not self.count:
            return ""
        said = f"at layer {self.position}/{self.count}"
        done = self.position - 1
        if timed_out and done > 0:
            needed = seconds / done * self.count * 1.2
            said += f"; all {self.count} layers need about {needed:.0f} s here: pass --timeout {needed:.0f}"
            said += f" (or --max-layers {done})"
        return said


def run_engine(
    host: Host,
    python: str,
    request: dict[str, Any],
    timeout: float,
    on_stderr_line: Callable[[str], None] | None = None,
) -> EngineAnswer:
    """Run one request; never raises for a failed or hung subprocess. ``on_stderr_line`` hears the engine's
    stderr as it runs (a :class:`LayerProgress`)."""
    result = host.run_python(
        python, script_with_request(request), timeout=timeout, purpose="merge-check", on_stderr_line=on_stderr_line
    )
    return parse_answer(result)
