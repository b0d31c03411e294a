"""BNB505 log-invalid-device-function: passes when the log shows no 'invalid device function' error."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import BNB_ERRORS, PYTHON_M_BNB


@rule(
    Severity.ERROR,
    "The log shows no 'invalid device function' error",
    needs=("log",),
    covers=("invalid_device_function",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1468", BNB_ERRORS),
    stands_in_for=("BNB105",),
    confirm=("nvidia-smi --query-gpu=name,compute_cap --format=csv", PYTHON_M_BNB),
)
def invalid_device_function(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `Error invalid device function at line … in file …ops.cu` / `…ops.hip`, torch's `CUDA error:
    invalid device function`, and ROCm's `hipErrorNoBinaryForGpu`. It never fires on bitsandbytes' own advice line `If
    you get CUDA error: invalid device function errors, the above might be the cause`, which quotes the error without
    having it. It is the log twin of [BNB105](BNB105.md).

    ## Why it matters

    The kernel the code asked for is not in the loaded library for this device: a source build for other SM targets
    (CUDA) or other gfx targets (ROCm), or a library built against another CUDA runtime than the one loaded.
    bitsandbytes' duplicate-runtime warning names this error for the second case.

    ## How to fix

    - Build for your exact architecture: CUDA `cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=<cc>`; ROCm `cmake
      -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=<gfx>` (e.g. `gfx1100` for an RX 7900 XTX).
    - Or install an official wheel that includes it.
    - Keep one CUDA/ROCm runtime, matching that build, on the loader path.
    """
    if not log.seen(facts, S.INVALID_DEVICE_FUNCTION, S.HIP_NO_BINARY_FOR_GPU):
        return None
    rocm = any(
        ".hip" in m.text or "hip" in m.text.lower()
        for m in log.matches(facts, S.INVALID_DEVICE_FUNCTION, S.HIP_NO_BINARY_FOR_GPU)
    )
    return Hit(
        title="A bitsandbytes kernel is not built for this GPU "
        + ("(ROCm gfx target)" if rocm else "or this CUDA runtime"),
        explanation=(
            "The ROCm build has no code for this GPU's gfx target (source builds and forks compile for a list "
            "of targets)."
            if rocm
            else "The loaded library has no kernel for this GPU's architecture (a source build for other SM "
            "targets) or was built against another CUDA runtime than the one loaded; bitsandbytes' own "
            "duplicate-runtime warning names this error."
        ),
        evidence=log.line_evidence(facts, S.INVALID_DEVICE_FUNCTION, S.HIP_NO_BINARY_FOR_GPU),
        remediation=Remediation(
            "Build for your exact architecture (CUDA: cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=<cc>; ROCm: "
            "-DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=<gfx>, e.g. gfx1100 for an RX 7900 XTX), or install an official "
            "wheel that includes it, and keep one CUDA/ROCm runtime matching that build on the loader path.",
            ["rocminfo | grep gfx" if rocm else "nvidia-smi --query-gpu=name,compute_cap --format=csv"],
        ),
    )
