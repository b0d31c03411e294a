"""Count the development corpus (tests/data/corpus/threads.jsonl) for its README, as Markdown.

Prints the counts per family kind, per year, per platform, per repository and per family, the tables
tests/data/corpus/README.md shows under "Counts". Run it after adding threads and paste its output over
that section.

    python tools/corpus_stats.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus" / "threads.jsonl"

# Repositories GitHub renamed or transferred: the corpus keeps each URL as the thread was found,
# the counts put them together under the current name.
RENAMED = {
    "TimDettmers/bitsandbytes": "bitsandbytes-foundation/bitsandbytes",
    "oobabooga/text-generation-webui": "oobabooga/textgen",
}


def kind(family: str) -> str:
    return family.split(":", 1)[0] if ":" in family else "catalog"


def table(title: str, counts: Counter[str], total: int, limit: int | None = None) -> list[str]:
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    lines = [f"| {title} | threads |", "|---|---:|"]
    shown = rows if limit is None else rows[:limit]
    lines += [f"| {name} | {n} |" for name, n in shown]
    rest = rows[len(shown) :]
    if rest:
        most, together = max(n for _, n in rest), sum(n for _, n in rest)
        lines.append(f"| {len(rest)} other repositories, 1–{most} each | {together} |")
    lines.append(f"| **all** | **{total}** |")
    return lines


def render(records: list[dict[str, Any]]) -> str:
    total = len(records)
    kinds = Counter(kind(r["family"]) for r in records)
    years = Counter(str(r["year"]) if r["year"] is not None else "unknown" for r in records)
    platforms = Counter(r["platform"] for r in records)
    repos = Counter(RENAMED.get(r["repo"], r["repo"]) for r in records)
    families = Counter(r["family"] for r in records)
    parts = [
        table("family kind", kinds, total),
        table("year", Counter(dict(sorted(years.items()))), total),
        table("platform", platforms, total),
        table("repository", repos, total, limit=25),
        table("family", families, total),
    ]
    return "\n\n".join("\n".join(part) for part in parts)


def main() -> int:
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(render(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
