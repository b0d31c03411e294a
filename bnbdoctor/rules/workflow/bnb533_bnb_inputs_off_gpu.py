"""BNB533 bnb-inputs-off-gpu: passes when the log shows no bitsandbytes device guard error ('All input tensors need to be on the same GPU')."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.BNB_DEVICE_GUARD,),
    title="A bitsandbytes operation got input, weight or quant_state tensors that are not on the GPU",
    explanation="bitsandbytes' functional ops check that every tensor they receive (input, weight, absmax, code, "
    "bias) is on the same CUDA device. The application's memory manager (typical in ComfyUI/Forge low-VRAM "
    "modes with NF4 models) moved part of a quantized module to the CPU. This is an application issue, not a "
    "bitsandbytes bug.",
    fix="Keep the whole quantized module and its quant_state on the GPU: disable low-VRAM offloading for "
    "bitsandbytes models, free VRAM before sampling, update the custom node or application, and report it "
    "there.",
    commands=("nvidia-smi",),
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes device guard error ('All input tensors need to be on the same GPU')",
    needs=("log",),
    covers=("bnb_tensors_not_on_same_gpu",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1571",),
    confirm=("nvidia-smi", "pip show bitsandbytes"),
)
def device_guard(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' device guard: `All input tensors need to be on the same GPU, but found some tensors
    to not be on a GPU:`.

    ## Why it matters

    bitsandbytes' functional ops check that the input, the weight and the `quant_state` tensors (absmax, code, bias) are
    on the same CUDA device. Applications with their own VRAM managers (ComfyUI and Forge low-VRAM modes with NF4
    models) move part of a quantized module to the CPU. Maintainers class these as application issues.

    ## How to fix

    - Keep the whole quantized module and its `quant_state` on the GPU: disable low-VRAM offloading for bitsandbytes
      models, free VRAM before sampling.
    - Update the custom node or application and report it there.
    """
    return FINDING.hit(facts)
