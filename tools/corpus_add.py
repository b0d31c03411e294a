"""Add mined threads to the development corpus (tests/data/corpus/threads.jsonl), one checked record each.

A batch file holds one block per thread. The block's header lines come first, then a line ``---8<---``,
then the text exactly as the user pasted it (trimmed to the relevant lines, never reworded)::

    @@@ https://github.com/OWNER/REPO/issues/N
    family: cuda_setup_failed_despite_gpu_available     (a catalog id, new:<slug> or outside:<Exception>)
    year: 2023                                          (optional)
    platform: windows                                   (optional)
    error: RuntimeError: CUDA Setup failed despite GPU being available.   (a line of the pasted text)
    resolution: Upgrading bitsandbytes fixed it.        ("none in thread" when the thread has none)
    ---8<---
    ...pasted lines...

Every record is checked before anything is written: the URL is a GitHub issue or discussion, is not
held out (../shared/tools/heldout_check.py) and is not in the corpus yet; the family is well formed;
the error line is one of the pasted lines. A batch with any bad record writes nothing.

    python tools/corpus_add.py BATCH.txt ...    # check, then append
    python tools/corpus_add.py --check          # check the corpus as it is
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus" / "threads.jsonl"
CATALOG = ROOT / "bnbdoctor" / "data" / "failure_catalog.json"
SHARED_TOOLS = ROOT.parent / "shared" / "tools"

FIELDS = ("url", "repo", "year", "platform", "family", "error_line", "resolution", "pasted")
PLATFORMS = {"linux", "windows", "wsl", "macos", "rocm", "jetson", "colab", "kaggle", "xpu", "docker", "unknown"}
ISSUE_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(issues|discussions)/(\d+)$")
FAMILY = re.compile(r"^(new:[a-z0-9][a-z0-9_]*|outside:[A-Za-z_][A-Za-z0-9_.]*)$")
CUT = "---8<---"


def catalog_ids() -> set[str]:
    return {entry["id"] for entry in json.loads(CATALOG.read_text(encoding="utf-8"))}


def heldout_checker() -> Any:
    sys.path.insert(0, str(SHARED_TOOLS))
    try:
        from heldout_check import is_heldout  # type: ignore[import-not-found]
    except ImportError:
        sys.exit(f"corpus_add: the held-out check is not at {SHARED_TOOLS}; nothing written")
    return is_heldout


def canonical(url: str) -> str:
    """A thread URL without fragment, query or trailing slash; pull requests as issues."""
    url = url.strip().split("#")[0].split("?")[0].rstrip("/").replace("/pull/", "/issues/")
    return url.replace("://www.github.com/", "://github.com/")


def parse_batch(text: str) -> list[dict[str, Any]]:
    records = []
    for block in re.split(r"^@@@ ", text, flags=re.MULTILINE)[1:]:
        head, sep, pasted = block.partition("\n" + CUT + "\n")
        if not sep:
            raise ValueError(f"block without a {CUT} line: {block[:80]!r}")
        url, *lines = head.split("\n")
        fields: dict[str, str] = {}
        for line in lines:
            if line.strip():
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
        url = canonical(url)
        match = ISSUE_URL.match(url)
        year = fields.get("year")
        records.append(
            {
                "url": url,
                "repo": match.group(1) if match else "",
                "year": int(year) if year else None,
                "platform": fields.get("platform") or "unknown",
                "family": fields.get("family", ""),
                "error_line": fields.get("error", ""),
                "resolution": fields.get("resolution") or "none in thread",
                "pasted": pasted.rstrip("\n"),
            }
        )
    return records


def problems(record: dict[str, Any], known: set[str], catalog: set[str], is_heldout: Any) -> list[str]:
    url = record.get("url", "")
    out = []
    if list(record) != list(FIELDS):
        out.append(f"fields {list(record)} are not {list(FIELDS)}")
    if not ISSUE_URL.match(url):
        out.append("not a GitHub issue or discussion URL")
    if is_heldout(url):
        out.append("HELD OUT: drop this thread and do not use it")
    if url in known:
        out.append("already in the corpus")
    family = record.get("family", "")
    if family not in catalog and not FAMILY.match(family):
        out.append(f"family {family!r} is neither a catalog id nor new:<slug> / outside:<Exception>")
    if family.startswith("new:") and family[4:] in catalog:
        out.append(f"{family} is a catalog id already")
    year = record.get("year")
    if year is not None and not 2020 <= year <= 2026:
        out.append(f"year {year} out of range")
    if record.get("platform") not in PLATFORMS:
        out.append(f"platform {record.get('platform')!r} not one of {sorted(PLATFORMS)}")
    error, pasted = record.get("error_line", ""), record.get("pasted", "")
    if not error.strip() or not pasted.strip():
        out.append("empty error line or pasted text")
    elif not any(error.strip() in line for line in pasted.splitlines()):
        out.append(f"error line not found in the pasted text: {error!r}")
    if not record.get("resolution"):
        out.append("no resolution")
    return out


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    is_heldout, catalog = heldout_checker(), catalog_ids()
    corpus = load()
    if argv == ["--check"]:
        seen: set[str] = set()
        bad = 0
        for record in corpus:
            for problem in problems(record, seen, catalog, is_heldout):
                print(f"{record.get('url')}: {problem}")
                bad += 1
            seen.add(record.get("url", ""))
        print(f"{len(corpus)} records; {bad} problems")
        return 1 if bad else 0
    known = {r["url"] for r in corpus}
    new: list[dict[str, Any]] = []
    bad = 0
    for name in argv:
        for record in parse_batch(Path(name).read_text(encoding="utf-8")):
            for problem in problems(record, known, catalog, is_heldout):
                print(f"{name}: {record['url']}: {problem}")
                bad += 1
            known.add(record["url"])
            new.append(record)
    if bad:
        print(f"{bad} problems; nothing written")
        return 1
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    with CORPUS.open("a", encoding="utf-8") as out:
        for record in new:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"added {len(new)}; corpus now {len(corpus) + len(new)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
