"""The explain pipeline: a log in, a ranked report out (extract -> the engine's EXPLAIN pipeline -> report).

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

#: The longest log read (a console log of a failure is kilobytes; the benchmark reads 100 MB).
#: An endless stream (``/dev/zero``, a FIFO that never closes its end) ends here.
MAX_LOG_BYTES = 512 * 1024 * 1024
_MIB = MAX_LOG_BYTES // (1024 * 1024)


class ExplainError(Exception):
    """Bad input or arguments: one line on stderr, exit 2."""


class _Bounded:
    """A binary stream that refuses to be read past ``limit`` bytes (an :class:`ExplainError`)."""

    def __init__(self, stream: BinaryIO, label: str, limit: int = MAX_LOG_BYTES) -> None:
        self._stream, self._label, self._left = stream, label, limit

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            if self._stream.read(1):
                raise ExplainError(f"{self._label}: longer than {_MIB} MiB; not a console log")
            return b""
        data = self._stream.read(self._left if size is None or size < 0 else min(size, self._left))
        self._left -= len(data)
        return data

    def isatty(self) -> bool:
        """Whether the stream is a terminal, where one Ctrl-D ends the input (``logs.clean`` stops there)."""
        return self._stream.isatty()


def _printable(path: str) -> str:
    """A path as it can be shown and written: a name that is not UTF-8 keeps its bytes as escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def explain_stream(stream: BinaryIO, label: str, rules: Iterable[Rule] | None = None) -> Report:
    """Read a log from a binary stream and diagnose it: the whole pipeline, no I/O besides the stream."""
    from bnbdoctor.logs.extract import extract
    from bnbdoctor.rules import all_rules, run_rules
    from bnbdoctor.rules.engine import EXPLAIN

    started = time.perf_counter()
    facts, read_s = extract(stream, label)
    rules_started = time.perf_counter()
    chosen = list(rules) if rules is not None else all_rules()
    diagnosis = run_rules(facts, chosen, EXPLAIN)
    report = build_report(facts, diagnosis, started)
    report.timings["read"] = round(read_s, 4)
    report.timings["rules"] = round(time.perf_counter() - rules_started, 4)
    return report


def explain_text(text: str, label: str = "log", rules: Iterable[Rule] | None = None) -> Report:
    """The same, for a log already in memory."""
    return explain_stream(io.BytesIO(text.encode("utf-8", "surrogatepass")), label, rules)


def explain_file(path: str, rules: Iterable[Rule] | None = None) -> Report:
    """The same, for a file (``-`` is standard input). Raises :class:`ExplainError` when unreadable.

    At most :data:`MAX_LOG_BYTES` are read; a FIFO is opened without waiting for a writer (one
    that has none reads as empty)."""
    if path == "-":
        return explain_stream(_Bounded(sys.stdin.buffer, "stdin"), "stdin", rules)  # type: ignore[arg-type]
    shown = _printable(path)
    if os.path.isdir(path):
        raise ExplainError(f"{shown}: is a directory")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ExplainError(f"{shown}: no such file") from None
    except OSError as exc:  # permission denied, a symlink loop
        raise ExplainError(f"{shown}: {exc.strerror or exc}") from None
    try:
        os.set_blocking(descriptor, True)
        size = os.fstat(descriptor).st_size
        if size > MAX_LOG_BYTES:
            raise ExplainError(f"{shown}: {size // (1024 * 1024)} MiB, longer than {_MIB} MiB; not a console log")
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    try:
        with handle:
            label = _printable(os.path.basename(path) or path)
            return explain_stream(_Bounded(handle, shown), label, rules)  # type: ignore[arg-type]
    except OSError as exc:  # an I/O error while reading, a folder on a platform that opens one
        raise ExplainError(f"{shown}: {exc.strerror or exc}") from None
