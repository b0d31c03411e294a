"""Rule cases, as ruff keeps them: ``tests/rule_cases/<ID>/<name>.json``, one folder per rule.

A case is facts plus what the rule must conclude from them::

    {
      "description": "Tesla K80 (cc 3.7) with bitsandbytes 0.42.0",
      "base": {"fixture": "kepler-k80"},            # or {"log": "tests/data/real_logs/x.txt"}
                                                    # or {"facts": {...a report's facts...}}
      "set": {"python.bitsandbytes.version": "0.45.0",       # optional edits of the base facts
              "gpu.devices[0].compute_capability": [3, 7]},  # (dotted paths, JSON values)
      "expect": {"fires": true, "severity": "error",          # severity/covers/title of the first
                 "covers": ["kepler_gpu_unsupported"],       # finding; "hits" counts them;
                 "title": "no kernels"},                     # fires=false: passed or skipped
      "example": true,                                        # the case the rule page shows
      "snapshot": {"findings": [{...the whole finding...}]}  # written by python -m bnbdoctor.ruledocs
    }

The base facts are what the real probes read from a recorded machine (``platform_fixtures/``),
what ``bnbdoctor explain`` extracts from a log, or a saved report's facts. Only the rule under
test runs, through the same engine as a diagnosis.

``expect`` is what the case is about, written by hand. ``snapshot`` is everything the rule concluded:
each finding whole (severity, title, explanation, evidence, the fix's text and every command, covers,
references), or that it passed, or why it was skipped. ``python -m bnbdoctor.ruledocs`` writes it (the
last key of the file, so the hand-written part keeps its layout), ``--check`` and the case tests refuse
a stale one: a change in a rule's text shows in review as a change in its cases.
"""

from __future__ import annotations

import copy
import io
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Severity
from bnbdoctor.rules import get_rule
from bnbdoctor.rules.base import Rule
from bnbdoctor.rules.engine import Diagnosis, crashed, run_rules
from bnbdoctor.serde import from_dict, to_jsonable

#: The project's checkout (cases live with the tests; they are not part of the installed package).
ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "rule_cases"
_STEP = re.compile(r"([A-Za-z_][\w-]*)|\[(\d+)\]")


class CaseError(ValueError):
    """A case file that cannot be read or does not fit the format above."""


@dataclass
class Expect:
    fires: bool
    severity: Severity | None = None
    covers: list[str] | None = None
    title: str | None = None
    hits: int | None = None


@dataclass
class RuleCase:
    rule_id: str
    name: str
    path: Path
    description: str
    base: dict[str, Any]
    edits: dict[str, Any] = field(default_factory=dict)
    expect: Expect = field(default_factory=lambda: Expect(True))
    example: bool = False
    snapshot: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.rule_id}/{self.name}"

    @property
    def rule(self) -> Rule:
        found = get_rule(self.rule_id)
        if found is None:
            raise CaseError(f"{self.path}: no rule {self.rule_id}")
        return found


def load_case(path: Path) -> RuleCase:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaseError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("base"), dict) or not isinstance(data.get("expect"), dict):
        raise CaseError(f"{path}: a case needs 'base' and 'expect' objects")
    base = data["base"]
    if len(base) != 1 or next(iter(base)) not in ("fixture", "log", "lint", "facts"):
        raise CaseError(f"{path}: 'base' names exactly one of fixture, log, lint, facts")
    raw = data["expect"]
    severity = raw.get("severity")
    expect = Expect(
        fires=bool(raw.get("fires", True)),
        severity=Severity(severity) if severity else None,
        covers=raw.get("covers"),
        title=raw.get("title"),
        hits=raw.get("hits"),
    )
    return RuleCase(
        rule_id=path.parent.name,
        name=path.stem,
        path=path,
        description=str(data.get("description", "")),
        base=base,
        edits=dict(data.get("set") or {}),
        expect=expect,
        example=bool(data.get("example")),
        snapshot=data.get("snapshot") if isinstance(data.get("snapshot"), dict) else None,
    )


def all_cases(root: Path = CASES) -> list[RuleCase]:
    """Every case, by rule id then name."""
    return [load_case(path) for path in sorted(root.glob("BNB*/*.json"))]


def cases_of(rule_id: str, root: Path = CASES) -> list[RuleCase]:
    return [load_case(path) for path in sorted((root / rule_id).glob("*.json"))]


@lru_cache(maxsize=64)
def _fixture_facts(name: str) -> str:
    from bnbdoctor.doctor import gather
    from bnbdoctor.hosts.fixture import FixtureHost

    return json.dumps(to_jsonable(gather(FixtureHost.named(name))))


@lru_cache(maxsize=64)
def _log_facts(path: str) -> str:
    from bnbdoctor.logs.extract import extract

    with open(ROOT / path, "rb") as handle:
        facts, _ = extract(handle, Path(path).name)
    return json.dumps(to_jsonable(facts))


@lru_cache(maxsize=64)
def _lint_facts(path: str) -> str:
    """The facts ``bnbdoctor lint PATH --no-python`` judges (a path relative to the checkout)."""
    from bnbdoctor.lint.analyze import lint_facts

    facts = Facts(source={"kind": "lint", "label": f"bnbdoctor lint {path}"})
    facts.lint = lint_facts([path]) if Path(path).is_absolute() else _relative_lint(path)
    return json.dumps(to_jsonable(facts))


def _relative_lint(path: str) -> Any:
    import os

    from bnbdoctor.lint.analyze import lint_facts

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        return lint_facts([path])
    finally:
        os.chdir(here)


def base_data(case: RuleCase) -> dict[str, Any]:
    kind, value = next(iter(case.base.items()))
    if kind == "fixture":
        return dict(json.loads(_fixture_facts(str(value))))
    if kind == "log":
        return dict(json.loads(_log_facts(str(value))))
    if kind == "lint":
        return dict(json.loads(_lint_facts(str(value))))
    if not isinstance(value, dict):
        raise CaseError(f"{case.path}: 'facts' must be an object")
    return copy.deepcopy(value)


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b[2].c`` in nested JSON data; the parents must exist (a typo is an error, not a new key)."""
    steps = [(m.group(1), m.group(2)) for m in _STEP.finditer(dotted)]
    if not steps:
        raise CaseError(f"bad path {dotted!r}")
    node: Any = data
    for i, (key, index) in enumerate(steps):
        last = i == len(steps) - 1
        if key is not None:
            if not isinstance(node, dict) or (not last and key not in node):
                raise CaseError(f"{dotted}: no {key!r} to set into")
            if last:
                node[key] = value
            else:
                node = node[key]
        else:
            position = int(index)
            if not isinstance(node, list) or position >= len(node):
                raise CaseError(f"{dotted}: no item [{position}]")
            if last:
                node[position] = value
            else:
                node = node[position]


def case_facts(case: RuleCase) -> Facts:
    """The base facts with the case's edits, checked by the same decoder that reads saved reports."""
    data = base_data(case)
    for dotted, value in case.edits.items():
        try:
            set_path(data, dotted, value)
        except CaseError as exc:
            raise CaseError(f"{case.path}: {exc}") from None
    return from_dict(Facts, data)


def run_case(case: RuleCase) -> Diagnosis:
    """Only the case's rule, through the same engine a diagnosis uses."""
    return run_rules(case_facts(case), [case.rule])


def check_case(case: RuleCase) -> list[str]:
    """What the case's expectation says that the rule did not do (empty: the case holds)."""
    diagnosis = run_case(case)
    findings = diagnosis.findings
    expect = case.expect
    problems: list[str] = []
    failed = crashed(diagnosis)
    if failed:
        return [f"the rule crashed: {failed[0].evidence[0].value}"]
    if not expect.fires:
        if findings:
            problems.append(f"expected no finding, got: {findings[0].title}")
        return problems
    if not findings:
        why = diagnosis.skipped[0].reason if diagnosis.skipped else "passed"
        return [f"expected a finding, got none ({why})"]
    first = findings[0]
    if expect.severity is not None and first.severity is not expect.severity:
        problems.append(f"severity {first.severity.value}, expected {expect.severity.value}")
    if expect.covers is not None and sorted(first.covers) != sorted(expect.covers):
        problems.append(f"covers {sorted(first.covers)}, expected {sorted(expect.covers)}")
    if expect.title is not None and expect.title not in first.title:
        problems.append(f"title {first.title!r} lacks {expect.title!r}")
    if expect.hits is not None and len(findings) != expect.hits:
        problems.append(f"{len(findings)} findings, expected {expect.hits}")
    undeclared = sorted({c for f in findings for c in f.covers} - set(case.rule.covers))
    if undeclared:
        problems.append(f"findings name catalog ids the rule does not declare: {undeclared}")
    return problems


def snapshot_problems(case: RuleCase, diagnosis: Diagnosis | None = None) -> list[str]:
    """Where the case's snapshot differs from what the rule concludes today (empty: it is current)."""
    today = snapshot_of(diagnosis or run_case(case))
    if case.snapshot is None:
        return ["no snapshot: run python -m bnbdoctor.ruledocs"]
    if case.snapshot == today:
        return []
    differs = _first_difference(case.snapshot, today)
    return [f"the snapshot is stale at {differs} (run python -m bnbdoctor.ruledocs and review the change)"]


#: The parts of a finding a snapshot keeps: all that it says (the engine's own bookkeeping left out).
_SNAPSHOT_FIELDS = ("severity", "title", "explanation", "evidence", "remediation", "covers", "references")


def snapshot_of(diagnosis: Diagnosis) -> dict[str, Any]:
    """What one rule concluded, as a case file keeps it."""
    if diagnosis.findings:
        findings = [to_jsonable(finding) for finding in diagnosis.findings]
        return {"findings": [{name: finding[name] for name in _SNAPSHOT_FIELDS} for finding in findings]}
    if diagnosis.skipped:
        return {"skipped": diagnosis.skipped[0].reason}
    return {"passed": True}


def _first_difference(old: Any, new: Any, where: str = "snapshot") -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            if old.get(key) != new.get(key):
                return _first_difference(old.get(key), new.get(key), f"{where}.{key}")
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{where}[{index}]")
    return f"{where}: {json.dumps(old, ensure_ascii=False)[:80]} -> {json.dumps(new, ensure_ascii=False)[:80]}"


_SNAPSHOT_KEY = '\n  "snapshot": '


def with_snapshot(text: str, snapshot: dict[str, Any]) -> str:
    """A case file's text with ``snapshot`` as its last key, the rest left exactly as it was written."""
    cut = text.rfind(_SNAPSHOT_KEY)
    head = text[:cut].rstrip().rstrip(",") if cut != -1 else text.rstrip().removesuffix("}").rstrip()
    if cut == -1 and not head.startswith("{"):
        raise CaseError("a case file is one JSON object")
    block = json.dumps(snapshot, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    return f"{head},{_SNAPSHOT_KEY}{block}\n}}\n"


def stale_snapshots(root: Path = CASES) -> list[RuleCase]:
    """The cases whose snapshot is missing or differs from what their rule concludes today."""
    return [case for case in all_cases(root) if snapshot_problems(case)]


def write_snapshots(root: Path = CASES) -> list[Path]:
    """Rewrite every stale case's snapshot; returns the files written."""
    written = []
    for case in stale_snapshots(root):
        text = case.path.read_text(encoding="utf-8")
        case.path.write_text(with_snapshot(text, snapshot_of(run_case(case))), encoding="utf-8")
        written.append(case.path)
    return written


def facts_json(facts: Facts) -> str:
    """Facts as a case's inline ``base.facts`` (for tools that write cases)."""
    out = io.StringIO()
    json.dump(to_jsonable(facts), out, indent=1, ensure_ascii=False)
    return out.getvalue()
