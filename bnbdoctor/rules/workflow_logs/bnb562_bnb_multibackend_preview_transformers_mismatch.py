"""BNB562 bnb-multibackend-preview-transformers-mismatch: passes when the log shows no transformers multi-backend check failing on a frozenset."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

FINDING = log.LogFinding(
    (S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH,),
    title="transformers' bitsandbytes multi-backend check fails on a frozenset (a transformers bug); upgrade "
    "transformers",
    explanation="With a multi-backend build of bitsandbytes installed, transformers 4.49's "
    "_validate_bnb_multi_backend_availability calls discard() on bitsandbytes' frozenset of supported devices, which "
    "has none, so every model load with a BitsAndBytesConfig fails before quantizing. transformers PR #36975 fixed "
    "it.",
    fix="Upgrade transformers past the fix, or install a regular bitsandbytes release instead of the multi-backend "
    "preview where the platform has one.",
    commands=("pip install -U transformers", VERSIONS_CHECK),
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

    When the installed bitsandbytes is a multi-backend build (the 0.44.1.dev0 preview wheels, ROCm builds),
    transformers 4.49 checks the devices it supports: it takes bitsandbytes' set of supported devices, a `frozenset`,
    and removes `"cpu"` from it with `discard()`, which a frozenset does not have. Loading any model with a
    `BitsAndBytesConfig` fails there, before anything is quantized (transformers #36371 on Windows, #36949 on Linux
    with a ROCm build). It is a bug of transformers that only multi-backend previews of bitsandbytes reach; the
    reporter of #36949 fixed it in transformers PR #36975, which builds a new frozenset instead.

    ## How to fix

    Upgrade transformers past the fix:

    ```bash
    pip install -U transformers
    ```

    or, where the platform has a regular bitsandbytes release (CUDA on Linux and Windows), install that instead of the
    multi-backend preview (`pip install -U bitsandbytes`).
    """
    if facts.log is None:
        return None
    lines = [m.text for m in facts.log.matches if m.signature == S.BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH]
    own = any("available_devices" in text or "_validate_bnb_multi_backend" in text for text in lines)
    bnb = facts.python.bitsandbytes if facts.python else None
    if not own and not (bnb is not None and bnb.installed):
        return None
    return FINDING.hit(facts)
