"""``python -m bnbdoctor.ruledocs [--check]``: write docs/rules/ and the rule cases' snapshots from the rules,
or check that they are current."""

from __future__ import annotations

import sys

from bnbdoctor.ruledocs.cases import ROOT, stale_snapshots, write_snapshots
from bnbdoctor.ruledocs.pages import stale_pages, write_pages


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = [*stale_pages(), *(case.path for case in stale_snapshots())]
        for path in stale:
            sys.stdout.write(f"{path.relative_to(ROOT)} is out of date: run python -m bnbdoctor.ruledocs\n")
        return 1 if stale else 0
    for path in [*write_snapshots(), *write_pages()]:
        sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
