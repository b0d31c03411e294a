"""The explain pipeline: a log in, a ranked report out (extract -> the engine's EXPLAIN pipeline -> report).

No I/O besides the stream it is given: the command line (:mod:`bnbdoctor.explain.cli`) and the
app's Explain tab both call these functions.
"""

from __future__ import annotations

import io
import os
import re
import select
import stat
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
#: How long explain waits for the next bytes from a pipe or a FIFO: a writer that stalls without closing its end
#: (a ``tail -f`` of a finished job, a FIFO held open) would otherwise keep it waiting forever.
READ_IDLE_S = 30.0
#: The start of a file that is judged text or not: a console log is text from its first line.
TEXT_SAMPLE = 64 * 1024
#: The share of the sample that may be NUL bytes, other control bytes or bytes that are not UTF-8 before a
#: file is "not text": a log in cp1252 with accents, or one with a stray colour byte, stays far below it;
#: random bytes, an image or a model file are far above it (urandom: about two thirds).
MOST_NOT_TEXT = 0.3
#: What a console log does not hold: control characters other than tab, newlines, form feed, escape
#: (colours), backspace and bell; DEL; U+FFFD, what a byte that is not UTF-8 decodes to.
_NOT_TEXT = re.compile("[\x00-\x06\x0b\x0e-\x1a\x1c-\x1f\x7f\ufffd]+")


class ExplainError(Exception):
    """Bad input or arguments: one line on stderr, exit 2."""


def not_text(sample: bytes) -> str | None:
    """Why ``sample`` (the start of a file) is not a text log, or None when it is text: UTF-8 or UTF-16
    (PowerShell's ``>``), as the log reader decodes it, with few NUL, control or undecodable bytes."""
    if not sample:
        return None
    from bnbdoctor.logs.clean import sniff

    encoding = sniff(sample)
    text = sample.decode(encoding, errors="replace")
    odd = sum(map(len, _NOT_TEXT.findall(text)))
    if odd <= MOST_NOT_TEXT * len(text):
        return None
    share = f"{round(100 * odd / len(text))}% of its first {len(sample):,} bytes are not text"
    if "\x00" in text:
        return f"not a text file: it holds NUL bytes ({share})"
    return f"not a text file: {share} (not UTF-8, or control bytes)"


class _Bounded:
    """A binary stream that refuses to be read past ``limit`` bytes (an :class:`ExplainError`), nor at all
    when its first bytes are not text (:func:`not_text`)."""

    def __init__(self, stream: BinaryIO, label: str, limit: int = MAX_LOG_BYTES) -> None:
        self._stream, self._label, self._left = stream, label, limit
        self._checked = False
        self._pipe = _pipe_descriptor(stream)
        self._got = 0

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            if self._next(1):
                raise ExplainError(f"{self._label}: longer than {_MIB} MiB; not a console log")
            return b""
        data = self._next(self._left if size is None or size < 0 else min(size, self._left))
        self._left -= len(data)
        self._got += len(data)
        if not self._checked and data:
            self._checked = True
            reason = not_text(data[:TEXT_SAMPLE])
            if reason is not None:
                raise ExplainError(f"{self._label}: {reason}; explain reads a console log saved as text")
        return data

    def isatty(self) -> bool:
        """Whether the stream is a terminal, where one Ctrl-D ends the input (``logs.clean`` stops there)."""
        return self._stream.isatty()

    def _next(self, size: int) -> bytes:
        """Up to ``size`` bytes; from a pipe, what has arrived (a short read is not its end: the reader reads
        on until an empty one), waiting at most :data:`READ_IDLE_S` for it."""
        if self._pipe is None:
            return self._stream.read(size)
        ready, _, _ = select.select([self._pipe], [], [], READ_IDLE_S)
        if not ready:
            after = f"after {self._got:,} bytes " if self._got else ""
            raise ExplainError(
                f"{self._label}: nothing more arrived {after}for {READ_IDLE_S:g} s (the writer is silent but has "
                "not closed the pipe); explain reads a log that ends: save it to a file first"
            )
        return os.read(self._pipe, size)


def _pipe_descriptor(stream: BinaryIO) -> int | None:
    """The descriptor of a pipe, FIFO or socket to wait on with a time limit; None for a file, a terminal
    (a person pasting takes their time) or where ``select`` takes only sockets (Windows)."""
    if os.name == "nt":
        return None
    try:
        descriptor = stream.fileno()
        mode = os.fstat(descriptor).st_mode
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return descriptor if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


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
