"""BNB558 rocm-hip-version-read-as-cuda: passes when the log shows no ROCm HIP version taken by bitsandbytes for a CUDA version."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

CHECK = 'python -c "import torch; print(torch.__version__, torch.version.hip)" && python -m bitsandbytes'

FINDING = log.LogFinding(
    (S.ROCM_HIP_VERSION_READ_AS_CUDA,),
    title="On ROCm, bitsandbytes reads the HIP version as a CUDA version: its 'CUDA lower than 11' warning is not "
    "about this machine",
    explanation="torch on ROCm has no CUDA version; bitsandbytes' specs took the HIP version (6.x) for one, so it "
    "warns that CUDA < 11 cannot run LLM.int8(), shows AMD gfx numbers as compute capabilities and looks for CUDA "
    "runtime files that a ROCm machine does not have. What matters on ROCm is whether the installed bitsandbytes is a "
    "ROCm build for this ROCm version.",
    fix="Ignore the CUDA-version warning; check that torch is a ROCm build and that bitsandbytes loads a "
    "libbitsandbytes_rocm* library (install a release with ROCm wheels, or build it with -DCOMPUTE_BACKEND=hip).",
    commands=(CHECK,),
    severity=Severity.WARNING,
    also_quoted=(S.CUDA_OLDER_THAN_11, S.LEGACY_LIBCUDART_NOT_FOUND),
    limit=3,
)


@rule(
    Severity.WARNING,
    "The log shows no ROCm HIP version taken by bitsandbytes for a CUDA version",
    needs=("log",),
    covers=("rocm_hip_version_read_as_cuda",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1245",
        "https://github.com/huggingface/transformers/issues/35442",
    ),
    confirm=(CHECK,),
)
def rocm_hip_version_read_as_cuda(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on bitsandbytes' CUDA specs (`python -m bitsandbytes`) when the "CUDA version" is a ROCm one:
    `CUDASpecs(highest_compute_capability=(9, 0), cuda_version_string='61', ...)` or `PyTorch settings found:
    CUDA_VERSION=62, ...`, a major version of 5-7 that no CUDA build of torch or bitsandbytes ever had. The
    `WARNING: CUDA versions lower than 11 are currently not supported for LLM.int8()` that follows, and a `CUDA runtime
    files not found` search, are quoted with it: on ROCm they are part of the same misreading.

    ## Why it matters

    On a ROCm build of torch `torch.version.cuda` is None and `torch.version.hip` holds the ROCm version. bitsandbytes'
    diagnostics put the HIP version into their CUDA specs and compare it with CUDA's: ROCm 6.1 (HIP) reads as "CUDA 61",
    below 11, so they warn that LLM.int8() is unsupported, and print AMD gfx numbers (gfx90a as `(9, 0)`, gfx1030 as
    `(10, 3)`) as compute capabilities. The warning and those numbers say nothing about the machine (the reporter of
    bitsandbytes #1245: its `CUDA_VERSION=61` is the ROCm version). bnbdoctor does not take them
    for CUDA facts either.

    ## How to fix

    Ignore the CUDA-version warning on ROCm, and check what does matter:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.hip)"
    python -m bitsandbytes
    ```

    torch must be a ROCm build, and bitsandbytes must load a `libbitsandbytes_rocm*` library for that ROCm version:
    install a bitsandbytes release with ROCm wheels, or build it from source with `-DCOMPUTE_BACKEND=hip`.
    """
    return FINDING.hit(facts)
