"""Reading a saved report back (``--from``) and redacting one before it leaves the machine.

A report is untrusted input: it may be truncated, not JSON, from another schema, or hostile
(huge strings or numbers, deep nesting, wrong types, text that is not Unicode). Each problem is
one :class:`ReportError` line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from bnbdoctor.charset import decode_document
from bnbdoctor.contract import note
from bnbdoctor.facts import SCHEMA_VERSION, Facts
from bnbdoctor.redact import Redactor
from bnbdoctor.report import Report
from bnbdoctor.serde import DecodeError, field_names, from_dict, to_jsonable

MAX_REPORT_BYTES = 32 * 1024 * 1024
MAX_STRING = 200_000
MAX_DEPTH = 40
#: Values (objects, lists, strings, numbers) in one report. A recorded machine's report holds about
#: 1,200, and every kept log explained at once 3,600; replaying costs ~30 us a value (diagnosis, redaction,
#: three renderers), so this bounds a replay near 0.35 s. The fuzz campaign's one slow report held 50,000.
MAX_VALUES = 12_000
#: No field of a report (byte counts, versions, line numbers) comes near this; a larger integer
#: would overflow the float arithmetic of the renderers.
MAX_INT = 2**64
#: Longest key shown in an error's path; a longer (or unprintable) key is shown abbreviated.
MAX_KEY_SHOWN = 60
#: schema version -> function upgrading a report dict to the next version. Empty while only
#: version 1 exists; a future version adds its step here instead of rejecting old reports.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_FENCED_JSON = re.compile(r"```json\s*\n(\{.*?\})\s*\n```", re.DOTALL)


class ReportError(ValueError):
    """A report that cannot be replayed; the message is one line naming what is wrong."""


#: What each kind of bnbdoctor document is, by its ``source.kind`` (or, for the fleet's and merge-check's,
#: its top-level ``kind``): the command that writes it. Only a machine's report (``live``, ``fixture``) holds
#: the facts of a machine: ``--from`` replays it and ``fleet`` reads it as a node. An ``explain`` report holds
#: what a log showed (no torch in it is no torch on the machine), a ``fit`` or ``lint`` report no machine at all.
REPORT_KINDS: dict[str, str] = {
    "live": "a machine's report (bnbdoctor --json)",
    "fixture": "a recorded machine's report (bnbdoctor --fixture NAME --json)",
    "log": "a `bnbdoctor explain` report (what a log shows, not a machine)",
    "fit": "a `bnbdoctor fit` report (a model's placement, not a machine)",
    "lint": "a `bnbdoctor lint` report (code, not a machine)",
    "fleet": "a `bnbdoctor fleet` report (many machines' summaries)",
    "merge-check": "a `bnbdoctor merge-check` report (an adapter, not a machine)",
}
MACHINE_KINDS = frozenset({"live", "fixture"})


def report_kind(data: dict[str, Any]) -> str | None:
    """The kind of a decoded bnbdoctor document (a key of :data:`REPORT_KINDS`, or what it says); None when it
    names none (a report older than the field)."""
    top = data.get("kind")
    if isinstance(top, str):
        return top
    source = data.get("source")
    kind = source.get("kind") if isinstance(source, dict) else None
    return kind if isinstance(kind, str) else None


def require_machine_report(kind: str | None, source: str, reader: str) -> None:
    """Refuse (ReportError) a document that is not a machine's report; ``reader`` says what takes only those."""
    if kind is None or kind in MACHINE_KINDS:
        return
    what = REPORT_KINDS.get(kind, f"a report of kind {kind!r}")
    raise ReportError(f"{source} is {what}; {reader} takes only a machine's report (written by bnbdoctor --json)")


def _read(source: str) -> str:
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_REPORT_BYTES + 1)
        else:
            # a FIFO is opened without waiting for a writer (one that has none reads as empty)
            descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            os.set_blocking(descriptor, True)
            with os.fdopen(descriptor, "rb") as handle:
                data = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise ReportError(f"cannot read {source}: {exc.strerror or exc}") from None
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"{source} is larger than {MAX_REPORT_BYTES // (1024 * 1024)} MiB; not a bnbdoctor report")
    return decode_document(data)  # UTF-8, with or without a BOM, or UTF-16 (PowerShell 5's >)


def _is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (a ``\\udce9`` escape in the JSON): it is not
    text, and writing it out would fail. bnbdoctor itself never writes one."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _key_path(where: str, key: str) -> str:
    """``where.key`` for an error message, abbreviated so that the message stays one short line."""
    if key.isprintable() and len(key) <= MAX_KEY_SHOWN and _is_unicode(key):
        return f"{where}.{key}"
    return f"{where}.{ascii(key[:MAX_KEY_SHOWN])[1:-1]}…"


@dataclass
class _Budget:
    """How many more values a report may hold, and its name for the error."""

    source: str
    left: int = MAX_VALUES


def _check_shape(value: Any, where: str = "report", depth: int = 0, budget: _Budget | None = None) -> None:
    """Reject nesting, sizes and values no real report has, before decoding."""
    budget = budget if budget is not None else _Budget(where)
    budget.left -= 1
    if budget.left < 0:
        raise ReportError(
            f"{budget.source}: more than {MAX_VALUES:,} values (a report holds about 1,000); not a bnbdoctor report"
        )
    if depth > MAX_DEPTH:
        raise ReportError(f"{where}: nested deeper than {MAX_DEPTH} levels; not a bnbdoctor report")
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ReportError(f"{where}: a string of {len(value)} characters; not a bnbdoctor report")
        if not _is_unicode(value):
            raise ReportError(f"{where}: text that is not valid Unicode (a lone surrogate); not a bnbdoctor report")
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if abs(value) >= MAX_INT:
            raise ReportError(f"{where}: a number of {len(str(abs(value)))} digits; not a bnbdoctor report")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ReportError(f"{where}: a number that is not finite ({value}); not a bnbdoctor report")
    elif isinstance(value, dict):
        for key, item in value.items():
            path = _key_path(where, key)
            if not _is_unicode(key):
                raise ReportError(f"{path}: a key that is not valid Unicode (a lone surrogate); not a bnbdoctor report")
            _check_shape(item, path, depth + 1, budget)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_shape(item, f"{where}[{index}]", depth + 1, budget)


def check_shape(value: Any, source: str = "report") -> None:
    """The shape limits of :func:`parse_report` on an already decoded value (the fleet's typed subset)."""
    _check_shape(value, source)


def _loads(text: str, source: str) -> Any:
    """``json.loads``, each way it can fail turned into one line."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ReportError(f"{source}: nested too deeply to be a bnbdoctor report") from None
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{source} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); was it cut off?"
        ) from None
    except ValueError as exc:
        # Not a JSONDecodeError: Python refuses to convert an integer literal of more than
        # sys.get_int_max_str_digits() digits (4300 by default); the message names that limit.
        if "integer string conversion" in str(exc):
            raise ReportError(f"{source}: a number of thousands of digits; not a bnbdoctor report") from None
        raise ReportError(f"{source} is not valid JSON ({' '.join(str(exc).split())[:200]})") from None


def parse_report(text: str, source: str = "report") -> dict[str, Any]:
    """The report object from JSON text, or from the fenced JSON block of a Markdown report."""
    stripped = text.strip()
    if not stripped:
        raise ReportError(f"{source} is empty")
    if not stripped.startswith(("{", "[")):
        match = _FENCED_JSON.search(text)
        if match is None:
            raise ReportError(f"{source} is neither JSON nor a Markdown report with a ```json block")
        stripped = match.group(1)
    data = _loads(stripped, source)
    if not isinstance(data, dict):
        raise ReportError(f"{source} holds a JSON {type(data).__name__}, not a bnbdoctor report object")
    if data.get("tool") != "bnbdoctor":
        raise ReportError(f'{source} is not a bnbdoctor report (no "tool": "bnbdoctor")')
    _check_shape(data, source)
    return data


def check_schema_version(version: Any, source: str = "report") -> int:
    """A report's ``schema_version``, if this bnbdoctor can read it (older ones are migrated); else ReportError."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError(f"{source}: schema_version is missing or not a number")
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"{source} uses report schema {version}, newer than this bnbdoctor reads "
            f"({SCHEMA_VERSION}); upgrade bnbdoctor to replay it"
        )
    return version


def migrate(data: dict[str, Any], source: str = "report") -> dict[str, Any]:
    version = check_schema_version(data.get("schema_version"), source)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ReportError(
                f"{source} uses report schema {version}, which this bnbdoctor (schema "
                f"{SCHEMA_VERSION}) can no longer read"
            )
        data = step(data)
        version = data["schema_version"]
    return data


def load_facts(source: str) -> tuple[Facts, dict[str, Any]]:
    """The facts of a saved report (file path or "-"), ready to re-diagnose, and its header."""
    data = migrate(parse_report(_read(source), source), source)
    require_machine_report(report_kind(data), source, "--from")
    facts_data = data.get("facts")
    if not isinstance(facts_data, dict):
        raise ReportError(f"{source}: the report carries no facts object")
    try:
        facts = from_dict(Facts, facts_data, "facts")
    except DecodeError as exc:
        raise ReportError(f"{source}: {exc}") from None
    facts.source = {**facts.source, "replayed_from": source}
    return facts, data


def redactor_here(facts: Facts) -> Redactor:
    """The redactor for facts read from a log or a saved report: the names its paths show, and this
    machine's (a log is most often pasted, and a report replayed, where it was made)."""
    from bnbdoctor.hosts.live import LiveHost

    return Redactor.for_text(json.dumps(to_jsonable(facts))).also_machine(LiveHost().os_info())


def redact_report(report: Report, redactor: Redactor) -> Report:
    """A redacted copy of the report (facts, findings and all)."""
    data = redactor.walk(to_jsonable(report), field_names(Report))
    redacted = from_dict(Report, data)
    redacted.redaction = redactor.summary()
    return redacted


#: What every command says when ``--no-redact`` keeps the names (on stderr, the report itself says "NOT redacted").
NOT_REDACTED = "redaction is off (--no-redact): the report may contain your home folder, user and host names"
_Document = TypeVar("_Document")


def add_redaction_arguments(parser: argparse.ArgumentParser, kept: str = "home folder, user and host names") -> None:
    """``--no-redact`` and ``--show-redactions``, as every command that writes a document takes them."""
    parser.add_argument(
        "--no-redact",
        action="store_true",
        help=f"keep {kept} in the report (redacted by default; a note goes to stderr)",
    )
    parser.add_argument(
        "--show-redactions",
        action="store_true",
        help="list on stderr what redaction replaced (the originals never enter the report)",
    )


def redacted_for_output(
    document: _Document,
    redactor: Redactor | Callable[[], Redactor],
    redact: Callable[[_Document, Redactor], _Document],
    args: argparse.Namespace,
) -> _Document:
    """The document every format of a command shows: redacted by ``redact`` with ``redactor`` (a callable is
    made only when needed), unless ``args.no_redact`` (then a note on stderr); ``args.show_redactions``
    lists the originals on stderr, never in the report. The doctor, explain, fit, lint and merge-check
    all come here, so that they agree on what is kept."""
    if getattr(args, "no_redact", False):
        note(NOT_REDACTED)
        return document
    chosen = redactor if isinstance(redactor, Redactor) else redactor()
    redacted = redact(document, chosen)
    if getattr(args, "show_redactions", False):
        for rule, originals in sorted(chosen.originals.items()):
            note(f"redacted [{rule}]: {', '.join(sorted(originals))}")
        if not chosen.originals:
            note("nothing needed redaction")
    return redacted


def redactor_for_this_machine() -> Redactor:
    """The redactor for a document made from this machine's files (fit, lint, merge-check): its home folder,
    user and host names, and secrets wherever they appear."""
    from bnbdoctor.hosts.live import LiveHost

    return Redactor.for_machine(LiveHost().os_info())
