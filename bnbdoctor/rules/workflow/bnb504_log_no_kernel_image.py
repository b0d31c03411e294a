"""BNB504 log-no-kernel-image: passes when the log shows no 'no kernel image is available for execution on the device' error."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.gpus import KEPLER, MAXWELL, MAXWELL_MIN, QUANTIZATION_MIN
from bnbdoctor.knowledge.platforms import WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import BNB_ERRORS, PYTHON_M_BNB


@rule(
    Severity.ERROR,
    "The log shows no 'no kernel image is available for execution on the device' error",
    needs=("log",),
    covers=("no_kernel_image_available", "maxwell_gpu_dropped"),
    references=(BNB_ERRORS, "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1755"),
    stands_in_for=("BNB103", "BNB105"),
    confirm=("nvidia-smi --query-gpu=name,compute_cap --format=csv", PYTHON_M_BNB),
    requires=("torch-runs-on-gpus",),
)
def no_kernel_image(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `Error no kernel image is available for execution on the device at line … in file …ops.cu` and
    torch's `CUDA error: no kernel image is available for execution on the device`. It names the GPUs the log shows, and
    says when the kernel error points at a Windows build folder (a community-built DLL). It is the log twin of
    [BNB103](BNB103.md) and [BNB105](BNB105.md): when the log shows the GPU's compute capability (or a GPU name
    bnbdoctor knows), BNB103 reports it instead.

    ## Why it matters

    A CUDA library contains machine code for a list of GPU architectures (and sometimes PTX that newer GPUs can
    compile); a GPU outside that list cannot run any of its kernels. Community Windows DLLs of 2023 were compiled for a
    few architectures only. GPUs older than a release supports hit the same error: Kepler (3.x) left the PyPI wheels in
    {{ gpus.KEPLER.removed_in }}, Maxwell (5.x) in {{ gpus.MAXWELL.removed_in }}.

    ## How to fix

    - Install an official build that contains your GPU's architecture: `pip install -U bitsandbytes` (Windows wheels
      since {{ platforms.WINDOWS_WHEELS.first_text }}).
    - Maxwell: pin the last release with Maxwell kernels, `pip install "bitsandbytes=={{ gpus.MAXWELL.last_with }}"`. Kepler: no current
      build.
    - Otherwise build from source for your compute capability (`cmake -DCOMPUTE_BACKEND=cuda
      -DCOMPUTE_CAPABILITY=<cc>`), or switch the 8-bit optimizer off.

    ```bash
    nvidia-smi --query-gpu=name,compute_cap --format=csv
    ```
    """
    if not log.seen(facts, S.NO_KERNEL_IMAGE):
        return None
    community = any("\\" in m.text and "ops.cu" in m.text for m in log.matches(facts, S.NO_KERNEL_IMAGE))
    gpus = facts.gpu.visible if facts.gpu else []
    named = ", ".join(f"{d.name} (compute capability {d.cc_text})" for d in gpus) or "this GPU"
    return Hit(
        title=f"The loaded bitsandbytes library has no kernel for {named}",
        explanation="A CUDA library contains machine code for a list of GPU architectures (and sometimes PTX for newer "
        "ones); a GPU outside that list cannot run any of its kernels. "
        + (
            "The kernel error names a file under a Windows build folder: a community-built DLL, compiled for a few "
            "architectures only. "
            if community
            else ""
        )
        + f"GPUs older than the build supports hit this too: Kepler ({KEPLER.major}.x) left the PyPI wheels in "
        f"{KEPLER.removed_in} and Maxwell ({MAXWELL.major}.x) in {MAXWELL.removed_in}.",
        evidence=log.line_evidence(facts, S.NO_KERNEL_IMAGE),
        remediation=Remediation(
            "Install an official build that contains your GPU's architecture: `pip install -U bitsandbytes` (Windows "
            f"wheels since {WINDOWS_WHEELS.first_text}). A Maxwell GPU needs a release below "
            f"{minor(MAXWELL.removed_in)} ({MAXWELL.last_with} is the last with Maxwell kernels); "
            "a Kepler GPU has no current build. Otherwise build from source for your compute capability "
            "(cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=<cc>), or switch the 8-bit optimizer off.",
            ["nvidia-smi --query-gpu=name,compute_cap --format=csv", "pip install -U bitsandbytes"],
        ),
        covers=["no_kernel_image_available"]
        + (["maxwell_gpu_dropped"] if any(d.cc and MAXWELL_MIN.cc <= d.cc < QUANTIZATION_MIN.cc for d in gpus) else []),
    )
