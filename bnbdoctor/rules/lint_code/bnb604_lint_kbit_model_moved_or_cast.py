"""BNB604 lint-kbit-model-moved-or-cast: passes when no 4-bit or 8-bit model is moved with .to()/.cuda() or cast with .half()/.float()."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.kbit import BNB_4BIT_MOVE, BNB_8BIT_MOVE
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.lint_code._shared import TRANSFORMERS_BNB, _evidence, _installed, _sites


@rule(
    Severity.ERROR,
    "No 4-bit or 8-bit model is moved with .to()/.cuda() or cast with .half()/.float()",
    needs=("lint",),
    covers=("kbit_model_to_device_unsupported",),
    references=("https://github.com/huggingface/transformers/issues/38717", TRANSFORMERS_BNB),
)
def kbit_model_moved(facts: Facts) -> list[Hit]:
    """## What it detects

    `.to(...)`, `.cuda()`, `.half()`, `.float()` or `.bfloat16()` on a model loaded in 4 or 8 bits.

    ## Why it matters

    A dtype cast of a quantized model is refused with every release. A device move is refused for
    4-bit models with bitsandbytes before {{ kbit.BNB_4BIT_MOVE.first_text }} and for 8-bit models before {{ kbit.BNB_8BIT_MOVE.first_text }}; with newer
    bitsandbytes it works, and no finding is reported when the examined interpreter has one.

    ## How to fix

    Place the model when loading it (`device_map=...`) and choose its dtype with `torch_dtype=` and
    `bnb_4bit_compute_dtype=`; drop the `.to()`/`.half()` call.
    """
    bnb = _installed(facts, "bitsandbytes")
    hits = []
    for site in _sites(facts, "move"):
        bits = site.detail.get("bits", "4")
        boundary = BNB_8BIT_MOVE if bits == "8" else BNB_4BIT_MOVE
        call = f"{site.detail.get('model', 'model')}.{site.detail.get('method', 'to')}({site.detail.get('args', '')})"
        if site.detail.get("cast") == "yes":
            title = f"{call} casts a {bits}-bit model: transformers refuses it with every release"
            why = "Quantized weights have their own storage dtype; a cast would destroy them, so transformers raises."
            severity: Severity | None = None
        elif bnb and boundary.contains(bnb):
            continue
        elif bnb:
            title = f"{call} moves a {bits}-bit model: refused with bitsandbytes {bnb} (needs {boundary.first_text}+)"
            why = f"transformers lets a {bits}-bit model move only with bitsandbytes {boundary.first_text} or newer."
            severity = None
        else:
            title = f"{call} moves a {bits}-bit model: refused unless bitsandbytes is {boundary.first_text} or newer"
            why = (
                f"transformers lets a {bits}-bit model move only with bitsandbytes {boundary.first_text} or newer; "
                "the installed release was not examined."
            )
            severity = Severity.WARNING
        hits.append(
            Hit(
                title=title,
                explanation=why + " device_map= places a quantized model where it is loaded.",
                evidence=_evidence(site),
                remediation=Remediation(
                    "Drop the call; place the model with device_map= (and choose dtypes with torch_dtype= and "
                    "bnb_4bit_compute_dtype=) in from_pretrained."
                ),
                severity=severity,
            )
        )
    return hits
