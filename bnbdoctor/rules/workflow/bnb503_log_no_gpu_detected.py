"""BNB503 log-no-gpu-detected: passes when the log shows no 'No GPU detected' / 'libcuda.so not found' message."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.workflow._shared import UPGRADE_TO_WINDOWS_WHEELS


@rule(
    Severity.ERROR,
    "The log shows no 'No GPU detected' / 'libcuda.so not found' message",
    needs=("log",),
    covers=("no_gpu_detected_cpu_fallback", "wsl2_libcuda_not_found"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/337", BNB_DOCS_INSTALL),
    stands_in_for=("BNB101", "BNB107", "BNB204"),
    confirm=("nvidia-smi", TORCH_CHECK, "ldconfig -p | grep libcuda"),
)
def no_gpu_detected(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy CUDA setup's `CUDA SETUP: WARNING! libcuda.so not found!` and `WARNING: No GPU
    detected! Check your CUDA paths. Proceeding to load CPU-only library...` and `Unknown CUDA exception! Please check
    your CUDA install` (the driver did not initialise), on `libcuda.so: cannot open shared object file`, and on
    bitsandbytes' `Torch says CUDA is not available`. The explanation depends on what else the log shows:

    - a driver error (CUDA error 803, "driver version is insufficient") explains it: an info finding;
    - WSL2 (a `microsoft-standard-WSL2` kernel): the Windows driver's folder is missing from the loader path;
    - Windows with the legacy loader: releases before {{ platforms.WINDOWS_WHEELS.first_minor }} cannot find a GPU on Windows at all;
    - otherwise: no driver, a container without the NVIDIA runtime, or a CPU-only torch.

    It is the log twin of [BNB101](BNB101.md), [BNB107](BNB107.md) and [BNB204](BNB204.md).

    ## Why it matters

    The legacy loader (bitsandbytes up to {{ loader.LEGACY_CUDA_SETUP.last_text }}) probes the driver by opening `libcuda.so`. When that fails it
    concludes there is no GPU and loads `libbitsandbytes_cpu.so`; every 8-bit/4-bit GPU call then fails later with
    messages that do not mention the GPU. Under WSL2 the driver is a stub in `/usr/lib/wsl/lib`, which is often not on
    the loader path.

    ## How to fix

    - Check that `nvidia-smi` lists the GPU and that `torch.cuda.is_available()` is True.
    - Containers: start them with `--gpus all` (NVIDIA container toolkit).
    - WSL2: `export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH`; keep the Windows driver current and do not
      install a Linux driver inside WSL.
    - Windows: install bitsandbytes {{ platforms.WINDOWS_WHEELS.first_text }} or newer.
    - Then upgrade bitsandbytes: current releases follow torch and no longer probe `libcuda.so`.
    """
    if not log.seen(facts, S.NO_GPU_DETECTED, S.LIBCUDA_NOT_FOUND):
        return None
    lines = log.line_evidence(facts, S.LIBCUDA_NOT_FOUND, S.NO_GPU_DETECTED)
    driver_causes = [
        s
        for s in (S.CUDA_ERROR_803, S.CUDA_DRIVER_INSUFFICIENT, S.DRIVER_TOO_OLD, S.NO_NVIDIA_DRIVER)
        if log.seen(facts, s)
    ]
    if driver_causes:
        return Hit(
            title="bitsandbytes saw no GPU because CUDA could not start",
            explanation="The 'No GPU detected' message follows from the driver problem reported above; it is not a "
            "separate cause.",
            evidence=lines,
            remediation=Remediation("Fix the driver problem first."),
            severity=Severity.INFO,
            covers=["no_gpu_detected_cpu_fallback"],
        )
    if log.is_wsl(facts):
        return Hit(
            title="WSL2: the Windows driver's libcuda.so is not on the loader path",
            explanation="Under WSL2 the GPU driver comes from Windows and is exposed as /usr/lib/wsl/lib/libcuda.so. "
            "bitsandbytes' legacy loader (and any dlopen('libcuda.so')) fails when that folder is not on the loader "
            "path, concludes there is no GPU, and loads its CPU library.",
            evidence=lines,
            remediation=Remediation(
                "Put /usr/lib/wsl/lib on the loader path (persist it in your shell profile), keep the Windows NVIDIA "
                "driver current, and do not install a Linux NVIDIA driver inside WSL. Upgrading bitsandbytes removes "
                "the libcuda.so probe altogether.",
                ["export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH", "ls /usr/lib/wsl/lib", "nvidia-smi"],
            ),
            covers=["wsl2_libcuda_not_found", "no_gpu_detected_cpu_fallback"],
        )
    if log.is_windows(facts) and log.legacy_loader(facts):
        return Hit(
            title="bitsandbytes' legacy loader looks for libcuda.so, which Windows does not have",
            explanation=f"Releases before {minor(WINDOWS_WHEELS.first_text)} were Linux-only: on Windows their loader "
            "never finds libcuda.so, reports 'No GPU detected' even with a working GPU, and loads its CPU library.",
            evidence=lines,
            remediation=Remediation(
                f"Install a release with Windows support ({WINDOWS_WHEELS.first_text} or newer), or run under WSL2.",
                [UPGRADE_TO_WINDOWS_WHEELS],
            ),
            covers=["no_gpu_detected_cpu_fallback"],
        )
    return Hit(
        title="bitsandbytes found no usable GPU and fell back to its CPU library",
        explanation="The NVIDIA driver library libcuda.so could not be opened, or torch reported CUDA as unavailable. "
        "Common causes: no driver installed, a container started without the NVIDIA runtime, a CPU-only build of "
        "torch, or the driver library missing from the loader path. Every 8-bit/4-bit GPU operation then fails.",
        evidence=lines,
        remediation=Remediation(
            "Check that `nvidia-smi` lists the GPU and that torch.cuda.is_available() is True; run containers with "
            "`--gpus all` (NVIDIA container toolkit); install a CUDA build of torch if it is a CPU build; make "
            "libcuda.so visible (`ldconfig -p | grep libcuda`). Then upgrade bitsandbytes.",
            ["nvidia-smi", TORCH_CHECK, "ldconfig -p | grep libcuda"],
        ),
        covers=["no_gpu_detected_cpu_fallback"],
    )
