"""BNB559 rocm-blocksize-64-unsupported: passes when the log shows no 4-bit blocksize 64 refused by bitsandbytes on ROCm."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.kbit import ROCM_BLOCKSIZE_64_REFUSED, ROCM_BLOCKSIZE_64_WAVE32, ROCM_BLOCKSIZE_64_WAVE64
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

CHECK = 'python -c "import bitsandbytes, torch; print(bitsandbytes.__version__, torch.version.hip)"'

FINDING = log.LogFinding(
    (S.ROCM_BLOCKSIZE_64_UNSUPPORTED,),
    title="bitsandbytes on ROCm refuses the 4-bit blocksize 64 that this checkpoint was quantized with",
    explanation="bitsandbytes' ROCm kernels for 4-bit (de)quantization lacked blocksize 64, the blocksize of most "
    "4-bit checkpoints (NF4 Flux, Hub bnb-4bit models); the ROCm build refuses it (the multi-backend preview: 'The "
    f"blockwise of 64 is not supported'; from {ROCM_BLOCKSIZE_64_REFUSED.first_text}: a failed torch._check on the "
    "blocksize).",
    fix=f"Upgrade bitsandbytes ({ROCM_BLOCKSIZE_64_WAVE32.first_text} adds blocksize 64 on Radeon GPUs, "
    f"{ROCM_BLOCKSIZE_64_WAVE64.first_text} on Instinct GPUs), or quantize the "
    "model on load from its 16-bit checkpoint instead of loading one pre-quantized with blocksize 64.",
    commands=("pip install -U bitsandbytes", CHECK),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no 4-bit blocksize 64 refused by bitsandbytes on ROCm",
    needs=("log",),
    covers=("rocm_blocksize_64_unsupported",),
    references=(
        "https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/2462",
        "https://github.com/unslothai/unsloth/issues/3279",
    ),
    confirm=(CHECK,),
)
def rocm_blocksize_64_unsupported(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the two forms of bitsandbytes' ROCm build refusing 4-bit blocksize 64:

    - `The blockwise of 64 is not supported.` (the multi-backend preview);
    - a traceback through `torch._check(blocksize in [4096, 2048, 1024, 512, 256, 128])` in
      `bitsandbytes/backends/cuda/ops.py` ({{ kbit.ROCM_BLOCKSIZE_64_REFUSED.first_text }}-{{ kbit.ROCM_BLOCKSIZE_64_REFUSED.last_text }} on ROCm), whose message is only torch's `RuntimeError: Expected
      cond to be True, but got False`.

    ## Why it matters

    bitsandbytes quantizes 4-bit weights in blocks of 64 by default on CUDA, and most 4-bit checkpoints were saved so
    (the NF4 Flux checkpoints of Forge, Hub `bnb-4bit` models). Its ROCm kernels did not support that blocksize, so
    loading or running such a checkpoint on an AMD GPU fails at the first 4-bit layer (Forge #2462 on a Radeon RX
    6600; unsloth #3279, where a commenter notes that 4-bit is broken on CDNA GPUs as they do not support 64 block
    size). bitsandbytes {{ kbit.ROCM_BLOCKSIZE_64_WAVE32.first_text }} added blocksize 64 on GPUs with 32-wide wavefronts (Radeon/RDNA),
    {{ kbit.ROCM_BLOCKSIZE_64_WAVE64.first_text }} on 64-wide ones (Instinct/CDNA).

    ## How to fix

    Upgrade bitsandbytes:

    ```bash
    pip install -U bitsandbytes
    python -c "import bitsandbytes, torch; print(bitsandbytes.__version__, torch.version.hip)"
    ```

    Where no newer ROCm build is available, load the 16-bit model with a BitsAndBytesConfig (quantized on load with
    the blocksize the ROCm build uses) instead of a checkpoint pre-quantized with blocksize 64.
    """
    return FINDING.hit(facts)
