"""What the workflow_logs rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

import re

VERSIONS_CHECK = (
    'python -c "import transformers, bitsandbytes; print(transformers.__version__, bitsandbytes.__version__)"'
)


def _bits(text: str) -> str | None:
    found = re.search(r"load_in_([48])bit|`([48])-bit`|([48])-bit", text)
    return next((g for g in found.groups() if g), None) if found else None
