"""BNB502 log-cuda-error-803: passes when the log shows no CUDA error 803 (driver user-space library and kernel module out of step)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.CUDA_ERROR_803,),
    title="CUDA error 803: 'system has unsupported display driver / cuda driver combination'",
    explanation="The NVIDIA user-space driver library (libcuda) that was loaded does not match the kernel module "
    "that is running, or is too old for the CUDA runtime. This typically follows a driver upgrade without a "
    "reboot, a forward-compatibility libcuda from cuda-compat on LD_LIBRARY_PATH, or a container whose driver "
    "libraries differ from the host's. CUDA cannot initialise, so bitsandbytes sees no GPU, loads its CPU "
    "library, and later fails (for example 'Error named symbol not found').",
    fix="Make the driver's user-space libraries and kernel module the same release: reboot after a driver upgrade, "
    "reinstall the driver if `nvidia-smi` fails, remove cuda-compat folders from LD_LIBRARY_PATH, and in a "
    "container use the host's driver (docker run --gpus all with the NVIDIA container toolkit). Then check "
    "that torch.cuda.is_available() is True.",
    commands=(
        "nvidia-smi",
        "cat /proc/driver/nvidia/version",
        "ldconfig -p | grep libcuda",
    ),
)


@rule(
    Severity.ERROR,
    "The log shows no CUDA error 803 (driver user-space library and kernel module out of step)",
    needs=("log",),
    covers=("driver_cuda_combination_unsupported_803",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/568",
        "https://docs.nvidia.com/deploy/cuda-compatibility/",
    ),
    stands_in_for=("BNB102",),
    confirm=("nvidia-smi", "cat /proc/driver/nvidia/version", "ldconfig -p | grep libcuda"),
)
def error_803(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on CUDA error 803 in any of its spellings: `CUDA exception! Error code: system has unsupported
    display driver / cuda driver combination` (the legacy CUDA setup), `Error 803: system has unsupported display driver
    / cuda driver combination` (torch's `cudaGetDeviceCount()`), and the same text raised from a kernel. It is the log
    twin of [BNB102](BNB102.md).

    ## Why it matters

    Error 803 means the driver's user-space library (`libcuda.so`) that was loaded does not match the kernel module that
    is running, or is too old for the runtime: a driver upgraded without a reboot, a forward-compatibility `libcuda`
    from `cuda-compat` on `LD_LIBRARY_PATH`, or a container whose driver libraries differ from the host's. CUDA cannot
    initialise, bitsandbytes sees no GPU and loads its CPU library, and later calls fail (often with `Error named symbol
    not found`).

    ## How to fix

    - Reboot after a driver upgrade; reinstall the driver if `nvidia-smi` fails.
    - Remove `cuda-compat` folders from `LD_LIBRARY_PATH`.
    - In a container, use the host's driver: `docker run --gpus all` with the NVIDIA container toolkit.

    ```bash
    nvidia-smi
    cat /proc/driver/nvidia/version
    ldconfig -p | grep libcuda
    ```
    """
    return FINDING.hit(facts)
