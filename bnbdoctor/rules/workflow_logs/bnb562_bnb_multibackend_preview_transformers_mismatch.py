"""BNB562 bnb-multibackend-preview-transformers-mismatch: passes when the log shows no transformers multi-backend check failing on a frozenset."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.transformers import BNB_CHECK_WITHOUT_CUDA, FROZENSET_DISCARD_BUG
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

FINDING = log.LogFinding(
    (S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH,),
    title="transformers' bitsandbytes device check crashes on a frozenset (a transformers bug) where torch sees only "
    "the CPU",
    explanation=f"transformers {FROZENSET_DISCARD_BUG.first_text}-{FROZENSET_DISCARD_BUG.last_text}, with a "
    "multi-backend bitsandbytes installed, check torch's devices in _validate_bnb_multi_backend_availability; where "
    "torch sees only the CPU they call discard() on a frozenset, which has none, so every model load with a "
    "BitsAndBytesConfig fails before quantizing (fixed by transformers PR #36975).",
    fix=f"Upgrade transformers ({BNB_CHECK_WITHOUT_CUDA.first_text} accepts a CPU-only machine), or make torch see the "
    "GPU (a CUDA build of torch, a visible device) if the model was meant to run on one.",
    commands=(
        f'pip install -U "transformers>={BNB_CHECK_WITHOUT_CUDA.first_text}"',
        'python -c "import torch; print(torch.__version__, torch.cuda.is_available())"',
        VERSIONS_CHECK,
    ),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no transformers multi-backend check failing on a frozenset",
    needs=("log",),
    covers=("bnb_multibackend_preview_transformers_mismatch",),
    references=(
        "https://github.com/huggingface/transformers/issues/36371",
        "https://github.com/huggingface/transformers/issues/36949",
    ),
    confirm=(VERSIONS_CHECK,),
)
def bnb_multibackend_preview_transformers_mismatch(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `available_devices.discard("cpu")` line in `_validate_bnb_multi_backend_availability`
    (transformers/integrations/bitsandbytes.py), on a report that the check alters a frozenset, and on
    `AttributeError: 'frozenset' object has no attribute 'discard'` in a log that shows bitsandbytes (alone the
    exception is only Python's).

    ## Why it matters

    transformers {{ transformers.FROZENSET_DISCARD_BUG.first_text }}-{{ transformers.FROZENSET_DISCARD_BUG.last_text }}
    check, when the installed bitsandbytes is a multi-backend one (its preview wheels, ROCm builds, and the releases
    that declare the `multi_backend` feature), which of torch's devices it supports. Where torch sees only the CPU
    (a CPU build of torch, no visible GPU) they take bitsandbytes' set of supported devices, a `frozenset`, and remove
    `"cpu"` from it with `discard()`, which a frozenset does not have: loading any model with a `BitsAndBytesConfig`
    fails there, before anything is quantized (transformers #36371 on Windows, #36949 on Linux with a ROCm build;
    bnbdoctor's replay of every transformers release, `tools/oracle_transformers.py`, shows the same crash). The
    reporter of #36949 fixed it in transformers PR #36975; releases up to
    {{ transformers.CPU_DISCARDED.last_text }} then discard the CPU and refuse, and
    {{ transformers.BNB_CHECK_WITHOUT_CUDA.first_text }} accepts a CPU-only machine.

    ## How to fix

    Upgrade transformers, and check what torch sees:

    ```bash
    pip install -U "transformers>={{ transformers.BNB_CHECK_WITHOUT_CUDA.first_text }}"
    python -c "import torch; print(torch.__version__, torch.cuda.is_available())"
    ```

    If the model was meant to run on a GPU, the crash hides that torch does not see it: install a CUDA (or ROCm) build
    of torch, or make the device visible.
    """
    lines = [m.text for m in log.matches(facts, S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH)]
    if not lines:
        return None
    own = any("available_devices" in text or "_validate_bnb_multi_backend" in text for text in lines)
    bnb = facts.python.bitsandbytes if facts.python else None
    if not own and not (bnb is not None and bnb.installed):
        return None
    return FINDING.hit(facts)
