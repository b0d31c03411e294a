"""How often bnbdoctor's model of transformers' bitsandbytes gates agrees with the releases themselves.

    python bench/bench_oracle_transformers.py            # releases, scenarios, disagreements, explained, seconds
    python bench/bench_oracle_transformers.py --list     # and each disagreement, one line each

The table is tests/data/oracle/transformers_gates.json, written by tools/oracle_transformers.py from each
release's own gate code; disagreements the table's written ``reasons`` explain are counted apart. The seconds
are the comparison's (``oracle_transformers.disagreements``, what tests/test_oracle_transformers.py runs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import oracle_transformers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each disagreement")
    args = parser.parse_args()
    table = oracle_transformers.load_table()
    started = time.perf_counter()
    found = oracle_transformers.disagreements(table)
    seconds = time.perf_counter() - started
    unexplained = [d for d in found if d.reason is None]
    if args.list:
        for item in found:
            print(item)
    print(
        f"{len(table['releases'])} releases, {len(table['rows'])} scenarios, {len(unexplained)} disagreements"
        f" ({len(found) - len(unexplained)} explained), {seconds:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
