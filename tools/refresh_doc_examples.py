"""Refresh the Example blocks of docs/rules/*.md that quote a recorded machine.

A page that says "`bnbdoctor --fixture NAME --rule ID`" followed by a ```text block gets that block
replaced by the real output (the header and the findings; the passed/skipped lists and the
summary are left out). tests/test_rule_docs.py checks the blocks are current.

Usage: python tools/refresh_doc_examples.py [--check]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bnbdoctor.doctor import diagnose  # noqa: E402
from bnbdoctor.hosts.fixture import FixtureHost  # noqa: E402
from bnbdoctor.redact import Redactor  # noqa: E402
from bnbdoctor.render.text import render_text  # noqa: E402
from bnbdoctor.report_io import redact_report  # noqa: E402
from bnbdoctor.rules import get_rule  # noqa: E402

EXAMPLE = re.compile(r"`bnbdoctor --fixture (?P<fixture>[a-z0-9-]+) --rule (?P<rule>BNB\d{3})`"
                     r"(?P<between>(?:(?!```|\n## ).)*?)```text\n(?P<block>.*?)```", re.DOTALL)


def example_output(fixture: str, rule_id: str) -> str:
    """What `bnbdoctor --fixture F --rule R --text` prints, cut after the findings."""
    host = FixtureHost.named(fixture)
    rule = get_rule(rule_id)
    assert rule is not None, rule_id
    report = redact_report(diagnose(host, rules=[rule]), Redactor.for_machine(host.os_info()))
    text = render_text(report)
    for marker in ("\nVerified (", "\nNot checked (", "\nSummary:"):
        cut = text.find(marker)
        if cut != -1:
            text = text[:cut]
    return text.rstrip() + "\n"


def stale_pages() -> list[tuple[Path, str, str, str, str]]:
    """(page, fixture, rule, documented block, current block) for each block that differs."""
    out = []
    for page in sorted((ROOT / "docs" / "rules").glob("BNB*.md")):
        for match in EXAMPLE.finditer(page.read_text(encoding="utf-8")):
            current = example_output(match["fixture"], match["rule"])
            if match["block"] != current:
                out.append((page, match["fixture"], match["rule"], match["block"], current))
    return out


def main() -> int:
    stale = stale_pages()
    if "--check" in sys.argv:
        for page, fixture, rule, _, _ in stale:
            print(f"{page.relative_to(ROOT)}: the {fixture} / {rule} example is out of date")
        return 1 if stale else 0
    for page, fixture, rule, old, new in stale:
        text = page.read_text(encoding="utf-8").replace(f"```text\n{old}```", f"```text\n{new}```", 1)
        page.write_text(text, encoding="utf-8")
        finding = rule in new.split("\n\n", 1)[-1]
        print(f"{page.relative_to(ROOT)}: refreshed ({fixture}){'' if finding else ' — NO FINDING NOW: edit the page'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
