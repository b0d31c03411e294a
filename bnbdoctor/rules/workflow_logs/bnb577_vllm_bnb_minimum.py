"""BNB577 vllm-bnb-minimum: passes when the log shows no vLLM refusing the bitsandbytes it found."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

_MINIMUM = re.compile(r"bitsandbytes>=(\d{1,3}\.\d{1,3}(?:\.\d{1,3})?)")

FINDING = log.LogFinding(
    (S.VLLM_BNB_MINIMUM,),
    title="vLLM needs bitsandbytes {minimum} or newer, and the environment it runs in has {has}",
    explanation="vLLM's bitsandbytes quantizer imports bitsandbytes when it builds the model's layers and refuses "
    "{has_long}: its message names the minimum release (bitsandbytes>={minimum}). Server images, launchers and "
    "source installs of vLLM often lack it or hold an older one. The model and the GPU are not at fault.",
    fix='Install it in the environment vLLM runs in (its venv, or the server image): pip install "bitsandbytes>='
    '{minimum}"; for a container image, add it to the image rather than to the running container.',
    commands=(
        'pip install "bitsandbytes>={minimum}"',
        'python -c "import bitsandbytes; print(bitsandbytes.__version__)"',
    ),
    also_quoted=(S.BNB_NOT_INSTALLED,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no vLLM refusing the bitsandbytes it found",
    needs=("log",),
    covers=("vllm_bnb_missing_or_below_minimum",),
    references=(
        "https://github.com/kserve/kserve/issues/4875",
        "https://github.com/gpustack/gpustack/issues/1079",
        "https://github.com/vllm-project/vllm/pull/6525",
    ),
)
def vllm_bnb_minimum(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on vLLM's two refusals in `vllm/model_executor/layers/quantization/bitsandbytes.py`: `ImportError:
    Please install bitsandbytes>=X via `pip install bitsandbytes>=X` to use bitsandbytes quantizer.` (bitsandbytes
    could not be imported) and `ImportError: bitsandbytes version is wrong. Please install bitsandbytes>=X.` (an older
    release is installed). The minimum is the one the message names; it rises with vLLM's releases.

    ## Why it matters

    Serving a `*-bnb-4bit` checkpoint or `--quantization bitsandbytes` needs bitsandbytes in vLLM's environment, at
    the release vLLM's quantizer asks for; vLLM's own requirements list it only in some releases (vllm #6525: added by
    PR #8792). Server images and launchers (KServe's
    huggingfaceserver in kserve #4875, GPUStack's vLLM venvs in gpustack #1079, a source install of vLLM in vllm #6525)
    often lack it or ship an older one.

    ## How to fix

    Install the release the message names in the environment vLLM runs in (for an image, in the image):

    ```bash
    pip install "bitsandbytes>=X"
    ```
    """
    matches = log.matches(facts, S.VLLM_BNB_MINIMUM)
    if not matches:
        return None
    found = _MINIMUM.search(matches[-1].text)
    minimum = found.group(1) if found else "the release it names"
    too_old = any("version is wrong" in m.text for m in matches)
    return FINDING.hit(
        facts,
        minimum=minimum,
        has="an older one" if too_old else "none it can import",
        has_long="an installed release older than its minimum" if too_old else "when bitsandbytes cannot be imported",
    )
