"""Where a fleet's reports come from: files, folders, globs and JSON Lines on stdin, one at a time.

:func:`iter_reports` yields ``(node, source, text)`` for each report, or ``(node, source, error)``
for one that cannot be read, never holding more than one report's text. A report's node is its
file name without ``.json`` (``bnbdoctor --json -o DIR/%N.json`` names it so); a report read from
JSON Lines (stdin or a ``.jsonl`` file) is named by the node variable it recorded
(``SLURMD_NODENAME``, ``NODE_NAME``) or else by its line.

Input is bounded: a report file is read to at most 32 MiB, a JSON Lines line too (a longer line, text
that is not text, ``/dev/zero``, ``/dev/urandom``: one unreadable entry, and the rest of that input is
not read). A report may be UTF-8 (with or without a byte order mark) or UTF-16 (PowerShell 5's ``>``).
What a folder or a glob finds that is not a regular file (a FIFO named ``*.json``) is unreadable, never
waited on; a FIFO named on the command line is read, opened without waiting for a writer.
"""

from __future__ import annotations

import glob
import io
import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, BinaryIO

from bnbdoctor.charset import decode_document, sniff_encoding
from bnbdoctor.contract import NODE_NAME_VARIABLES
from bnbdoctor.report_io import MAX_REPORT_BYTES

#: What a folder is searched for (not recursively): reports and JSON Lines files.
REPORT_SUFFIXES = (".json", ".jsonl", ".ndjson")
_LINES_SUFFIXES = (".jsonl", ".ndjson")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Item:
    """One report's text (``error`` None) or why it could not be read (``text`` empty)."""

    node: str
    source: str
    text: str = ""
    error: str | None = None


class InputError(Exception):
    """A path that names nothing (no such file, a glob matching nothing): a usage error."""


class Found(str):
    """A path a folder or a glob found (not named on the command line): read only if it is a regular file."""

    __slots__ = ()


def _node_of_path(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (*REPORT_SUFFIXES, ".md"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _expand(argument: str) -> list[str]:
    if argument == "-":
        return ["-"]
    if os.path.isdir(argument):
        names = sorted(n for n in os.listdir(argument) if n.endswith(REPORT_SUFFIXES) and not n.startswith("."))
        return [Found(os.path.join(argument, n)) for n in names]
    if os.path.exists(argument):
        return [argument]
    if _GLOB_CHARS & set(argument):
        matches = sorted(glob.glob(argument))
        if matches:
            return [p for m in matches for p in (_expand(m) if os.path.isdir(m) else [Found(m)])]
        raise InputError(f"{argument}: no file matches")
    raise InputError(f"{argument}: no such file or folder")


def _node_from_line(line: str, fallback: str) -> str:
    """The node a JSON Lines report recorded in its env, else ``fallback``; a cheap look, no decoding."""
    for variable in NODE_NAME_VARIABLES:  # the variables a report's env may carry that name its node
        at = line.find(f'"{variable}":')
        if at >= 0:
            try:
                value, _ = json.JSONDecoder().raw_decode(line, line.index('"', at + len(variable) + 3))
            except ValueError:
                continue
            if isinstance(value, str) and value and "<" not in value:
                return value
    return fallback


def _lines(handle: IO[str], source: str) -> Iterator[Item]:
    """Each report line of a text stream, read a bounded line at a time: a line longer than a report may be,
    or one that is not text, is one unreadable entry and ends the stream (the rest is not JSON Lines)."""
    number = 0
    while True:
        where = f"{source}:{number + 1}"
        try:
            line = handle.readline(MAX_REPORT_BYTES + 1)
        except UnicodeDecodeError:
            yield Item(where, where, error=f"{where}: not text (binary data); the rest of {source} is not read")
            return
        if not line:
            return
        number += 1
        if len(line) > MAX_REPORT_BYTES:
            yield Item(
                where,
                where,
                error=f"{where}: a line of more than {MAX_REPORT_BYTES // 2**20} MiB; the rest of {source} is not read",
            )
            return
        if "\x00" in line:
            yield Item(where, where, error=f"{where}: not text (NUL bytes); the rest of {source} is not read")
            return
        if not line.strip():
            continue
        yield Item(_node_from_line(line, where), where, text=line)


def _binary_lines(binary: BinaryIO, source: str) -> Iterator[Item]:
    """JSON Lines from a byte stream, in the encoding its first bytes show (UTF-8, UTF-16 with a BOM)."""
    peek = getattr(binary, "peek", None)
    head = peek(64)[:64] if peek is not None else b""
    reader = io.TextIOWrapper(binary, encoding=sniff_encoding(head), errors="strict", newline=None)
    try:
        yield from _lines(reader, source)
    finally:
        reader.detach()  # the stream stays open: stdin is not the reader's to close


def _open(path: str) -> BinaryIO:
    """``path`` opened for reading without waiting for a FIFO's writer (one that has none reads as empty)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _file(path: str) -> Iterator[Item]:
    node = _node_of_path(path)
    try:
        if isinstance(path, Found):
            found = os.stat(path)
            if not stat.S_ISREG(found.st_mode):
                yield Item(node, path, error=f"{path} is not a regular file (a FIFO, a device); not read")
                return
        with _open(path) as binary:
            if path.endswith(_LINES_SUFFIXES):
                yield from _binary_lines(binary, path)
                return
            size = os.fstat(binary.fileno()).st_size  # a buffer of the file's size, not of the limit
            data = binary.read(min(size, MAX_REPORT_BYTES) + 1 if size else MAX_REPORT_BYTES + 1)
    except OSError as exc:
        yield Item(node, path, error=f"cannot read {path}: {exc.strerror or exc}")
        return
    if len(data) > MAX_REPORT_BYTES:
        yield Item(node, path, error=f"{path} is larger than {MAX_REPORT_BYTES // 2**20} MiB")
        return
    yield Item(node, path, text=decode_document(data))


def resolve_paths(arguments: list[str]) -> list[str]:
    """The files (and ``-``) that ``arguments`` name; raises :class:`InputError` for a path naming nothing."""
    return [path for argument in arguments for path in _expand(argument)]


def _stdin(stdin: IO[str] | None) -> Iterator[Item]:
    stream = stdin if stdin is not None else sys.stdin
    binary = getattr(stream, "buffer", None)
    if binary is not None:
        yield from _binary_lines(binary, "stdin")
    else:  # a text stream of its own (a test's StringIO)
        yield from _lines(stream, "stdin")


def iter_paths(paths: list[str], stdin: IO[str] | None = None) -> Iterator[Item]:
    """Each report in the resolved ``paths`` (:func:`resolve_paths`) in turn."""
    for path in paths:
        if path == "-":
            yield from _stdin(stdin)
        else:
            yield from _file(path)


def iter_reports(arguments: list[str], stdin: IO[str] | None = None) -> Iterator[Item]:
    """Each report named by ``arguments`` in turn; raises :class:`InputError` for a path naming nothing.

    Every argument is resolved before the first report is read, so a mistyped path fails at once.
    """
    yield from iter_paths(resolve_paths(arguments), stdin)
