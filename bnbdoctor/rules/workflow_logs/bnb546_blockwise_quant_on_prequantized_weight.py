"""BNB546 blockwise-quant-on-prequantized-weight: passes when the log shows no already quantized weight handed to bitsandbytes' quantizer."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.bad_releases import PARAMS4BIT_REQUANTIZED
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK

#: A device move on the line of the message: ``module.to(device="cuda")``, ``model.cuda()``.
_MOVE = re.compile(r"\.(?:to|cuda)\(")

FINDING = log.LogFinding(
    (S.QUANTIZE_PACKED_WEIGHTS,),
    title="Already quantized weights were handed to bitsandbytes' quantizer again",
    explanation="bitsandbytes quantizes 16/32-bit float weights; a uint8/int8 tensor is already quantized data. The "
    "usual cause is a pre-quantized checkpoint loaded with a BitsAndBytesConfig again, so its packed weights are "
    "quantized a second time.{also}",
    fix="Load the pre-quantized checkpoint without a quantization_config (it carries its own), or quantize the "
    "full-precision checkpoint instead.",
    commands=(VERSIONS_CHECK,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no already quantized weight handed to bitsandbytes' quantizer",
    needs=("log",),
    covers=("blockwise_quant_on_prequantized_weight",),
    references=(
        "https://github.com/tin2tin/Pallaidium/issues/124",
        "https://github.com/lum3on/comfyui_HiDream-Sampler/issues/49",
    ),
    confirm=(VERSIONS_CHECK,),
)
def blockwise_quant_on_prequantized_weight(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' `ValueError: Blockwise quantization only supports 16/32-bit floats, but got
    torch.uint8` (or `torch.int8`). A float8 dtype in the same message is another problem (a float8 checkpoint) and
    is left alone.

    ## Why it matters

    bitsandbytes quantizes float16, bfloat16 and float32 weights. An integer tensor is already quantized data: a
    pre-quantized (NF4/int8) checkpoint loaded with a `BitsAndBytesConfig` again, so the app asks bitsandbytes to
    quantize the packed weights a second time (what the Pallaidium thread found for FLUX). A release with a known
    regression gives the same message: bitsandbytes {{ bad_releases.PARAMS4BIT_REQUANTIZED.releases.first_text }}
    quantizes 4-bit weights again when a model moves between devices. When the log shows that release, this rule
    leaves the finding to [BNB213](BNB213.md), which names the regression and its fix; so it does when the message
    comes from a device move (`model.to("cuda")` on the same line) and the log shows no release, where the
    regression is the likelier cause ([BNB550](BNB550.md) restates the message with it). Otherwise, with no release
    shown, the finding names both causes.

    ## How to fix

    Load a pre-quantized checkpoint without a quantization config (its `config.json` carries the bitsandbytes
    settings already), or load the full-precision checkpoint and let bitsandbytes quantize it once.
    """
    if not log.seen(facts, S.QUANTIZE_PACKED_WEIGHTS):
        return None
    bnb = facts.python.bitsandbytes if facts.python else None
    version = bnb.version if bnb else None
    regression = PARAMS4BIT_REQUANTIZED.releases
    if regression.contains(version):
        return None  # the release's own regression: BNB213's finding names it and its fix
    if not version and any(_MOVE.search(m.text) for m in log.matches(facts, S.QUANTIZE_PACKED_WEIGHTS)):
        return None  # raised by a device move: the regression's shape, which BNB550 restates from the catalog
    also = (
        ""
        if version
        else f" bitsandbytes {regression.first_text} gives the same message when a 4-bit model moves between devices "
        f"(a regression fixed in {PARAMS4BIT_REQUANTIZED.fixed_in}); the log does not show the release."
    )
    return FINDING.hit(facts, also=also)
