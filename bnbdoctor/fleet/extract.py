"""One report's text boiled down to a :class:`~.model.NodeSummary`, without decoding all of it.

:func:`summarize` reads only the members a fingerprint needs with one typed decoder
(:mod:`bnbdoctor.fleet.decode`), whatever the layout: indented or compact, keys in any order, a line of
JSON Lines. What that decoder cannot type (a Markdown report, a member of the wrong type, invalid JSON) is
decoded whole by :func:`bnbdoctor.report_io.parse_report`, where each way a report can be wrong is one line;
both ways give the same summary, and the same shape limits apply to both.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from bnbdoctor.fleet.decode import decode_summary
from bnbdoctor.fleet_report import KEY_FACTS, FindingKey, NodeSummary
from bnbdoctor.report_io import (
    ReportError,
    check_schema_version,
    check_shape,
    parse_report,
    report_kind,
    require_machine_report,
)

#: What takes only machines' reports, in the message refusing another kind.
_READER = "fleet"


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
    subset = decode_summary(text)
    if subset is None:
        return summarize_dict(parse_report(text, source), source)
    check_shape(subset, source)
    return summarize_dict(subset, source)
