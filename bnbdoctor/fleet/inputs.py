"""Where a fleet's reports come from: files, folders, globs and JSON Lines on stdin, one at a time.

:func:`iter_reports` yields ``(node, source, text)`` for each report, or ``(node, source, error)``
for one that cannot be read, never holding more than one report's text. A report's node is its
file name without ``.json`` (``bnbdoctor --json -o DIR/%N.json`` names it so); a report read from
JSON Lines (stdin or a ``.jsonl`` file) is named by the node variable it recorded
(``SLURMD_NODENAME``, ``NODE_NAME``) or else by its line.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

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
        return [os.path.join(argument, n) for n in names]
    if os.path.exists(argument):
        return [argument]
    if _GLOB_CHARS & set(argument):
        matches = sorted(glob.glob(argument))
        if matches:
            return [p for m in matches for p in (_expand(m) if os.path.isdir(m) else [m])]
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
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        if len(line) > MAX_REPORT_BYTES:
            yield Item(where, where, error=f"{where}: a line of more than {MAX_REPORT_BYTES // 2**20} MiB")
            continue
        yield Item(_node_from_line(line, where), where, text=line)


def _file(path: str) -> Iterator[Item]:
    try:
        if path.endswith(_LINES_SUFFIXES):
            with open(path, encoding="utf-8", errors="replace") as handle:
                yield from _lines(handle, path)
            return
        with open(path, "rb") as binary:
            size = os.fstat(binary.fileno()).st_size  # a buffer of the file's size, not of the limit
            data = binary.read(min(size, MAX_REPORT_BYTES) + 1 if size else MAX_REPORT_BYTES + 1)
    except OSError as exc:
        yield Item(_node_of_path(path), path, error=f"cannot read {path}: {exc.strerror or exc}")
        return
    if len(data) > MAX_REPORT_BYTES:
        yield Item(_node_of_path(path), path, error=f"{path} is larger than {MAX_REPORT_BYTES // 2**20} MiB")
        return
    yield Item(_node_of_path(path), path, text=data.decode("utf-8", errors="replace"))


def resolve_paths(arguments: list[str]) -> list[str]:
    """The files (and ``-``) that ``arguments`` name; raises :class:`InputError` for a path naming nothing."""
    return [path for argument in arguments for path in _expand(argument)]


def iter_paths(paths: list[str], stdin: IO[str] | None = None) -> Iterator[Item]:
    """Each report in the resolved ``paths`` (:func:`resolve_paths`) in turn."""
    for path in paths:
        if path == "-":
            yield from _lines(stdin if stdin is not None else sys.stdin, "stdin")
        else:
            yield from _file(path)


def iter_reports(arguments: list[str], stdin: IO[str] | None = None) -> Iterator[Item]:
    """Each report named by ``arguments`` in turn; raises :class:`InputError` for a path naming nothing.

    Every argument is resolved before the first report is read, so a mistyped path fails at once.
    """
    yield from iter_paths(resolve_paths(arguments), stdin)
