"""BNB556 legacy-setup-nonetype-decode: passes when the log shows no crash of bitsandbytes' legacy CUDA setup in its own error message."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import UNCHECKED_CUDA_ERROR_STRING as UNCHECKED
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

CHECK = 'nvidia-smi && python -c "import torch; print(torch.cuda.is_available(), torch.version.cuda)"'

FINDING = log.LogFinding(
    (S.LEGACY_SETUP_NONETYPE_DECODE,),
    title="bitsandbytes' legacy CUDA setup crashed while printing a CUDA error, so the error itself is hidden",
    explanation=f"A CUDA call of the old CUDA setup (bitsandbytes {UNCHECKED.last_text}) failed, and its error printer "
    "decoded the "
    "NULL string the driver gives for a code it cannot name: `'NoneType' object has no attribute 'decode'` replaces "
    "the CUDA error. Usually the CUDA runtime it found is newer than the driver supports, or no GPU is usable.",
    fix=f"Upgrade bitsandbytes ({UNCHECKED.below_text} reports the error instead of crashing; later releases take the "
    "CUDA version from torch), then check the GPU and driver and the CUDA runtime bitsandbytes finds.",
    commands=("pip install -U bitsandbytes", CHECK),
    also_quoted=(S.CUDA_RUNTIME_PATH,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no crash of bitsandbytes' legacy CUDA setup in its own error message",
    needs=("log",),
    covers=("legacy_setup_nonetype_decode",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/86",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/457",
    ),
    confirm=(CHECK,),
)
def legacy_setup_nonetype_decode(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `AttributeError: 'NoneType' object has no attribute 'decode'` (also as `Exception importing
    8bit adam: 'NoneType' object has no attribute 'decode'`) in a log that shows bitsandbytes: the import of an old
    bitsandbytes ({{ loader.UNCHECKED_CUDA_ERROR_STRING.last_text }}) dying in its CUDA setup. Without bitsandbytes in the log the message is only Python's,
    and the rule passes.

    ## Why it matters

    The legacy CUDA setup checks each CUDA call with `check_cuda_result`, which asks the driver's `cuGetErrorString`
    for the error's text and prints `error_str.value.decode()`. It also passes it codes of the CUDA runtime
    (`cudaRuntimeGetVersion` of the libcudart it found), which the driver cannot name: the string stays NULL and the
    decode raises, so the import fails with an error that says nothing about the CUDA failure behind it. In the
    threads the setup had just found a CUDA runtime (`CUDA SETUP: CUDA runtime path found:
    /usr/local/cuda-11.8/lib64/libcudart.so`); a runtime newer than the driver, or no usable GPU, makes that call
    fail. bitsandbytes {{ loader.UNCHECKED_CUDA_ERROR_STRING.below_text }} prints `Unknown CUDA exception! Please check your CUDA install` instead; later releases
    no longer load the CUDA runtime themselves. The threads (bitsandbytes #86, #457) have no maintainer answer.

    ## How to fix

    Upgrade bitsandbytes, then look at the GPU and driver:

    ```bash
    pip install -U bitsandbytes
    nvidia-smi
    python -c "import torch; print(torch.cuda.is_available(), torch.version.cuda)"
    ```

    If the newer release still fails, its message names the CUDA problem (a driver older than the CUDA runtime, no
    GPU visible to the process).
    """
    bnb = facts.python.bitsandbytes if facts.python else None
    if bnb is None or not bnb.installed:
        return None
    return FINDING.hit(facts)
