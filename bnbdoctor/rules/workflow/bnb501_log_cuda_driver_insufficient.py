"""BNB501 log-cuda-driver-insufficient: passes when the log shows no 'CUDA driver version is insufficient' / 'NVIDIA driver is too old' error."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.common import torch_of


def _found_cuda(text: str) -> str:
    """The driver's CUDA version in torch's "found version 11000" (major * 1000 + minor * 10), as "11.0"."""
    number = re.search(r"found version (\d+)", text)
    if number is None:
        return "an older version"
    value = int(number.group(1))
    return f"{value // 1000}.{value % 1000 // 10}"


#: A kernel launched with no driver able to run the runtime: the same words whatever else the log shows.
NO_DRIVER_FOR_RUNTIME = log.LogFinding(
    (S.CUDA_DRIVER_INSUFFICIENT,),
    title="No NVIDIA driver can run this CUDA runtime ('CUDA driver version is insufficient for CUDA runtime version')",
    explanation="A bitsandbytes CUDA kernel was launched, and the CUDA runtime found no driver able to run it "
    "(CUDA error 35). Either the machine has no NVIDIA GPU or driver at all (for example a laptop with only an "
    "Intel or AMD integrated GPU), or the driver is older than the runtime. bitsandbytes' 8-bit optimizers and "
    "quantization kernels are CUDA-only, so they cannot run here.",
    fix="Run `nvidia-smi`. With no NVIDIA GPU, bitsandbytes' CUDA features cannot work: turn off the 8-bit optimizer "
    "(use a regular AdamW) or 8-bit/4-bit loading, or run on a machine with an NVIDIA GPU. With a GPU, update "
    "the driver until `nvidia-smi` reports a 'CUDA Version' at least torch.version.cuda.",
    commands=("nvidia-smi", TORCH_CHECK),
    covers=("cuda_driver_insufficient_for_runtime",),
)


# --------------------------------------------------------------------------------- driver and GPU
@rule(
    Severity.ERROR,
    "The log shows no 'CUDA driver version is insufficient' / 'NVIDIA driver is too old' error",
    needs=("log",),
    covers=("cuda_driver_insufficient_for_runtime", "nvidia_driver_too_old_for_torch_cuda"),
    references=(
        "https://docs.nvidia.com/deploy/cuda-compatibility/",
        "https://github.com/Akegarasu/lora-scripts/issues/101",
    ),
    stands_in_for=("BNB101", "BNB102"),
    confirm=("nvidia-smi", TORCH_CHECK),
)
def driver_insufficient(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on two messages about the driver:

    - `Error CUDA driver version is insufficient for CUDA runtime version at line … in file …ops.cu` (CUDA error 35,
      raised from a bitsandbytes kernel);
    - torch's `The NVIDIA driver on your system is too old (found version 11000)`, whose number is the driver's CUDA
      version (11000 = CUDA 11.0).

    It is the log twin of [BNB101](BNB101.md) and [BNB102](BNB102.md), which judge the same failure from the driver NVML
    reports; on a machine, run those.

    ## Why it matters

    A CUDA runtime cannot start without a driver at least as new as itself. "Insufficient" means either that the machine
    has no NVIDIA driver or GPU at all (a laptop with only an Intel or AMD integrated GPU), or that the driver is older
    than the runtime torch ships. bitsandbytes' 8-bit optimizers and quantization kernels are CUDA-only, so nothing of
    it can run; with "too old", torch cannot initialise CUDA and bitsandbytes falls back or fails at setup.

    ## How to fix

    - Run `nvidia-smi`. No NVIDIA GPU: bitsandbytes' CUDA features cannot work here; turn off the 8-bit optimizer (use a
      regular AdamW) and 8/4-bit loading, or use a machine with an NVIDIA GPU.
    - An old driver: update it until `nvidia-smi` reports a "CUDA Version" at least `torch.version.cuda`, or install a
      torch build for the CUDA version the driver supports (pytorch.org lists older builds), then a matching
      bitsandbytes.

    ```bash
    nvidia-smi
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    ```
    """
    old = log.first(facts, S.DRIVER_TOO_OLD)
    if old is not None:
        driver = facts.gpu.driver_cuda_version if facts.gpu else None
        torch = torch_of(facts)
        wanted = torch.cuda if torch and torch.cuda else "the version torch was built with"
        index = torch_index_for(major_minor(driver)) if driver else None
        found = driver or _found_cuda(old.text)
        return Hit(
            title=f"The NVIDIA driver supports CUDA {found}, older than torch's CUDA ({wanted})",
            explanation="torch refuses to initialise CUDA when the driver's CUDA version is older than the one torch was "
            "built with ('The NVIDIA driver on your system is too old'). torch.cuda is then unusable and bitsandbytes "
            "has no GPU: it falls back to its CPU library or fails with 'CUDA Setup failed'.",
            evidence=log.line_evidence(facts, S.DRIVER_TOO_OLD, S.NVIDIA_SMI_DRIVER),
            remediation=Remediation(
                "Update the NVIDIA driver so that `nvidia-smi` reports a 'CUDA Version' at least torch.version.cuda, or "
                "install a torch build for the CUDA version your driver supports"
                + (f" ({index})" if index else "")
                + ", then a matching bitsandbytes.",
                ["nvidia-smi", TORCH_CHECK]
                + ([f"pip install --force-reinstall torch --index-url {index}"] if index else []),
            ),
            references=["https://pytorch.org/get-started/previous-versions/"],
            covers=["nvidia_driver_too_old_for_torch_cuda"],
        )
    return NO_DRIVER_FOR_RUNTIME.hit(facts)
