"""BNB536 kbit-model-moved-or-cast: passes when the log shows no .to()/.cuda()/dtype cast refused for a 4-bit or 8-bit model."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.kbit import BNB_4BIT_MOVE, BNB_8BIT_MOVE
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK


@rule(
    Severity.ERROR,
    "The log shows no .to()/.cuda()/dtype cast refused for a 4-bit or 8-bit model",
    needs=("log",),
    covers=("kbit_model_to_device_unsupported",),
    references=(
        "https://github.com/huggingface/transformers/issues/38717",
        "https://github.com/OpenBMB/MiniCPM-V/issues/719",
        "https://github.com/TTPlanetPig/Comfyui_JC2/issues/26",
        "https://github.com/huggingface/diffusers/issues/10653",
    ),
    confirm=(VERSIONS_CHECK,),
)
def kbit_model_moved(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when transformers (or diffusers) refuses to move or cast a bitsandbytes model:

    - ``ValueError: `.to` is not supported for `4-bit` or `8-bit` bitsandbytes models`` and the `.cuda` variant
      (older releases refuse every move);
    - ``Calling `to()` is not supported for `4-bit` quantized models with the installed version of bitsandbytes``
      (needs bitsandbytes {{ kbit.BNB_4BIT_MOVE.first_text }}) and the `8-bit` one (needs
      {{ kbit.BNB_8BIT_MOVE.first_text }});
    - ``You cannot cast a bitsandbytes model in a new `dtype` `` and ``.half()``/``.float()`` refused for a quantized
      model (always refused).

    ## Why it matters

    Quantized parameters cannot be moved or cast like ordinary tensors on older bitsandbytes, so transformers blocks
    `model.to(device)`, `.cuda()` and `.half()`. Scripts and notebook nodes written for full-precision models call
    them out of habit; accelerate's `dispatch_model` calls `model.to()` itself when the device map holds one device.

    ## How to fix

    Drop the `.to()`/`.cuda()`/`.half()` call and place the model with `device_map` at load time (`device_map={"":
    0}`); or upgrade bitsandbytes for moves. Never cast a quantized model's dtype: set `torch_dtype` and
    `bnb_4bit_compute_dtype` when loading.
    """
    matches = log.matches(facts, S.KBIT_MODEL_MOVED)
    if not matches:
        return None
    text = " ".join(m.text for m in matches)
    bnb = bnb_of(facts)
    bnb_version = bnb.version if bnb and bnb.installed else None
    placement = (
        "Drop the call and place the model when loading it: from_pretrained(..., device_map={'': 0}) (or "
        "device_map='auto'); the model is already on its devices and in its dtype."
    )
    if re.search(r"cast a bitsandbytes model|\.?(?:half|float)\(\)`", text):
        return Hit(
            title="A quantized model cannot be cast to another dtype (.to(dtype)/.half()/.float())",
            explanation="The script casts a bitsandbytes model to another dtype. transformers refuses it with every "
            "release: the 4-bit/8-bit weights keep their storage, and the layers compute in bnb_4bit_compute_dtype.",
            evidence=log.line_evidence(facts, S.KBIT_MODEL_MOVED, limit=2),
            remediation=Remediation(
                "Remove the cast; load the model with the dtype you want: from_pretrained(..., torch_dtype=torch."
                "bfloat16, quantization_config=BitsAndBytesConfig(..., bnb_4bit_compute_dtype=torch.bfloat16))."
            ),
        )
    upgrade = None
    if re.search(r"Calling `?(?:to|cuda)\(\)`? is not supported for `?8-bit", text):
        upgrade = BNB_8BIT_MOVE
    elif re.search(r"Calling `?(?:to|cuda)\(\)`? is not supported for `?4-bit", text):
        upgrade = BNB_4BIT_MOVE
    if upgrade is not None:
        first = full(upgrade.first_text)
        bits = "8" if upgrade is BNB_8BIT_MOVE else "4"
        installed = f" (the log shows {bnb_version})" if bnb_version else ""
        return Hit(
            title=f"Moving {'an 8' if bits == '8' else 'a 4'}-bit model needs bitsandbytes {first} or newer{installed}",
            explanation=f"The script calls .to()/.cuda() on a {bits}-bit model. transformers allows that only with "
            f"bitsandbytes {first} or newer; with the installed release it refuses the move.",
            evidence=log.line_evidence(facts, S.KBIT_MODEL_MOVED, limit=2),
            remediation=Remediation(
                placement + f" Or upgrade bitsandbytes to {first} or newer.",
                [f'pip install -U "bitsandbytes>={first}"'],
            ),
        )
    return Hit(
        title=".to()/.cuda() is refused for a 4-bit or 8-bit model: place it with device_map when loading",
        explanation="The script (or accelerate's dispatch_model, for a device map with one device) calls .to() or "
        ".cuda() on a bitsandbytes model. This transformers refuses every move of a quantized model; newer releases "
        f"allow moves of 4-bit models with bitsandbytes {full(BNB_4BIT_MOVE.first_text)} and of 8-bit models with "
        f"{full(BNB_8BIT_MOVE.first_text)}.",
        evidence=log.line_evidence(facts, S.KBIT_MODEL_MOVED, limit=2),
        remediation=Remediation(placement, [VERSIONS_CHECK]),
    )
