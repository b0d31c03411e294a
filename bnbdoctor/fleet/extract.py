"""One report's text boiled down to a :class:`~.model.NodeSummary`, without decoding all of it.

A report as ``--json`` writes it is indented by two spaces a level, and JSON strings hold no raw
newline, so a line that starts with exactly ``2k`` spaces and a quote is a key ``k`` levels deep.
:func:`summarize` finds the few members a fingerprint needs that way and decodes only those
(about a tenth of a report), which keeps 10,000 reports within seconds. Any other text (compact
JSON Lines, a Markdown report) is decoded whole by :func:`bnbdoctor.report_io.parse_report` and
read from the dict; both ways give the same summary.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from bnbdoctor.fleet_report import KEY_FACTS, FindingKey, NodeSummary
from bnbdoctor.report_io import (
    ReportError,
    check_schema_version,
    parse_report,
    report_kind,
    require_machine_report,
)

#: What takes only machines' reports, in the message refusing another kind.
_READER = "fleet"

_DECODER = json.JSONDecoder()
_SCALAR = r'("(?:[^"\\\n]|\\.)*"|null|true|false|-?[0-9][0-9.eE+-]*)'
_FINDING_MEMBER = re.compile(r'\n {6}"(rule_id|severity|title)": ' + _SCALAR)
_LEADING_MEMBER = re.compile(r'\n {8}"([a-z_]+)": ' + _SCALAR + ",?")


def _at(text: str, key: str, start: int, depth: int) -> int:
    """Where the value of the first member ``key`` at ``depth`` after ``start`` begins, or -1."""
    needle = "\n" + "  " * depth + '"' + key + '": '
    position = text.find(needle, start)
    return position if position < 0 else position + len(needle)


def _value(text: str, start: int) -> Any:
    if start < 0:
        return None
    value, _ = _DECODER.raw_decode(text, start)
    return value


def _package(text: str, start: int) -> dict[str, Any]:
    """The leading scalar members of a package's facts (installed, version, cuda ...) at ``start``."""
    if start < 0:
        return {}
    found: dict[str, Any] = {}
    match = _LEADING_MEMBER.match(text, start + 1)
    while match is not None:
        found[match.group(1)] = json.loads(match.group(2))
        match = _LEADING_MEMBER.match(text, match.end())
    return found


_HEADER = re.compile(r'\{\n  "tool": "bnbdoctor",\n(?:  "[a-z_]+": "[^"\\\n]*",\n)*?  "schema_version": ([0-9]+),\n')


def _fast(text: str, source: str) -> NodeSummary | None:
    """The summary from a two-space-indented report, or None when the text is not one.

    It relies on the order of the report's members (the dataclasses' field order): findings
    before facts; in facts, platform and gpu before python. Text that does not have them in
    that order is decoded whole instead.
    """
    header = _HEADER.match(text)
    if header is None or not text.endswith(("\n}", "\n}\n")):
        return None
    check_schema_version(int(header.group(1)), source)
    try:
        kind = _value(text, _at(text, "kind", 0, 1))  # a fleet's or merge-check's own document
        origin = _value(text, _at(text, "source", header.end() - 1, 1))
        if not isinstance(kind, str):
            kind = origin.get("kind") if isinstance(origin, dict) else None
        require_machine_report(kind if isinstance(kind, str) else None, source, _READER)
        found = _at(text, "findings", header.end() - 1, 1)
        found_end = text.find('\n  "', found) if found >= 0 else -1
        facts = _at(text, "facts", found_end, 1) if found_end >= 0 else -1
        if facts < 0 or not text.startswith("{", facts):
            return None
        members: list[dict[str, Any]] = []
        for match in _FINDING_MEMBER.finditer(text, found, found_end):
            if match.group(1) == "rule_id" or not members:  # rule_id is a finding's first member
                members.append({})
            members[-1][match.group(1)] = json.loads(match.group(2))
        findings = [_finding(member) for member in members]
        platform = _at(text, "platform", facts, 2)
        gpu = _at(text, "gpu", facts, 2)
        python = _at(text, "python", facts, 2)
        torch = bnb = None
        if python >= 0 and text.startswith("{", python):
            torch = _package(text, _at(text, "torch", python, 3))
            bnb = _package(text, _at(text, "bitsandbytes", python, 3))
        return NodeSummary(tuple(findings), _key_facts(_value(text, gpu), _value(text, platform), torch, bnb))
    except ReportError:
        raise
    except (ValueError, RecursionError):
        return None  # decoded whole instead, where each way a report can be wrong is one line


def _finding(data: dict[str, Any]) -> FindingKey:
    return FindingKey(str(data.get("rule_id")), str(data.get("severity")), str(data.get("title") or ""))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _gpus(gpu: dict[str, Any]) -> str | None:
    devices = [d for d in _list(gpu.get("devices")) if isinstance(d, dict)]
    if not devices:
        return None if gpu.get("nvml_available") is None else "none"
    counts = Counter(str(d.get("name") or "unknown GPU") for d in devices)
    return ", ".join(f"{count}x {name}" for name, count in sorted(counts.items()))


def _key_facts(gpu: Any, platform: Any, torch: Any, bnb: Any) -> tuple[tuple[str, str | None], ...]:
    gpu, platform, torch, bnb = _dict(gpu), _dict(platform), _dict(torch), _dict(bnb)
    torch_version = _text(torch.get("version")) if torch.get("installed") is not False else "not installed"
    bnb_version = _text(bnb.get("version")) if bnb.get("installed") is not False else "not installed"
    glibc = _text(platform.get("libc_version")) if platform.get("libc") in (None, "glibc") else None
    values = {
        "gpu": _gpus(gpu),
        "driver": _text(gpu.get("driver_version")),
        "cuda": _text(gpu.get("driver_cuda_version")),
        "torch": torch_version,
        "bitsandbytes": bnb_version,
        "glibc": glibc,
    }
    return tuple((name, values[name]) for name in KEY_FACTS)


def summarize_dict(data: dict[str, Any], source: str = "report") -> NodeSummary:
    """The summary of a decoded report."""
    check_schema_version(data.get("schema_version"), source)
    require_machine_report(report_kind(data), source, _READER)
    facts = _dict(data.get("facts"))
    if not facts:
        raise ReportError(f"{source}: the report carries no facts object")
    findings = tuple(_finding(f) for f in _list(data.get("findings")) if isinstance(f, dict))
    python = _dict(facts.get("python"))
    return NodeSummary(
        findings, _key_facts(facts.get("gpu"), facts.get("platform"), python.get("torch"), python.get("bitsandbytes"))
    )


def summarize(text: str, source: str = "report") -> NodeSummary:
    """The summary of one report's text; raises :class:`ReportError` for what is not a report."""
    fast = _fast(text, source)
    return fast if fast is not None else summarize_dict(parse_report(text, source), source)
