"""BNB213 known-bad-bnb-release: passes when the installed bitsandbytes release has no known shipped regression."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.bad_releases import DOWNSTREAM_PINS, REGRESSIONS, fixing_release, regressions_in
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, versioned


# ------------------------------------------------------------------------------ known-bad releases
@rule(
    Severity.WARNING,
    "The installed bitsandbytes release has no known shipped regression",
    needs=("python",),
    covers=("known_bad_bnb_release",),
    references=(*dict.fromkeys(ref for row in REGRESSIONS for ref in row.references), DOWNSTREAM_PINS),
)
def known_bad_release(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when the installed bitsandbytes version (from its metadata, or a
    version a log prints) lies in a row of bnbdoctor's table of shipped regressions
    (`bnbdoctor/knowledge/bad_releases.py`):

    - {{ bad_releases.DYNAMIC_MAP_INDENT.releases.first_text }} to {{ bad_releases.DYNAMIC_MAP_INDENT.releases.last_text }}:
      the 8-bit optimizers' quantization map is built wrong (an `if` block indented into a loop of
      `create_dynamic_map`, as the releases' `functional.py` shows), so AdamW8bit training goes to a NaN loss without
      an error; issues #227 and #152, kohya-ss/sd-scripts #523, fixed in {{ bad_releases.DYNAMIC_MAP_INDENT.fixed_in }}.
    - {{ bad_releases.PARAMS4BIT_REQUANTIZED.releases.first_text }}: `Params4bit.to()` drops `bnb_quantized`, so a
      4-bit model moved between devices is quantized again (`RuntimeError: Blockwise quantization only supports
      16/32-bit floats, but got torch.uint8`); issue #1664, fixed in {{
      bad_releases.PARAMS4BIT_REQUANTIZED.fixed_in }} (PR #1665).
    - {{ bad_releases.INT8_DEVICE_MOVE.releases.first_text }}: moving 8-bit parameters between devices is broken, so
      pre-quantized 8-bit checkpoints generate garbage without an error; issue #1775, fixed in {{
      bad_releases.INT8_DEVICE_MOVE.fixed_in }} (PR #1776).
    - {{ bad_releases.INT8_OFFLOAD.releases.first_text }} to {{ bad_releases.INT8_OFFLOAD.releases.last_text }}: int8
      CPU/disk offload through accelerate fails; fixed in {{ bad_releases.INT8_OFFLOAD.fixed_in }} (PR #1786).

    Comparison uses the release numbers only: a local or dev build of a listed release counts as that release. An
    unknown version does not fire.

    ## Why it matters

    These releases pass `python -m bitsandbytes` and load fine; the regression shows only in the workflow it breaks,
    often as wrong output rather than an error. Downstream projects exclude them from their requirements (unsloth
    requires `bitsandbytes!={{ bad_releases.PARAMS4BIT_REQUANTIZED.releases.first_text }},!={{ bad_releases.INT8_DEVICE_MOVE.releases.first_text }}`), and a pinned or cached install can keep one around long after the fix.

    ## How to fix

    Install the fixing patch release or newer. The suggested command keeps the upper bound the installed torch needs
    (see [BNB206](BNB206.md)), so pip does not replace a CUDA build of torch:

    ```bash
    pip install -U "bitsandbytes>={{ bad_releases.INT8_OFFLOAD.fixed_in }}"
    python -m bitsandbytes
    ```
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed and bnb.version):
        return None
    rows = regressions_in(bnb.version)
    if not rows:
        return None
    fixed = fixing_release(rows)
    spec = fixed.pip_spec()  # bnbdoctor.remedy narrows it to the releases that install here, or says none does
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} shipped a known regression "
        f"(fixed in {fixed.first_text})",
        explanation=f"bitsandbytes {bnb.version} is a release with "
        + ("a regression" if len(rows) == 1 else f"{len(rows)} regressions")
        + " fixed in a later patch release: "
        + "; ".join(f"{row.what} (fixed in {row.fixed_in}; {row.symptom})" for row in rows)
        + ". It loads and passes `python -m bitsandbytes`; the failure shows only in the workflow it breaks.",
        evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")]
        + [Evidence("regression", f"{row.what}: fixed in {row.fixed_in}", None) for row in rows]
        + log.line_evidence(facts, S.QUANTIZE_PACKED_WEIGHTS, limit=1),
        remediation=Remediation(
            f"Install bitsandbytes {fixed.first_text} or newer (the next patch release, or the newest release your "
            "torch supports).",
            [f'pip install -U "bitsandbytes{spec}"', "python -m bitsandbytes"],
        ),
        references=[ref for row in rows for ref in row.references],
    )
