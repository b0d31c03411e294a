"""Write bnbdoctor/data/bnb_releases.json from PyPI's JSON API (a development tool; needs network).

Records, per published bitsandbytes release, the wheel platform tags and Requires-Python as PyPI
serves them, so that bnbdoctor can check an install command against a machine without the network:

    python tools/fetch_bnb_index.py            # fetch https://pypi.org/pypi/bitsandbytes/json
    python tools/fetch_bnb_index.py FILE.json  # or read a saved copy of that answer
"""

from __future__ import annotations

import json
import sys
import urllib.request
from datetime import date
from pathlib import Path

from packaging.version import Version

URL = "https://pypi.org/pypi/bitsandbytes/json"
OUT = Path(__file__).resolve().parent.parent / "bnbdoctor" / "data" / "bnb_releases.json"


def _tag(filename: str, kind: str) -> str:
    if kind != "bdist_wheel":
        return "sdist"
    return filename[: -len(".whl")].rsplit("-", maxsplit=1)[-1]


def main(argv: list[str]) -> int:
    if argv:
        raw = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    else:
        with urllib.request.urlopen(URL, timeout=30) as answer:
            raw = json.load(answer)
    releases = []
    for version in sorted(raw["releases"], key=Version):
        files = raw["releases"][version]
        if not files:
            continue
        releases.append(
            {
                "version": version,
                "tags": sorted({_tag(f["filename"], f["packagetype"]) for f in files}),
                "requires_python": next((f["requires_python"] for f in files if f.get("requires_python")), None),
                "yanked": all(f.get("yanked") for f in files),
            }
        )
    document = {
        "source": f"{URL} (fetched {date.today().isoformat()} by tools/fetch_bnb_index.py)",
        "releases": releases,
    }
    rows = ",\n".join("  " + json.dumps(release) for release in releases)  # one release per line: readable diffs
    OUT.write_text(f'{{"source": {json.dumps(document["source"])},\n "releases": [\n{rows}\n]}}\n', encoding="utf-8")
    print(f"wrote {OUT} ({len(releases)} releases)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
