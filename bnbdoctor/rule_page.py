"""``bnbdoctor rule ID``: print a rule's documentation page (as ``ruff rule`` does), from any install.

The pages are the ones ``python -m bnbdoctor.ruledocs`` generates into ``docs/rules/``. A wheel carries
them as ``bnbdoctor/data/rules/<ID>.md`` (setup.py's build hook copies them); a checkout reads
``docs/rules/`` itself. Every finding's ``docs`` line names this command (``Rule.doc``), so the line
points at something that exists wherever bnbdoctor is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from bnbdoctor.argparsing import Parser
from bnbdoctor.contract import guarded, write_output
from bnbdoctor.report import ExitCode

_PACKAGE = Path(__file__).resolve().parent
INDEX = "README.md"
_ID = re.compile(r"^BNB\d{3}$")


class RulePageError(ValueError):
    """An unknown rule or a missing page; the message is one line for the user."""


def command_for(rule_id: str) -> str:
    """The command that prints ``rule_id``'s page: what a finding's ``docs`` line shows."""
    return f"bnbdoctor rule {rule_id}"


def pages_dir() -> Path | None:
    """The folder of rule pages this install has: the packaged copy, else a checkout's ``docs/rules/``."""
    for folder in (_PACKAGE / "data" / "rules", _PACKAGE.parent / "docs" / "rules"):
        if (folder / INDEX).is_file():
            return folder
    return None


def known_ids(folder: Path) -> list[str]:
    return sorted(page.stem for page in folder.glob("BNB*.md") if _ID.match(page.stem))


def page_text(wanted: str | None) -> str:
    """The page of rule ``wanted`` (an id, any case, or a rule's name), or the index when ``wanted`` is None."""
    folder = pages_dir()
    if folder is None:
        raise RulePageError("this install has no rule pages (rebuild it from a checkout: pip install .)")
    if wanted is None:
        return (folder / INDEX).read_text(encoding="utf-8")
    rule_id = wanted.strip().upper()
    if not _ID.match(rule_id):
        from bnbdoctor.rules import get_rule

        found = get_rule(wanted)
        if found is None:
            raise RulePageError(f"unknown rule {wanted!r} (see bnbdoctor --list-rules)")
        rule_id = found.id
    page = folder / f"{rule_id}.md"
    if not page.is_file():
        raise RulePageError(f"unknown rule {wanted!r} (known: {', '.join(known_ids(folder))})")
    return page.read_text(encoding="utf-8")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bnbdoctor rule",
        description="Print a rule's documentation page (Markdown): what it detects, why it matters, how to fix it.",
    )
    parser.add_argument("rule", nargs="?", help="a rule id (BNB306) or name (libstdcxx-too-old); none: the index")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the page to FILE instead of stdout")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))

    def run() -> int:
        write_output(page_text(args.rule), args.output, RulePageError)
        return int(ExitCode.OK)

    return guarded(run, (RulePageError,), debug=False)
