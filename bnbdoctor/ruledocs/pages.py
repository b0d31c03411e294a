"""``docs/rules/``: one page per rule and the index, generated from what the rules declare.

A page is assembled from three sources, so that nothing about a rule is written twice:

- the declaration (``@rule`` in ``bnbdoctor/rules/``): title, default severity, covers, whether it
  reads a log, references;
- the prose, which is the docstring of the rule's check (ruff's way: the rule's doc comment *is* its
  page): "What it detects", "Why it matters", "How to fix", optional "Severity note", "Example
  notes" and "Further reading". ``{{ module.NAME.attr }}`` in the prose is replaced by that value of
  ``bnbdoctor.knowledge.<module>`` (e.g. ``{{ imports.TRITON_OPS_IMPORT.below_text }}``; a number
  indexes a table's row, ``{{ releases.TORCH_MINIMUM_BY_RELEASE.1.torch }}``; a function is called),
  so a page and the code it documents read one boundary. Numbers written by hand instead are
  :func:`bnbdoctor.ruledocs.versions.bare_versions`;
- the rule's example case (``tests/rule_cases/<ID>/``, ``"example": true``), *run*: the Example
  section is what bnbdoctor prints for it today.

References end with the sources the failure catalog gives for each covered id.
``python -m bnbdoctor.ruledocs`` writes the pages; ``--check`` lists stale ones and exits 1.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bnbdoctor.catalog import catalog, catalog_entry
from bnbdoctor.render import OutputFormat, ReportKind, render
from bnbdoctor.ruledocs.cases import ROOT, RuleCase, case_facts, cases_of
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.base import Rule
from bnbdoctor.rules.engine import MODE_SECTIONS

DOCS = ROOT / "docs" / "rules"
MODE_INDEX = ROOT / "bnbdoctor" / "rules" / "mode_index.py"
INDEX_TEMPLATE = Path(__file__).with_name("index_template.md")
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\.([A-Za-z_][\w.]*)\s*\}\}")
#: Prose sections, in page order; the first three are required.
REQUIRED = ("What it detects", "Why it matters", "How to fix")
OPTIONAL = ("Example notes", "Further reading", "Severity note")


class PageError(ValueError):
    """Prose that is missing or malformed."""


@dataclass
class Prose:
    sections: dict[str, str]

    def get(self, name: str) -> str:
        return self.sections.get(name, "").strip("\n")


def split_sections(text: str) -> dict[str, str]:
    """Level-2 sections of Markdown, ignoring ``##`` lines inside fenced code."""
    out: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            if name is not None:
                out[name] = "\n".join(lines)
            name, lines = line[3:].strip(), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out[name] = "\n".join(lines)
    return out


def expand(text: str) -> str:
    """Replace ``{{ module.NAME.attr }}`` with the value from ``bnbdoctor.knowledge.<module>`` (a part
    that is a number indexes a sequence: ``NAME.0.attr``)."""

    def value(match: re.Match[str]) -> str:
        module = importlib.import_module(f"bnbdoctor.knowledge.{match.group(1)}")
        found: Any = module
        for part in match.group(2).split("."):
            found = found[int(part)] if part.isdigit() else getattr(found, part)
        return str(found() if callable(found) else found)

    return _PLACEHOLDER.sub(value, text)


def prose_of(rule: Rule) -> Prose:
    doc = inspect.getdoc(rule.check)
    if not doc:
        raise PageError(f"{rule.id}: its check {rule.check.__name__} has no docstring (the rule's prose)")
    sections = split_sections(expand(doc))
    unknown = sorted(set(sections) - set(REQUIRED) - set(OPTIONAL))
    missing = [name for name in REQUIRED if not sections.get(name, "").strip()]
    if unknown or missing:
        raise PageError(f"{rule.id}: prose sections missing {missing}, unknown {unknown}")
    return Prose(sections)


def example_case(rule: Rule) -> RuleCase | None:
    return next((case for case in cases_of(rule.id) if case.example), None)


def _cut_after_findings(text: str) -> str:
    for marker in ("\nVerified (", "\nNot checked (", "\nSummary:"):
        cut = text.find(marker)
        if cut != -1:
            text = text[:cut]
    return text.rstrip() + "\n"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?", ")")) else text + "."


def _continuing(text: str) -> str:
    """A description continuing a sentence: "A laptop ..." -> "a laptop ..." (not "GPU ..." or "PEFT's")."""
    return text[0].lower() + text[1:] if len(text) > 1 and text[0].isupper() and text[1].islower() else text


def example_output(case: RuleCase) -> tuple[str, str]:
    """(what the example is and the command that shows it, what bnbdoctor prints) for an example case."""
    from bnbdoctor.doctor import diagnose_facts
    from bnbdoctor.redact import Redactor
    from bnbdoctor.report_io import redact_report

    rule = case.rule
    kind, value = next(iter(case.base.items()))
    about = _sentence(case.description)
    source = f"the rule case `tests/rule_cases/{case.label}.json`"
    if rule.reads_log:
        from bnbdoctor.explain.pipeline import explain_file
        from bnbdoctor.rules.engine import EXPLAIN

        if kind == "log" and not case.edits:
            report = explain_file(str(ROOT / str(value)), [rule])
            intro = (
                f"A log kept with the tests: {_continuing(about)}\n\n"
                f"`bnbdoctor explain {value} --rule {rule.id}` prints:"
            )
        else:
            facts = case_facts(case)
            report = diagnose_facts(facts, [rule], pipeline=EXPLAIN)
            intro = f"{about}\n\n`bnbdoctor explain`, given the facts of {source}, prints:"
        redactor = Redactor.for_text(json.dumps(report.source))
        return intro, render(redact_report(report, redactor), OutputFormat.TEXT, ReportKind.EXPLAIN).rstrip() + "\n"
    facts = case_facts(case)
    report = redact_report(diagnose_facts(facts, [rule]), Redactor())
    if "lint" in rule.needs:
        intro = f"{about}\n\n`bnbdoctor lint {value} --no-python` prints:"
        return intro, render(report, OutputFormat.TEXT, ReportKind.LINT)
    if "fit" in rule.needs:
        intro = f"{about}\n\n`bnbdoctor fit` on the model and GPUs of {source} prints:"
        return intro, _cut_after_findings(render(report, OutputFormat.TEXT, ReportKind.FIT))

    if kind == "fixture" and not case.edits:
        from bnbdoctor.doctor import diagnose
        from bnbdoctor.hosts.fixture import FixtureHost

        host = FixtureHost.named(str(value))
        report = redact_report(diagnose(host, rules=[rule]), Redactor.for_machine(host.os_info()))
        intro = f"A recorded machine: {_continuing(about)}\n\n`bnbdoctor --fixture {value} --rule {rule.id}` prints:"
    else:
        intro = f"{about}\n\nbnbdoctor's text renderer, given the facts of {source}, prints:"
    return intro, _cut_after_findings(render(report, OutputFormat.TEXT, ReportKind.DOCTOR))


def _covers_text(rule: Rule) -> str:
    return ", ".join(f"`{c}`" for c in rule.covers) if rule.covers else "none (no failure-catalog entry)"


def header_line(rule: Rule, prose: Prose) -> str:
    note = prose.get("Severity note")
    line = f"Default severity: **{rule.severity.value}**{f' ({note})' if note else ''} · covers: {_covers_text(rule)}"
    if rule.reads_log:
        line += " · reads: a log (`bnbdoctor explain`)"
    elif "fit" in rule.needs:
        line += " · reads: a placement (`bnbdoctor fit`)"
    elif "lint" in rule.needs:
        line += " · reads: your code (`bnbdoctor lint`)"
    return line


def references(rule: Rule, prose: Prose) -> list[str]:
    further = [line for line in prose.get("Further reading").split("\n") if line.strip()]
    annotated = {line[2:].split(" ")[0]: line for line in further if line.startswith("- ")}
    lines = [annotated.pop(url, f"- {url}") for url in rule.references]
    lines += [line for line in further if not (line.startswith("- ") and line[2:].split(" ")[0] in rule.references)]
    for entry_id in rule.covers:
        entry = catalog_entry(entry_id)
        urls = entry.get("urls") if entry else None
        if urls:
            lines.append(f"- Catalog `{entry_id}`: {', '.join(str(u) for u in urls)}")
    return lines


def render_page(rule: Rule) -> str:
    prose = prose_of(rule)
    parts = [
        f"# {rule.id} — {rule.name}",
        "",
        header_line(rule, prose),
        "",
        "## What it detects",
        "",
        prose.get("What it detects"),
        "",
        "## Why it matters",
        "",
        prose.get("Why it matters"),
        "",
        "## Example",
        "",
    ]
    case = example_case(rule)
    if case is None:
        parts += ["_No example case yet: add one to `tests/rule_cases/" + rule.id + '/` with `"example": true`._', ""]
    else:
        intro, output = example_output(case)
        parts += [intro, "", "```text", output.rstrip("\n"), "```", ""]
    notes = prose.get("Example notes")
    if notes:
        parts += [notes, ""]
    parts += ["## How to fix", "", prose.get("How to fix"), "", "## References", "", *references(rule, prose), ""]
    return "\n".join(parts)


def _table(rules: list[Rule]) -> list[str]:
    rows = ["| id | name | severity | summary | covers |", "|---|---|---|---|---|"]
    for rule in rules:
        covers = ", ".join(f"`{c}`" for c in rule.covers) or "—"
        rows.append(
            f"| [{rule.id}]({rule.id}.md) | `{rule.name}` | {rule.severity.value} | {rule.summary} | {covers} |"
        )
    return rows


def render_index(rules: list[Rule]) -> str:
    template = INDEX_TEMPLATE.read_text(encoding="utf-8")
    machine = [r for r in rules if r.machine_checkable]
    fit = [r for r in rules if "fit" in r.needs]
    logs = [r for r in rules if r.reads_log]
    lint = [r for r in rules if "lint" in r.needs]
    return (
        template.replace("{machine_rules}", "\n".join(_table(machine)))
        .replace("{fit_rules}", "\n".join(_table(fit)))
        .replace("{log_rules}", "\n".join(_table(logs)))
        .replace("{lint_rules}", "\n".join(_table(lint)))
    )


def render_catalog(rules: list[Rule]) -> str:
    """docs/catalog.md: every catalog entry under a heading whose anchor is its id, with the rules
    that diagnose it (the links in reports point here)."""
    lines = [
        "# The failure catalog",
        "",
        (
            "Real bitsandbytes failures, each with a stable id (public API: every finding names the entries it "
            "diagnoses in `covers`). Generated from `bnbdoctor/data/failure_catalog.json` by "
            "`python -m bnbdoctor.ruledocs`."
        ),
        "",
    ]
    for entry in catalog():
        entry_id = entry["id"]
        rule_links = ", ".join(f"[{r.id}](rules/{r.id}.md)" for r in rules if entry_id in r.covers) or "none yet"
        lines += [f"## {entry_id}", "", f"**{entry.get('title', '')}**", ""]
        for label, key in (
            ("Root cause", "root_cause"),
            ("What to do", "remediation"),
            ("Platforms", "platform"),
            ("Versions", "versions"),
        ):
            if entry.get(key):
                lines += [f"- {label}: {entry[key]}"]
        lines += [f"- Diagnosed by: {rule_links}"]
        if entry.get("origin") == "corpus":
            lines += ["- Found in: real threads of the development corpus (`tests/data/corpus`), packaged only"]
        urls = entry.get("urls") or []
        if urls:
            lines += [f"- Sources: {', '.join(str(u) for u in urls)}"]
        lines.append("")
    return "\n".join(lines)


def render_mode_index(rules: list[Rule]) -> str:
    """``bnbdoctor/rules/mode_index.py``: the rule modules that need a section only some commands produce, so that a
    diagnosis imports only the rules it can run (:func:`bnbdoctor.rules.rules_for`)."""
    rows = [
        f"    {json.dumps(rule.module)}: ({', '.join(json.dumps(s) for s in needs)}{',' if len(needs) == 1 else ''}),"
        for rule in sorted(rules, key=lambda r: r.module)
        if (needs := sorted(set(rule.needs) & MODE_SECTIONS))
    ]
    return "\n".join(
        [
            '"""The rule modules that need a section only some commands produce (a log, a fit run, lint), and which.',
            "",
            "Generated by ``python -m bnbdoctor.ruledocs`` from the rules' ``needs`` (``--check`` finds it stale);",
            "do not edit. :func:`bnbdoctor.rules.rules_for` imports only the modules a diagnosis can run: the doctor",
            "none of these. A module not listed here is imported always, so a new rule is never left out.",
            '"""',
            "",
            "MODE_NEEDS: dict[str, tuple[str, ...]] = {",
            *rows,
            "}",
            "",
        ]
    )


def expected_pages() -> dict[Path, str]:
    rules = all_rules()
    pages = {DOCS / f"{rule.id}.md": render_page(rule) for rule in rules}
    pages[DOCS / "README.md"] = render_index(rules)
    pages[DOCS.parent / "catalog.md"] = render_catalog(rules)
    pages[MODE_INDEX] = render_mode_index(rules)
    return pages


def stale_pages() -> list[Path]:
    """Pages whose file differs from what would be generated, and pages of rules that do not exist."""
    expected = expected_pages()
    stale = [path for path, text in expected.items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    stale += [path for path in DOCS.glob("BNB*.md") if path not in expected]
    return sorted(stale)


def write_pages() -> list[Path]:
    written = []
    expected = expected_pages()
    for path, text in expected.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    for path in DOCS.glob("BNB*.md"):
        if path not in expected:
            path.unlink()
            written.append(path)
    return written
