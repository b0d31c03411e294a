"""Write ``bnbdoctor/data/bnb_shipped.json``: the native libraries each bitsandbytes wheel ships.

The oracle (``tools/oracle_bnb.py``) reads every unyanked release's wheel file lists from PyPI and keeps
them in its table's header (``tests/data/oracle/bnb_loader.json``: ``header.shipped``, "<version> <tag>"
-> library file names). The doctor needs them to re-diagnose a machine as a fix leaves it (which files
the release a ``pip install`` chooses puts in ``bitsandbytes/``), so this copies them into the package.
``tests/test_shipped.py`` checks the two agree. Run after the oracle: ``python tools/write_bnb_shipped.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tests" / "data" / "oracle" / "bnb_loader.json"
OUT = ROOT / "bnbdoctor" / "data" / "bnb_shipped.json"


def shipped_from_oracle() -> dict[str, list[str]]:
    header = json.loads(ORACLE.read_text(encoding="utf-8"))["header"]
    return {key: sorted(names) for key, names in sorted(header["shipped"].items())}


def document() -> dict[str, object]:
    return {
        "source": "every unyanked bitsandbytes wheel's file list on PyPI, read by tools/oracle_bnb.py "
        "(tests/data/oracle/bnb_loader.json header.shipped); written by tools/write_bnb_shipped.py",
        "shipped": shipped_from_oracle(),
    }


def main() -> int:
    OUT.write_text(json.dumps(document(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(document()['shipped'])} wheels")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
