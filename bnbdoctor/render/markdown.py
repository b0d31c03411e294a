"""``--markdown``: a report to paste into a GitHub issue.

A one-line verdict, a findings table, each finding's evidence and fix, the facts in collapsible
``<details>`` sections, and the whole report as a fenced JSON block that ``bnbdoctor --from``
reads back. Everything user-controlled is escaped for GitHub-flavoured Markdown: pipes in
tables, backticks in code spans, HTML-looking text outside code.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bnbdoctor.catalog import entry_url
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.render.proof import proof_label, proof_sentence
from bnbdoctor.report import Report
from bnbdoctor.serde import to_jsonable

#: Where the rule pages are published. Change here when the repository moves.
DOCS_URL = "https://github.com/bnbdoctor/bnbdoctor/blob/main/docs/rules"
#: GitHub rejects an issue body or comment above 65,536 characters.
GITHUB_BODY_LIMIT = 65_536
#: The report's share of an issue body: the rest is room for the user's own text and an issue template's.
MAX_BODY = 60_000
#: A fact's value in compacted facts is cut after this many characters.
MAX_COMPACT_VALUE = 200
_COMPACT_NOTE = "_Facts shortened to fit an issue: the same value on every GPU shown once, long values cut._"
#: A flattened key inside a list: ``gpu.devices[3].name`` -> ("gpu.devices", "3", ".name").
_INDEXED = re.compile(r"^(.*?)\[(\d+)\](.*)$")
_ICON = {Severity.ERROR: "🔴 error", Severity.WARNING: "🟡 warning", Severity.INFO: "🔵 info"}
_FACT_SECTIONS = ("platform", "gpu", "python", "cuda_toolkit", "native", "load", "log", "env")


def code(text: object) -> str:
    """An inline code span that survives any backticks inside, safe in a table cell."""
    value = str(text).replace("\n", " ").replace("|", "\\|")
    fence = "`"
    while fence in value:
        fence += "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def plain(text: object) -> str:
    """Prose in a table cell or paragraph: no table breaks, no HTML, no stray emphasis."""
    value = str(text).replace("\r", "").replace("\n", " ")
    for char in ("\\", "|", "*", "_", "<", ">", "[", "]", "#"):
        value = value.replace(char, "\\" + char)
    return value


def verdict(report: Report) -> str:
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if errors:
        top = errors[0]
        more = f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        return f"**bitsandbytes will not work here:** {plain(top.title)} ({top.rule_id}){more}"
    warnings = [f for f in report.findings if f.severity is Severity.WARNING]
    unparsed = report.facts.lint.unparsed if report.facts.lint is not None else {}
    if unparsed:  # lint: code nobody checked is no green result
        count = len(unparsed)
        return f"**Not linted:** {count} file{'s' if count > 1 else ''} could not be parsed (listed below)."
    if report.facts.log is not None:  # explain: what the log shows, not how the machine is
        if report.source.get("empty") == "true":
            return "**Nothing to explain:** the log is empty."
        if warnings:
            return f"**The log shows a warning:** {plain(warnings[0].title)} ({warnings[0].rule_id})"
        return "**No error in this log:** no known bitsandbytes failure found."
    if warnings:
        return (
            f"**bitsandbytes should work, with {len(warnings)} warning{'s' if len(warnings) > 1 else ''}:** "
            f"{plain(warnings[0].title)} ({warnings[0].rule_id})"
        )
    return "**No problems found:** bitsandbytes should work on this machine."


def _finding(finding: Finding) -> list[str]:
    lines = [f"### {finding.rule_id} — {plain(finding.title)}", "", plain(finding.explanation), ""]
    if finding.evidence:
        lines.append("**Evidence**")
        lines.append("")
        lines += [f"- {plain(item.label)}: {code(item.value)}" for item in finding.evidence]
        lines.append("")
    if finding.remediation.text or finding.remediation.commands:
        lines.append("**Fix**")
        lines.append("")
        if finding.remediation.text:
            lines += [plain(finding.remediation.text), ""]
        if finding.remediation.commands:
            lines += ["```sh", *finding.remediation.commands, "```", ""]
        if finding.remediation.proof is not None:
            proof = finding.remediation.proof
            lines += [f"*{proof_label(proof).capitalize()}:* {plain(proof_sentence(proof))}", ""]
    if finding.references:
        lines.append("References: " + ", ".join(f"<{ref}>" for ref in finding.references))
        lines.append("")
    if finding.covers:
        lines.append("Catalog: " + ", ".join(f"[`{entry_id}`]({entry_url(entry_id)})" for entry_id in finding.covers))
        lines.append("")
    if finding.follows:
        lines += ["**Also seen, follows from this**", ""]
        lines += [f"- {follow.rule_id} {plain(follow.title)}" for follow in finding.follows]
        lines.append("")
    return lines


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Dotted key/value rows; short lists of scalars joined, lists of objects indexed."""
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return [(prefix, ", ".join(str(v) for v in value) if value else "(none)")]
        rows = []
        for index, item in enumerate(value):
            rows += _flatten(item, f"{prefix}[{index}]")
        return rows
    return [(prefix, "null" if value is None else json.dumps(value) if isinstance(value, bool) else str(value))]


def _compact(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Fewer, shorter rows: rows of a list that are the same for every item merged into one
    (``gpu.devices[0\u201315].name``), and long values cut (the JSON report holds them whole)."""
    merged: dict[tuple[str, str, str], list[int]] = {}
    order: list[tuple[str, str, str]] = []
    for key, value in rows:
        match = _INDEXED.match(key)
        group = (match.group(1), match.group(3), value) if match else (key, "", value)
        if group not in merged:
            merged[group] = []
            order.append(group)
        if match:
            merged[group].append(int(match.group(2)))
    compact = []
    for head, tail, value in order:
        indices = merged[(head, tail, value)]
        key = f"{head}[{_index_text(indices)}]{tail}" if indices else head
        cut = value if len(value) <= MAX_COMPACT_VALUE else f"{value[:MAX_COMPACT_VALUE]}... ({len(value)} characters)"
        compact.append((key, cut))
    return compact


def _index_text(indices: list[int]) -> str:
    ordered = sorted(indices)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}\u2013{ordered[-1]}"
    return ",".join(map(str, ordered))


def _facts(report: Report, *, compact: bool = False) -> list[str]:
    data = to_jsonable(report.facts)
    lines = []
    for section in _FACT_SECTIONS:
        value = data.get(section)
        if value in (None, {}, []):
            continue
        rows = _compact(_flatten(value)) if compact else _flatten(value)
        lines += [f"<details><summary>Facts: {section} ({len(rows)})</summary>", "", "| fact | value |", "|---|---|"]
        lines += [f"| {code(key)} | {code(val)} |" for key, val in rows]
        lines += ["", "</details>", ""]
    probes = data.get("probes") or []
    if probes:
        lines += ["<details><summary>Probes</summary>", "", "| probe | ok | seconds | error |", "|---|---|---|---|"]
        lines += [
            f"| {code(p['name'])} | {'yes' if p['ok'] else 'no'} | {p['duration_s']:.3f} | "
            f"{code(p['error']) if p['error'] else ''} |"
            for p in probes
        ]
        lines += ["", "</details>", ""]
    return lines


def _head(report: Report) -> list[str]:
    """The verdict, the machine, the findings, what was verified and not checked: what every size keeps."""
    summary = report.summary
    from_log = report.facts.log is not None  # explain: a rule that found nothing did not verify anything
    where = report.source.get("label", "")
    lines = [f"## bnbdoctor report — {plain(where)}", "", verdict(report), ""]
    facts = report.facts
    context = []
    if facts.platform:
        p = facts.platform
        context.append(
            f"{plain(p.distro_name or p.os)} {p.arch}" + (f", glibc {p.libc_version}" if p.libc_version else "")
        )
    if facts.gpu and facts.gpu.visible:
        from bnbdoctor.render.text import count_text

        names = [d.name for d in facts.gpu.visible]
        context.append(
            ", ".join(plain(count_text(names.count(name), name)) for name in sorted(set(names)))
            + (
                f", driver {facts.gpu.driver_version} (CUDA {facts.gpu.driver_cuda_version})"
                if facts.gpu.driver_version
                else ""
            )
        )
    if facts.python:
        from bnbdoctor.render.text import package_text

        t, b = facts.python.torch, facts.python.bitsandbytes
        context.append(
            f"Python {facts.python.version or '?'}, "
            f"{plain(package_text('torch', t.installed, t.version, t.error))}, "
            f"{plain(package_text('bitsandbytes', b.installed, b.version, b.error))}"
        )
    if context:
        lines += [" · ".join(context), ""]
    lines += [
        f"{summary.line(from_log=from_log)} "
        f"(bnbdoctor {report.tool_version}, report schema {report.schema_version}"
        + (", redacted" if report.redaction is not None else ", NOT redacted")
        + ")",
        "",
    ]
    if report.findings:
        lines += ["| Severity | Rule | Finding |", "|---|---|---|"]
        lines += [
            f"| {_ICON[f.severity]} | [{f.rule_id}]({DOCS_URL}/{f.rule_id}.md) | {plain(f.title)} |"
            for f in report.findings
        ]
        lines.append("")
        for finding in report.findings:
            lines += _finding(finding)
    if report.facts.lint is not None and report.facts.lint.unparsed:
        lines += ["Not linted (could not be parsed):", ""]
        lines += [f"- {code(file)}: {plain(reason)}" for file, reason in sorted(report.facts.lint.unparsed.items())]
        lines.append("")
    if report.passed:
        heading = (
            f"Found nothing in the log ({len(report.passed)} rules)"
            if from_log
            else f"Verified ({len(report.passed)} checks passed)"
        )
        lines += [f"<details><summary>{heading}</summary>", ""]
        lines += [f"- {c.rule_id} {plain(c.summary)}" for c in report.passed]
        lines += ["", "</details>", ""]
    if report.skipped:
        lines += [f"<details><summary>Not checked ({len(report.skipped)})</summary>", ""]
        lines += [f"- {c.rule_id} {plain(c.summary)}: {plain(c.reason or '')}" for c in report.skipped]
        lines += ["", "</details>", ""]
    return lines


def _json_block(payload: str) -> list[str]:
    return [
        "<details><summary>Full report (JSON, replay with <code>bnbdoctor --from</code>)</summary>",
        "",
        "```json",
        payload,
        "```",
        "",
        "</details>",
        "",
    ]


def _attach_hint(payload: str) -> list[str]:
    return [
        (
            f"_The full report ({len(payload) // 1024} KiB) is too large to paste here: attach the file from "
            "`bnbdoctor --json -o bnbdoctor-report.json` to the issue._"
        ),
        "",
    ]


#: What an issue body keeps as it grows, best first: (the facts, compacted?, the JSON block?). None: no facts.
_STEPS: tuple[tuple[bool | None, bool], ...] = (
    (False, True),
    (True, True),
    (False, False),
    (True, False),
    (None, False),
)


def render_markdown(report: Report) -> str:
    """The report as Markdown within :data:`MAX_BODY` characters where it can be.

    The whole body is measured. When it is too long it degrades in steps: the facts compacted (same rows of
    every GPU merged, long values cut), then the JSON block replaced by a hint to attach the file (the facts
    whole again if they fit), then the facts compacted again, then left out. A body that still does not fit
    says so at the top.
    """
    head = _head(report)
    payload = json.dumps(to_jsonable(report), indent=1, ensure_ascii=True)  # ASCII: replays from any encoding
    body = ""
    for compact, with_json in _STEPS:
        lines = list(head)
        if compact is not None:
            if compact:
                lines += [_COMPACT_NOTE, ""]
            lines += _facts(report, compact=compact)
        lines += _json_block(payload) if with_json else _attach_hint(payload)
        body = "\n".join(lines)
        if len(body) <= MAX_BODY:
            return body
    note = (
        f"_This report is {len(body):,} characters, more than a GitHub issue takes ({GITHUB_BODY_LIMIT:,}): "
        "attach it as a file instead (`bnbdoctor --markdown -o bnbdoctor-report.md`)._"
    )
    return "\n".join([note, "", body])


class MarkdownRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``--markdown`` (the doctor's and explain's); no colour."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return render_markdown(report)
