"""What the workflow_logs rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

import re

VERSIONS_CHECK = (
    'python -c "import transformers, bitsandbytes; print(transformers.__version__, bitsandbytes.__version__)"'
)


QUANT_DOCS = "https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes"


#: The rule that reports an error no family names: explain keeps it only when no error finding stands.
UNRECOGNISED_ERROR_RULE = "BNB549"


def _bits(text: str) -> str | None:
    found = re.search(r"load_in_([48])bit|`([48])-bit`|([48])-bit", text)
    return next((g for g in found.groups() if g), None) if found else None
