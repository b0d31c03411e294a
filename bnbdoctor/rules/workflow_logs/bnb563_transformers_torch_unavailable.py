"""BNB563 transformers-torch-unavailable: passes when the log shows transformers using the torch it found."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import TORCH_LOWEST_TRIED, TORCH_MINIMUM_BY_RELEASE
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

TORCH_AND_TRANSFORMERS = (
    'python -c "import sys, torch, transformers; print(sys.executable, torch.__version__, transformers.__version__)"'
)

_DISABLED = re.compile(r"PyTorch >= ?(?P<need>\d[\w.]{0,20}) is required but found (?P<found>\d[\w.+]{0,40})")

TORCH_TOO_OLD = log.LogFinding(
    (S.TRANSFORMERS_TORCH_UNAVAILABLE,),
    title="transformers turned torch {found} off: this transformers needs torch >= {need}",
    explanation="transformers checks torch's version when it is imported and, below the release's minimum, turns "
    "torch off ('Disabling PyTorch'): is_torch_available() is False, every model class raises '… requires the "
    "PyTorch library but it was not found in your environment', and no bitsandbytes quantization can start. It "
    "usually follows upgrading transformers while torch stays pinned for the GPU's CUDA or driver.",
    fix="Keep torch {found} and install a transformers release that accepts it{pin_words}, or upgrade torch to "
    "{need} or newer from the index of your CUDA build (the driver must support that CUDA).",
    commands=(TORCH_AND_TRANSFORMERS,),
)
TORCH_MISSING = log.LogFinding(
    (S.TRANSFORMERS_TORCH_UNAVAILABLE,),
    title="transformers found no torch in the Python that runs it",
    explanation="transformers imports without torch and then refuses every model ('… requires the PyTorch library "
    "but it was not found in your environment', 'None of PyTorch, TensorFlow … or Flax have been found'): "
    "torch is not installed in that Python (an embedded or system Python beside the environment that has it), or "
    "its import failed.",
    fix="Install torch into the Python that runs the application (the CUDA build for your driver, from pytorch.org's "
    "selector), or run the application with the environment that has it; a failing `import torch` prints why.",
    commands=(TORCH_AND_TRANSFORMERS,),
)


def _pin(found: str) -> str | None:
    """The newest transformers line that accepts torch ``found``, as a pip bound, where the oracle's table proves it."""
    have = release_tuple(found)
    lowest = release_tuple(TORCH_LOWEST_TRIED)
    if have is None or lowest is None or have < lowest:
        return None
    for release, minimum in TORCH_MINIMUM_BY_RELEASE:
        needed = release_tuple(minimum) if minimum else None
        if needed is not None and needed > have:
            return release
    return None


@rule(
    Severity.ERROR,
    "The log shows transformers using the torch it found",
    needs=("log",),
    covers=("transformers_torch_unavailable",),
    references=(
        "https://github.com/jingyaogong/minimind/issues/588",
        "https://github.com/XiaoxinHe/G-Retriever/issues/48",
    ),
    confirm=(TORCH_AND_TRANSFORMERS,),
)
def transformers_torch_unavailable(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' own words when it cannot use torch: `Disabling PyTorch because PyTorch >= X is
    required but found Y` (a torch older than the release allows), `… requires the PyTorch library but it was not
    found in your environment` (a model class with torch off), and the import-time notices `None of PyTorch,
    TensorFlow … or Flax have been found` / `PyTorch was not found. Models won't be available`. These texts
    were taken from every transformers release's own code (`tests/data/oracle/transformers_gates.json`).

    ## Why it matters

    transformers decides at import whether torch is usable; below the release's minimum (rising release by release:
    `knowledge.transformers.TORCH_MINIMUM_BY_RELEASE`, from the oracle; the threads show earlier releases refusing an
    older torch too) it turns torch off, and then no model loads and nothing of bitsandbytes runs. The usual history: transformers was upgraded
    while torch stayed pinned for the GPU's CUDA or driver. Without torch in that Python at all (an embedded Python,
    a second interpreter) the same refusal follows.

    ## How to fix

    - Keep torch and install a transformers that accepts it; where the oracle's table proves the bound, the finding
      names it (`pip install "transformers<…"`).
    - Or upgrade torch to the minimum from the index of your CUDA build (the driver must support that CUDA).
    - Where torch is missing, install it into the Python that runs the application.

    ```bash
    python -c "import sys, torch, transformers; print(sys.executable, torch.__version__, transformers.__version__)"
    ```
    """
    stated = [_DISABLED.search(m.text) for m in log.matches(facts, S.TRANSFORMERS_TORCH_UNAVAILABLE)]
    versions = next((m for m in stated if m is not None), None)
    if versions is None:
        return TORCH_MISSING.hit(facts)
    found = versions.group("found")
    pin = _pin(found)
    hit = TORCH_TOO_OLD.hit(
        facts,
        found=found,
        need=versions.group("need").rstrip("."),
        pin_words=f" (transformers<{pin})" if pin else "",
    )
    if hit is not None and pin:
        hit.remediation.commands.append(f'pip install "transformers<{pin}"')
    return hit
