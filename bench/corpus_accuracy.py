"""How often ``bnbdoctor explain`` names the right failure family on real pasted logs (the development corpus).

Each record of tests/data/corpus/threads.jsonl is a log a user pasted in a public thread, labelled with
the failure family it shows (see tests/data/corpus/README.md). The explain engine runs in-process on each
record's ``pasted`` text, as ``bnbdoctor explain`` would on a file holding it, and is scored:

- top-1: the top finding (rank 1) covers the record's catalog id. Only records labelled with a catalog
  id can score; ``new:`` and ``outside:`` records count in N and never hit, so K's ceiling is the
  number of catalog-labelled records (printed above the final line);
- outside-bnb errors named (``outside:<Exception>`` records): the report quotes the error, i.e. its
  findings or the exception it read carry the exception's name or the start of the record's error line;
- unrecognised: no finding of the report covers any catalog family.

    python bench/corpus_accuracy.py             # per-family top-1, then the final line
    python bench/corpus_accuracy.py --misses    # also each miss: url, expected, got
    python bench/corpus_accuracy.py --corpus FILE.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "data" / "corpus" / "threads.jsonl"

from bnbdoctor.explain import explain_text  # noqa: E402  (after the path insert: runs from a checkout)
from bnbdoctor.logs.framing import unframe  # noqa: E402
from bnbdoctor.report import Report  # noqa: E402


@dataclass
class Outcome:
    record: dict[str, Any]
    top_rule: str  # "" when the report has no finding
    top_covers: list[str]
    any_family: bool  # some finding covers a catalog family
    hit: bool  # top-1 for a catalog family, named for an outside error

    @property
    def got(self) -> str:
        if not self.top_rule:
            return "no finding"
        return f"{self.top_rule} [{', '.join(self.top_covers) or 'no family'}]"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _report_text(report: Report) -> str:
    """What the report says in words: finding titles, explanations and evidence, and the exception it read."""
    parts = []
    for finding in report.findings:
        parts += [finding.title, finding.explanation, *(e.value for e in finding.evidence)]
    log = report.facts.log
    if log is not None and log.exception:
        parts.append(log.exception)
    return _squash("\n".join(parts))


def names_error(report: Report, family: str, error_line: str) -> bool:
    """Whether the report quotes an outside error: its exception's name or the start of its error line."""
    said = _report_text(report)
    exception = family.split(":", 1)[1].rsplit(".", 1)[-1].lower()
    # the line as a reader takes it: a logger's timestamp and level in front are framing, not the error
    unframed = unframe(error_line.encode("utf-8", "replace"))[0].decode("utf-8", "replace")
    return exception in said or _squash(error_line)[:60] in said or _squash(unframed)[:60] in said


def score(record: dict[str, Any]) -> Outcome:
    report = explain_text(record["pasted"], label="pasted.log")
    ranked = sorted(report.findings, key=lambda f: f.rank if f.rank is not None else 1_000)
    top = ranked[0] if ranked else None
    family = record["family"]
    if family.startswith("outside:"):
        hit = names_error(report, family, record["error_line"])
    else:
        hit = top is not None and family in top.covers
    return Outcome(
        record=record,
        top_rule=top.rule_id if top else "",
        top_covers=list(top.covers) if top else [],
        any_family=any(f.covers for f in report.findings),
        hit=hit,
    )


def kind(family: str) -> str:
    return family.split(":", 1)[0] if ":" in family else "catalog"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the JSON Lines corpus (default: %(default)s)")
    parser.add_argument("--misses", action="store_true", help="list each miss: url, expected family, what was got")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    outcomes = [score(record) for record in records]

    by_family: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_family[outcome.record["family"]].append(outcome)
    width = max(len(f) for f in by_family)
    for family in sorted(by_family, key=lambda f: (kind(f) != "catalog", f)):
        group = by_family[family]
        label = "named" if family.startswith("outside:") else "top-1"
        print(f"{family:<{width}}  {label} {sum(o.hit for o in group):>3}/{len(group)}")

    if args.misses:
        print("\nmisses (url, expected, got):")
        for outcome in outcomes:
            if not outcome.hit:
                print(f"{outcome.record['url']}\t{outcome.record['family']}\t{outcome.got}")

    catalog = [o for o in outcomes if kind(o.record["family"]) == "catalog"]
    outside = [o for o in outcomes if kind(o.record["family"]) == "outside"]
    new = [o for o in outcomes if kind(o.record["family"]) == "new"]
    top1 = sum(o.hit for o in catalog)
    named = sum(o.hit for o in outside)
    unrecognised = sum(not o.any_family for o in outcomes)
    print(f"\ncatalog-labelled records: top-1 {top1}/{len(catalog)}; new: records {len(new)}; outside: {len(outside)}")
    print(
        f"{len(outcomes)} threads; top-1 {top1}/{len(outcomes)}; "
        f"outside-bnb errors named {named}/{len(outside)}; unrecognised {unrecognised}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
