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

from bnbdoctor.facts import SCHEMA_VERSION
from bnbdoctor.fleet.model import KEY_FACTS, FindingKey, NodeSummary
from bnbdoctor.report_io import ReportError, parse_report

_DECODER = json.JSONDecoder()
_SCALAR = r'("(?:[^"\\\n]|\\.)*"|null|true|false|-?[0-9][0-9.eE+-]*)'
_FINDING_MEMBER = re.compile(r'\n {6}"(rule_id|severity|title)": ' + _SCALAR)
_SCALAR_MEMBER = re.compile(r'\n {8}"(version|cuda|hip|xpu|installed)": ' + _SCALAR)


def _span(text: str, key: str, start: int, end: int, depth: int) -> tuple[int, int] | None:
    """Where the value of member ``key`` of the object ``depth`` levels deep in ``text[start:end]`` lies."""
    indent = "\n" + "  " * depth
    needle = f'{indent}"{key}": '
    position = text.find(needle, start, end)
    if position < 0:
        return None
    value_start = position + len(needle)
    following = text.find(indent + '"', value_start, end)  # the next member, or the object's end
    return value_start, end if following < 0 else following


def _value(text: str, span: tuple[int, int] | None) -> Any:
    if span is None:
        return None
    value, _ = _DECODER.raw_decode(text, span[0])
    return value


def _scalars(pattern: re.Pattern[str], text: str, span: tuple[int, int] | None) -> dict[str, Any]:
    if span is None:
        return {}
    return {m.group(1): json.loads(m.group(2)) for m in pattern.finditer(text, span[0], span[1])}


_HEADER = re.compile(r'\{\n  "tool": "bnbdoctor",\n(?:  "[a-z_]+": "[^"\\\n]*",\n)*?  "schema_version": ([0-9]+),\n')


def _fast(text: str, source: str) -> NodeSummary | None:
    """The summary from a two-space-indented report, or None when the text is not one."""
    header = _HEADER.match(text)
    if header is None or not text.endswith(("\n}", "\n}\n")):
        return None
    _check_version(int(header.group(1)), source)
    end = len(text)
    try:
        found = _span(text, "findings", header.end() - 1, end, 1)
        facts = _span(text, "facts", header.end() - 1, end, 1)
        if found is None or facts is None:
            return None
        findings: list[FindingKey] = []
        current: dict[str, Any] = {}
        for match in _FINDING_MEMBER.finditer(text, *found):
            current[match.group(1)] = json.loads(match.group(2))
            if len(current) == 3:
                findings.append(_finding(current))
                current = {}
        python = _span(text, "python", facts[0], facts[1], 2)
        torch = bnb = None
        if python is not None:
            torch = _scalars(_SCALAR_MEMBER, text, _span(text, "torch", python[0], python[1], 3))
            bnb = _scalars(_SCALAR_MEMBER, text, _span(text, "bitsandbytes", python[0], python[1], 3))
        gpu = _value(text, _span(text, "gpu", facts[0], facts[1], 2))
        platform = _value(text, _span(text, "platform", facts[0], facts[1], 2))
    except ValueError:
        return None
    return NodeSummary(tuple(findings), _key_facts(gpu, platform, torch, bnb))


def _check_version(version: Any, source: str) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError(f"{source}: schema_version is missing or not a number")
    if version > SCHEMA_VERSION:
        raise ReportError(f"{source} uses report schema {version}, newer than this bnbdoctor reads ({SCHEMA_VERSION})")


def _finding(data: dict[str, Any]) -> FindingKey:
    return FindingKey(str(data.get("rule_id")), str(data.get("severity")), str(data.get("title") or ""))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _gpus(gpu: dict[str, Any]) -> str | None:
    devices = [d for d in gpu.get("devices") or [] if isinstance(d, dict)]
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
    _check_version(data.get("schema_version"), source)
    facts = _dict(data.get("facts"))
    if not facts:
        raise ReportError(f"{source}: the report carries no facts object")
    findings = tuple(_finding(f) for f in data.get("findings") or [] if isinstance(f, dict))
    python = _dict(facts.get("python"))
    return NodeSummary(findings, _key_facts(facts.get("gpu"), facts.get("platform"), python.get("torch"),
                                            python.get("bitsandbytes")))


def summarize(text: str, source: str = "report") -> NodeSummary:
    """The summary of one report's text; raises :class:`ReportError` for what is not a report."""
    fast = _fast(text, source)
    return fast if fast is not None else summarize_dict(parse_report(text, source), source)
