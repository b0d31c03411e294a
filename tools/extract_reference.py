"""Derive bnbdoctor/data/bnb_wheels.json from ../shared/reference/bnb_binaries.json.

The reference file records what each real bitsandbytes wheel ships (per native library: backend,
CUDA toolkit, SASS/PTX architectures, DT_NEEDED, RUNPATH, symbol-version needs). bnbdoctor keeps
only the fields its rules read, with the source named, so the package does not need ../shared.

Usage: python tools/extract_reference.py [path/to/bnb_binaries.json]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "reference" / "bnb_binaries.json"
TARGET = ROOT / "bnbdoctor" / "data" / "bnb_wheels.json"


def _arch_numbers(names: list[str] | None) -> list[int]:
    return sorted({int(m.group(1)) for n in names or [] if (m := re.search(r"_(\d+)", n))})


def main(source: Path = DEFAULT_SOURCE) -> None:
    raw = json.loads(source.read_text(encoding="utf-8"))
    wheels = []
    for wheel in raw["wheels"]:
        libraries = []
        for lib in wheel["libraries"]:
            entry = {
                "file": lib["file"],
                "backend": lib.get("backend"),
                "cuda_toolkit": lib.get("cuda_toolkit"),
                "sass": _arch_numbers(lib.get("cuda_sass_archs")),
                "ptx": _arch_numbers(lib.get("cuda_ptx_archs")),
                "needed": lib.get("needed", []),
                "runpath": lib.get("runpath"),
                "version_needs": lib.get("version_needs", {}),
                "max_required": lib.get("max_required", {}),
            }
            libraries.append({k: v for k, v in entry.items() if v not in (None, [], {})})
        wheels.append(
            {
                "version": wheel["version"],
                "platform_tag": wheel["platform_tag"],
                "requires_python": wheel.get("requires_python"),
                "cuda_toolkits": wheel.get("cuda_toolkits_shipped", []),
                "rocm_versions": wheel.get("rocm_versions_shipped", []),
                "libraries": libraries,
            }
        )
    out = {
        "source": "shared/reference/bnb_binaries.json (real PyPI wheels, inspected with pyelftools/objdump and a "
        "fatbin parser)",
        "generated_from": raw.get("generated"),
        "wheels": wheels,
    }
    TARGET.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {TARGET} ({TARGET.stat().st_size} bytes, {len(wheels)} wheels)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SOURCE)
