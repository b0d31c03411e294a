"""The explain pipeline: a log in, a ranked report out (extract -> rules -> ranking -> report).

No I/O besides the stream it is given: the command line (:mod:`bnbdoctor.explain.cli`) and the
app's Explain tab both call these functions.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterable
from typing import BinaryIO

from bnbdoctor.report import Report, build_report
from bnbdoctor.rules.base import Rule


class ExplainError(Exception):
    """Bad input or arguments: one line on stderr, exit 2."""


def explain_stream(stream: BinaryIO, label: str, rules: Iterable[Rule] | None = None) -> Report:
    """Read a log from a binary stream and diagnose it: the whole pipeline, no I/O besides the stream."""
    from bnbdoctor.explain.ranking import judge
    from bnbdoctor.logs.extract import extract
    from bnbdoctor.rules import all_rules, run_rules

    started = time.perf_counter()
    facts, read_s = extract(stream, label)
    rules_started = time.perf_counter()
    chosen = list(rules) if rules is not None else all_rules()
    diagnosis = judge(facts, run_rules(facts, chosen, premises=False))  # judge mutes, after its gates
    report = build_report(facts, diagnosis, started)
    report.timings["read"] = round(read_s, 4)
    report.timings["rules"] = round(time.perf_counter() - rules_started, 4)
    return report


def explain_text(text: str, label: str = "log", rules: Iterable[Rule] | None = None) -> Report:
    """The same, for a log already in memory."""
    return explain_stream(io.BytesIO(text.encode("utf-8", "surrogatepass")), label, rules)


def explain_file(path: str, rules: Iterable[Rule] | None = None) -> Report:
    """The same, for a file (``-`` is standard input). Raises :class:`ExplainError` when unreadable."""
    if path == "-":
        return explain_stream(sys.stdin.buffer, "stdin", rules)
    if os.path.isdir(path):
        raise ExplainError(f"{path}: is a directory")
    try:
        with open(path, "rb") as handle:
            return explain_stream(handle, os.path.basename(path) or path, rules)
    except FileNotFoundError:
        raise ExplainError(f"{path}: no such file") from None
    except OSError as exc:  # permission denied, an I/O error while reading
        raise ExplainError(f"{path}: {exc.strerror or exc}") from None
