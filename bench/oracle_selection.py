"""How often bnbdoctor's loader model agrees with the releases themselves (the committed oracle table).

    python bench/oracle_selection.py            # R releases, N scenarios, D disagreements
    python bench/oracle_selection.py --list     # and each disagreement, one line each

The table is tests/data/oracle/bnb_loader.json, written by tools/oracle_bnb.py from each release's own
code; explained disagreements (a written reason in tools/oracle_diff.py) are counted apart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import oracle_diff


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each disagreement")
    args = parser.parse_args()
    table = oracle_diff.load()
    found = oracle_diff.disagreements(table)
    unexplained = [d for d in found if d.reason is None]
    if args.list:
        for item in found:
            print(item.line() + (f"  (explained: {item.reason})" if item.reason else ""))
    releases = len({row["release"] for row in table["rows"]})
    print(
        f"{releases} releases, {len(table['rows'])} scenarios, {len(unexplained)} disagreements"
        f" ({len(found) - len(unexplained)} explained)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
