"""BNB564 device-map-requires-accelerate: passes when the log shows no device_map refused for want of accelerate."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import ACCELERATE_CHECK_NEEDS_TORCH, accelerate_minimum
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

ACCELERATE_CHECK = 'python -c "import sys, accelerate; print(sys.executable, accelerate.__version__)"'

#: The minimum a message names: "requires Accelerate: `pip install 'accelerate>=0.26.0'`" (transformers 4.45+).
_MINIMUM = re.compile(r"accelerate>=(?P<minimum>\d[\w.]{0,20})")

FINDING = log.LogFinding(
    (S.DEVICE_MAP_NEEDS_ACCELERATE,),
    title="transformers finds no accelerate it accepts{named}, and a device_map needs one",
    explanation="from_pretrained with a device_map (device_map='auto', as 4-bit and 8-bit loading uses) or "
    "low_cpu_mem_usage asks is_accelerate_available(), which was False: accelerate is missing from the Python that "
    "runs, older than this transformers' minimum{named}, installed into another Python (the system pip beside an "
    "embedded or conda Python, which is why `pip show accelerate` can show it), or installed after the notebook "
    f"kernel started. From transformers {ACCELERATE_CHECK_NEEDS_TORCH.first_text} it is also False when transformers "
    "turned torch off.{shown}{torch_off}",
    fix="Install or upgrade accelerate with the Python that runs the model, then restart the kernel or the "
    "application.",
    commands=('python -m pip install -U "accelerate{spec}"', ACCELERATE_CHECK),
)


@rule(
    Severity.ERROR,
    "The log shows no device_map refused for want of accelerate",
    needs=("log",),
    covers=("device_map_requires_accelerate",),
    references=(
        "https://github.com/googlecolab/colabtools/issues/4136",
        "https://github.com/QwenLM/Qwen3/issues/173",
    ),
    confirm=(ACCELERATE_CHECK,),
)
def device_map_requires_accelerate(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `ImportError: Using low_cpu_mem_usage=True or a device_map requires Accelerate:
    pip install accelerate` (later releases name the minimum: `pip install 'accelerate>=…'`), raised by
    `from_pretrained` with a `device_map`.

    ## Why it matters

    4-bit and 8-bit loading goes with `device_map="auto"`, which needs accelerate; transformers asks
    `is_accelerate_available()`, which requires a minimum that rises with transformers
    (`knowledge.transformers.ACCELERATE_MINIMUM_BY_RELEASE`, read from every release by
    `tests/data/oracle/transformers_gates.json`; where the log shows transformers' and accelerate's versions, the
    finding compares them). The threads show accelerate installed and the error anyway: older than the release's
    minimum, installed by another
    Python's pip (a ComfyUI portable's `python_embeded`), or installed into a running notebook kernel.

    ## How to fix

    ```bash
    python -m pip install -U "accelerate>=X"   # X: the minimum the message names
    python -c "import sys, accelerate; print(sys.executable, accelerate.__version__)"
    ```

    Run both with the Python that runs the model, then restart the kernel or the application.
    """
    stated = [_MINIMUM.search(m.text) for m in log.matches(facts, S.DEVICE_MAP_NEEDS_ACCELERATE)]
    minimum = next((m.group("minimum").rstrip(".") for m in stated if m is not None), None)
    transformers, accelerate = log.version(facts, "transformers"), log.version(facts, "accelerate")
    minimum = minimum or (accelerate_minimum(transformers) if transformers else None)
    return FINDING.hit(
        facts,
        named=f" ({minimum} or newer)" if minimum else "",
        spec=f">={minimum}" if minimum else "",
        shown=_shown(accelerate, minimum, transformers),
        torch_off=" The log shows transformers turned torch off here (BNB563)."
        if log.seen(facts, S.TRANSFORMERS_TORCH_UNAVAILABLE)
        else "",
    )


def _shown(accelerate: str | None, minimum: str | None, transformers: str | None) -> str:
    """What the log's versions say: the installed accelerate against the release's minimum."""
    have, need = release_tuple(accelerate), release_tuple(minimum)
    if accelerate is None or have is None or need is None:
        return ""
    of = f"transformers {transformers}'s minimum" if transformers else "the minimum the message names"
    if have < need:
        return f" The log shows accelerate {accelerate}, older than {of} ({minimum}): that is the cause."
    return f" The log shows accelerate {accelerate}, which meets {of} ({minimum}): another Python or a stale kernel."
