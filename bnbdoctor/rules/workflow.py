"""Rules about workflows and messages seen in logs (BNB5xx): PEFT merges, devices, stale modules.

These rules read ``facts.log`` (``needs=("log",)``), so they run under ``bnbdoctor explain`` and
are skipped on a live machine. Two kinds live here:

- workflow rules (BNB521-BNB533) for failures that only a log shows: PEFT merges into quantized
  layers, tensors on different devices, bitsandbytes' device guard, modules left stale by an
  upgrade in a running notebook, transformers' misleading ImportError;
- log twins (BNB501-BNB520) of machine rules, for failures whose message is known but whose facts
  a log does not show (a kernel error names no GPU). Each twin's ``stands_in_for`` names the
  machine rules it stands in for; when one of those fires on the log's facts with at least the same
  severity and covers what the twin matched, ``bnbdoctor explain`` keeps the machine rule's finding
  and folds the twin's log lines into it.

Each rule's ``confirm`` says what to run on the machine to confirm a finding.
"""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, SUGGESTED_TORCH_CUDA, torch_index_for
from bnbdoctor.knowledge.gpus import (
    CC_CHOOSES_LIBRARY,
    INT8_MATMUL_MIN,
    INT8_NAMEERROR,
    INT8_WITHOUT_FALLBACK,
    KEPLER,
    MAXWELL,
    MAXWELL_MIN,
    QUANTIZATION_MIN,
)
from bnbdoctor.knowledge.imports import (
    SCIPY_IMPORT,
    TORCH_WITH_TRITON_WITHOUT_OPS,
    TRITON_OPS_IMPORT,
    TRITON_OPS_REPORTED_WORKING,
    TRITON_WITHOUT_OPS,
)
from bnbdoctor.knowledge.loader import CUDA_VERSION_FROM_TORCH, LEGACY_CUDA_SETUP, ROCM_TAG_MISBUILT
from bnbdoctor.knowledge.platforms import MACOS_WHEELS, PYTHON_DLL_PATH_SEARCH_DROPPED, WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.selection import rocm_from_misbuilt_tag
from bnbdoctor.knowledge.transformers import BNB_CHECK_NEEDS_GPU_SINCE
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    TORCH_GET_STARTED,
    ev,
    torch_of,
)
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK

BNB_ERRORS = "https://huggingface.co/docs/bitsandbytes/main/en/errors"
PYTHON_M_BNB = "python -m bitsandbytes"
#: Upgrade commands several rules print, built from the boundaries they rest on.
UPGRADE_TO_WINDOWS_WHEELS = f'pip install -U "bitsandbytes{WINDOWS_WHEELS.pip_spec()}"'
UPGRADE_PAST_LEGACY_SETUP = f'pip install -U "bitsandbytes{LEGACY_CUDA_SETUP.after().pip_spec()}"'
UPGRADE_PAST_INT8_NAMEERROR = f'pip install -U "bitsandbytes{INT8_NAMEERROR.after().pip_spec()}"'
TORCH_CUDA_LIBS_CHECK = (
    'ldd $(python -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), '
    "'lib', 'libtorch_cuda.so'))\") | grep -i -E 'nvjitlink|cusparse|cudart'"
)


def _severity_as_consequence(facts: Facts, *explained_by: str) -> tuple[Severity, str]:
    """Error when the log shows nothing that explains a consequence; info (and why) when it does."""
    roots = [s for s in log.roots_seen(facts) if s != "slow_int8_matmul"]
    extra = [s for s in explained_by if log.seen(facts, s)]
    cause = log.consequence_of(facts) if roots else None
    if cause:
        return Severity.INFO, f" It is a consequence of the cause reported above ({cause})."
    if extra:
        return Severity.INFO, " It is a consequence of the CPU fallback reported above."
    return Severity.ERROR, ""


def _found_cuda(text: str) -> str:
    """The driver's CUDA version in torch's "found version 11000" (major * 1000 + minor * 10), as "11.0"."""
    number = re.search(r"found version (\d+)", text)
    if number is None:
        return "an older version"
    value = int(number.group(1))
    return f"{value // 1000}.{value % 1000 // 10}"


def _torch_index(facts: Facts) -> str | None:
    return torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None


# --------------------------------------------------------------------------------- driver and GPU
@rule(
    "BNB501",
    "log-cuda-driver-insufficient",
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
      version (11000 = 11.0).

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
    old = log.first(facts, "driver_too_old")
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
            evidence=log.line_evidence(facts, "driver_too_old", "nvidia_smi_driver"),
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
    if not log.seen(facts, "cuda_driver_insufficient"):
        return None
    return Hit(
        title="No NVIDIA driver can run this CUDA runtime ('CUDA driver version is insufficient for CUDA runtime version')",
        explanation="A bitsandbytes CUDA kernel was launched, and the CUDA runtime found no driver able to run it "
        "(CUDA error 35). Either the machine has no NVIDIA GPU or driver at all (for example a laptop with only an "
        "Intel or AMD integrated GPU), or the driver is older than the runtime. bitsandbytes' 8-bit optimizers and "
        "quantization kernels are CUDA-only, so they cannot run here.",
        evidence=log.line_evidence(facts, "cuda_driver_insufficient"),
        remediation=Remediation(
            "Run `nvidia-smi`. With no NVIDIA GPU, bitsandbytes' CUDA features cannot work: turn off the 8-bit optimizer "
            "(use a regular AdamW) or 8-bit/4-bit loading, or run on a machine with an NVIDIA GPU. With a GPU, update "
            "the driver until `nvidia-smi` reports a 'CUDA Version' at least torch.version.cuda.",
            ["nvidia-smi", TORCH_CHECK],
        ),
        covers=["cuda_driver_insufficient_for_runtime"],
    )


@rule(
    "BNB502",
    "log-cuda-error-803",
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
    if not log.seen(facts, "cuda_error_803"):
        return None
    return Hit(
        title="CUDA error 803: 'system has unsupported display driver / cuda driver combination'",
        explanation="The NVIDIA user-space driver library (libcuda) that was loaded does not match the kernel module "
        "that is running, or is too old for the CUDA runtime. This typically follows a driver upgrade without a "
        "reboot, a forward-compatibility libcuda from cuda-compat on LD_LIBRARY_PATH, or a container whose driver "
        "libraries differ from the host's. CUDA cannot initialise, so bitsandbytes sees no GPU, loads its CPU "
        "library, and later fails (for example 'Error named symbol not found').",
        evidence=log.line_evidence(facts, "cuda_error_803"),
        remediation=Remediation(
            "Make the driver's user-space libraries and kernel module the same release: reboot after a driver upgrade, "
            "reinstall the driver if `nvidia-smi` fails, remove cuda-compat folders from LD_LIBRARY_PATH, and in a "
            "container use the host's driver (docker run --gpus all with the NVIDIA container toolkit). Then check "
            "that torch.cuda.is_available() is True.",
            ["nvidia-smi", "cat /proc/driver/nvidia/version", "ldconfig -p | grep libcuda"],
        ),
    )


@rule(
    "BNB503",
    "log-no-gpu-detected",
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
    detected! Check your CUDA paths. Proceeding to load CPU-only library...`, on `libcuda.so: cannot open shared object
    file`, and on bitsandbytes' `Torch says CUDA is not available`. The explanation depends on what else the log shows:

    - a driver error (CUDA error 803, "driver version is insufficient") explains it: an info finding;
    - WSL2 (a `microsoft-standard-WSL2` kernel): the Windows driver's folder is missing from the loader path;
    - Windows with the legacy loader: releases before 0.43 cannot find a GPU on Windows at all;
    - otherwise: no driver, a container without the NVIDIA runtime, or a CPU-only torch.

    It is the log twin of [BNB101](BNB101.md), [BNB107](BNB107.md) and [BNB204](BNB204.md).

    ## Why it matters

    The legacy loader (bitsandbytes up to 0.43.0) probes the driver by opening `libcuda.so`. When that fails it
    concludes there is no GPU and loads `libbitsandbytes_cpu.so`; every 8-bit/4-bit GPU call then fails later with
    messages that do not mention the GPU. Under WSL2 the driver is a stub in `/usr/lib/wsl/lib`, which is often not on
    the loader path.

    ## How to fix

    - Check that `nvidia-smi` lists the GPU and that `torch.cuda.is_available()` is True.
    - Containers: start them with `--gpus all` (NVIDIA container toolkit).
    - WSL2: `export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH`; keep the Windows driver current and do not
      install a Linux driver inside WSL.
    - Windows: install bitsandbytes 0.43.0 or newer.
    - Then upgrade bitsandbytes: current releases follow torch and no longer probe `libcuda.so`.
    """
    if not log.seen(facts, "no_gpu_detected", "libcuda_not_found"):
        return None
    lines = log.line_evidence(facts, "libcuda_not_found", "no_gpu_detected")
    driver_causes = [
        s
        for s in ("cuda_error_803", "cuda_driver_insufficient", "driver_too_old", "no_nvidia_driver")
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


@rule(
    "BNB504",
    "log-no-kernel-image",
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
    0.39.1, Maxwell (5.x) in 0.48.0.

    ## How to fix

    - Install an official build that contains your GPU's architecture: `pip install -U bitsandbytes` (Windows wheels
      since 0.43.0).
    - Maxwell: pin the last release with Maxwell kernels, `pip install "bitsandbytes==0.47.0"`. Kepler: no current
      build.
    - Otherwise build from source for your compute capability (`cmake -DCOMPUTE_BACKEND=cuda
      -DCOMPUTE_CAPABILITY=<cc>`), or switch the 8-bit optimizer off.

    ```bash
    nvidia-smi --query-gpu=name,compute_cap --format=csv
    ```
    """
    if not log.seen(facts, "no_kernel_image"):
        return None
    community = any("\\" in m.text and "ops.cu" in m.text for m in log.matches(facts, "no_kernel_image"))
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
        evidence=log.line_evidence(facts, "no_kernel_image"),
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


@rule(
    "BNB505",
    "log-invalid-device-function",
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
    if not log.seen(facts, "invalid_device_function", "hip_no_binary_for_gpu"):
        return None
    rocm = any(
        ".hip" in m.text or "hip" in m.text.lower()
        for m in log.matches(facts, "invalid_device_function", "hip_no_binary_for_gpu")
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
        evidence=log.line_evidence(facts, "invalid_device_function", "hip_no_binary_for_gpu"),
        remediation=Remediation(
            "Build for your exact architecture (CUDA: cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=<cc>; ROCm: "
            "-DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=<gfx>, e.g. gfx1100 for an RX 7900 XTX), or install an official "
            "wheel that includes it, and keep one CUDA/ROCm runtime matching that build on the loader path.",
            ["rocminfo | grep gfx" if rocm else "nvidia-smi --query-gpu=name,compute_cap --format=csv"],
        ),
    )


@rule(
    "BNB506",
    "log-named-symbol-not-found",
    Severity.ERROR,
    "The log shows no 'named symbol not found' kernel error",
    needs=("log",),
    covers=("named_symbol_not_found", "jetson_l4t_aarch64_wheel_mismatch"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/382",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941",
    ),
    stands_in_for=("BNB108", "BNB106"),
    confirm=(PYTHON_M_BNB, "nvidia-smi"),
)
def named_symbol(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule fires on `Error named symbol not found at line … in file …ops.cu`. On a Jetson (the log shows `tegra`,
    `Jetson` or `/etc/nv_tegra_release`) it reports the PyPI aarch64 wheel on L4T; when the log shows GPUs of different
    generations under the legacy loader it stays silent and [BNB508](BNB508.md) explains the error. It is the log twin
    of [BNB108](BNB108.md) and [BNB106](BNB106.md).

    ## Why it matters

    The CUDA runtime could not resolve a kernel in the loaded library: the library, the runtime it runs against and the
    driver do not belong together. Common causes are a wrong or duplicate `libcudart` picked by the legacy loader, a
    driver problem (CUDA error 803), or a build made for another setup. On Jetson the aarch64 PyPI wheels are built for
    server ARM (sbsa) with the standard toolkit, not for L4T, so their kernel symbols do not resolve (it is not a
    missing architecture).

    ## How to fix

    - Reinstall or upgrade bitsandbytes from PyPI so its library follows torch's CUDA version:

      ```bash
      pip install -U --force-reinstall --no-deps bitsandbytes
      python -m bitsandbytes
      ```

    - Keep only the CUDA runtime matching `torch.version.cuda` on `LD_LIBRARY_PATH`; check the driver with `nvidia-smi`.
    - Jetson: build bitsandbytes on the device (`cmake -DCOMPUTE_BACKEND=cuda`) or use a wheel built for JetPack (the
      Jetson AI Lab index).
    """
    if not log.seen(facts, "named_symbol_not_found"):
        return None
    if log.seen(facts, "mixed_gpu_generations") and log.legacy_loader(facts):
        return Skip("GPUs of different generations under the legacy loader explain it (BNB508)")
    lines = log.line_evidence(facts, "named_symbol_not_found", "bnb_library_selected")
    if facts.platform and facts.platform.jetson_release:
        return Hit(
            title="Jetson: the PyPI aarch64 bitsandbytes is not built for L4T/JetPack",
            explanation="The aarch64 wheels on PyPI target server ARM (sbsa) with the standard CUDA toolkit; on a "
            "Jetson's L4T CUDA stack their kernel symbols do not resolve, so the first kernel fails with 'named symbol "
            "not found'. It is not a missing architecture.",
            evidence=[*lines, ev("Jetson", facts.platform.jetson_release, "platform.jetson_release")],
            remediation=Remediation(
                "Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda) or install a "
                "wheel built for JetPack (the Jetson AI Lab index); do not use the PyPI aarch64 "
                "wheel on L4T."
            ),
            covers=["jetson_l4t_aarch64_wheel_mismatch", "named_symbol_not_found"],
        )
    return Hit(
        title="The CUDA runtime could not resolve a bitsandbytes kernel ('named symbol not found')",
        explanation="The library bitsandbytes loaded, the CUDA runtime it runs against and the driver do not belong "
        "together: a wrong or duplicate libcudart picked up by the legacy loader, a driver problem (see CUDA error "
        "803), or a build made for another setup. On machines that mix GPU generations, old releases also chose one "
        "library for all GPUs.",
        evidence=lines,
        remediation=Remediation(
            "Reinstall or upgrade bitsandbytes from PyPI so that its library follows torch's CUDA, make sure only one "
            "CUDA runtime (the one matching torch.version.cuda) is on LD_LIBRARY_PATH, and check the driver with "
            "`nvidia-smi`; on a box with mixed GPU generations, expose one GPU with CUDA_VISIBLE_DEVICES.",
            ["pip install -U --force-reinstall --no-deps bitsandbytes", PYTHON_M_BNB],
        ),
        covers=["named_symbol_not_found"],
    )


@rule(
    "BNB507",
    "log-int8-matmul-unsupported",
    Severity.ERROR,
    "The log shows no int8-matmul failure or warning for GPUs without int8 tensor cores",
    needs=("log",),
    covers=("int8_matmul_unsupported_cc_lt_75", "slow_int8_matmul_warning_cc_lt_75", "cuda_setup_nameerror_bnb_0_37"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/529",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/118",
    ),
    stands_in_for=("BNB104",),
    confirm=("nvidia-smi --query-gpu=name,compute_cap --format=csv", "pip show bitsandbytes"),
)
def int8_matmul(facts: Facts) -> list[Hit]:
    """## What it detects

    Three messages about GPUs without int8 tensor cores (compute capability below 7.5):

    - `ERROR: Your GPU does not support Int8 Matmul!` and the `igemmlt … Assertion 'false' failed` that follows
      (releases up to 0.36): an error;
    - `NameError: name 'cuda_setup' is not defined` (the 0.37.0 import crash on those GPUs): an error;
    - `WARNING: Compute capability < 7.5 detected! Only slow 8-bit matmul is supported for your GPU!`: info, since it is
      a warning and not the failure.

    It is the log twin of [BNB104](BNB104.md), which reports the same from the GPU's compute capability.

    ## Why it matters

    LLM.int8() runs its matmul on cuBLASLt int8 tensor-core kernels, which need Turing (7.5) or newer. Releases up to
    0.36 used builds without cuBLASLt on older GPUs and stopped on an assertion; 0.37.0 added a slower fallback (and, in
    0.37.0 only, a crash in the check). 4-bit quantization and 8-bit optimizers work on these GPUs.

    ## How to fix

    - Upgrade bitsandbytes (0.37.1 or newer has the slower 8-bit path):

      ```bash
      pip install -U "bitsandbytes>=0.37.1"
      ```

    - Prefer 4-bit (`load_in_4bit=True`, `bnb_4bit_quant_type="nf4"`) on these GPUs, or use a Turing or newer GPU for
      fast LLM.int8().
    - The slow-matmul warning alone needs no fix: look further in the log for the failure.
    """
    hits = []
    if log.seen(facts, "int8_matmul_unsupported"):
        hits.append(
            Hit(
                title="LLM.int8() needs int8 tensor cores this GPU lacks ('Your GPU does not support Int8 Matmul!')",
                explanation="LLM.int8() runs its matmul on cuBLASLt int8 tensor-core kernels, which need "
                f"{INT8_MATMUL_MIN.architecture} (compute capability {INT8_MATMUL_MIN.text}) or newer. Releases up to "
                f"{INT8_WITHOUT_FALLBACK.last_text} used builds without cuBLASLt on older GPUs and stop with an assertion "
                f"in igemmlt; {INT8_WITHOUT_FALLBACK.below_text} added a slower fallback. 4-bit quantization works on "
                "these GPUs.",
                evidence=log.line_evidence(facts, "int8_matmul_unsupported"),
                remediation=Remediation(
                    f"Upgrade bitsandbytes ({minor(INT8_WITHOUT_FALLBACK.below_text)} or newer has a "
                    "slower 8-bit path for older GPUs), or prefer 4-bit (load_in_4bit=True, "
                    f"bnb_4bit_quant_type='nf4'), or use a {INT8_MATMUL_MIN.architecture} or newer "
                    "GPU.",
                    [UPGRADE_PAST_INT8_NAMEERROR],
                ),
                covers=["int8_matmul_unsupported_cc_lt_75"],
            )
        )
    if log.seen(facts, "cuda_setup_nameerror"):
        hits.append(
            Hit(
                title=f"bitsandbytes {INT8_NAMEERROR.first_text} crashes at import on GPUs below compute capability "
                f"{INT8_MATMUL_MIN.text}",
                explanation=f"\"NameError: name 'cuda_setup' is not defined\" is a bug in {INT8_NAMEERROR.first_text}'s "
                f"check for cuBLASLt support, hit on every GPU older than {INT8_MATMUL_MIN.architecture}.",
                evidence=log.line_evidence(facts, "cuda_setup_nameerror"),
                remediation=Remediation("Upgrade bitsandbytes.", [UPGRADE_PAST_INT8_NAMEERROR]),
                covers=["cuda_setup_nameerror_bnb_0_37"],
            )
        )
    if log.seen(facts, "slow_int8_matmul") and not hits:
        hits.append(
            Hit(
                title="Warning only: this GPU runs LLM.int8() on the slow 8-bit matmul",
                explanation="bitsandbytes notes that the GPU has no int8 tensor cores (compute capability below "
                f"{INT8_MATMUL_MIN.text}) and "
                "selects its slower path. This is not itself a failure: if something breaks, the cause is elsewhere in "
                "the log.",
                evidence=log.line_evidence(facts, "slow_int8_matmul", limit=1),
                remediation=Remediation("Nothing to fix; prefer 4-bit quantization on this GPU for speed."),
                severity=Severity.INFO,
                covers=["slow_int8_matmul_warning_cc_lt_75"],
            )
        )
    return hits


@rule(
    "BNB508",
    "log-cublaslt-error",
    Severity.ERROR,
    "The log shows no 'cublasLt ran into an error' failure",
    needs=("log",),
    covers=("cublaslt_ran_into_error", "mixed_gpu_wrong_compute_capability"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/448",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/371",
    ),
    stands_in_for=("BNB106",),
    confirm=("nvidia-smi --query-gpu=index,name,compute_cap --format=csv", "pip show bitsandbytes"),
)
def cublaslt(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `cuBLAS API failed with status 15` / `Exception: cublasLt ran into an error!`, and on GPUs of
    different generations in one legacy-loader process (the log names GPUs on both sides of the 6.0/7.5 thresholds, or
    bitsandbytes' `Highest compute capability among GPUs detected` disagrees with a GPU it names), together with the
    kernel error that follows (`named symbol not found`, `no kernel image`). It is the log twin of [BNB106](BNB106.md).

    ## Why it matters

    Releases before 0.45 choose one native library and one int8 layout for the whole process, from the GPU with the
    highest compute capability. An older card next to a newer one then runs code built for the other: cuBLASLt returns
    "not supported" (status 15), or kernels fail to load. Unsupported architectures and 8-bit on some ROCm forks fail
    the same way.

    ## How to fix

    - Expose one GPU generation to the process (set `CUDA_DEVICE_ORDER=PCI_BUS_ID` so indices match `nvidia-smi`):

      ```bash
      export CUDA_DEVICE_ORDER=PCI_BUS_ID
      export CUDA_VISIBLE_DEVICES=1
      ```

    - Keep the model on one GPU family, upgrade bitsandbytes (0.45+ no longer chooses by the highest GPU), or use 4-bit.
    """
    if not log.seen(facts, "cublaslt_error", "mixed_gpu_generations"):
        return None
    mixed = log.seen(facts, "mixed_gpu_generations")
    if not log.seen(facts, "cublaslt_error") and not log.legacy_loader(facts):
        return None  # mixed GPUs only mattered to the legacy loader's single library choice
    kernel_error = log.seen(facts, "named_symbol_not_found", "no_kernel_image", "invalid_device_function")
    return Hit(
        title=(
            "The int8 matmul failed in cuBLASLt ('cublasLt ran into an error')"
            if log.seen(facts, "cublaslt_error")
            else "GPUs of different generations: the legacy loader chose one library for all of them"
            + (" and a kernel then failed" if kernel_error else "")
        ),
        explanation="cuBLASLt's int8 GEMM returned 'not supported': the layout or kernel chosen does not fit the GPU "
        f"running the layer. Releases before {minor(CC_CHOOSES_LIBRARY.below_text)} chose one library and int8 layout "
        "for the whole process from the "
        "GPU with the highest compute capability, so an older card next to a newer one gets code it cannot run; "
        "unsupported architectures and 8-bit on some ROCm forks fail the same way."
        + (" The log shows GPUs of different generations." if mixed else "")
        + (
            " The kernel error in the log ('named symbol not found', 'no kernel image') is what running another "
            "GPU's library looks like."
            if kernel_error and mixed
            else ""
        ),
        evidence=log.line_evidence(
            facts, "cublaslt_error", "mixed_gpu_generations", "compute_capability", "named_symbol_not_found", limit=4
        ),
        remediation=Remediation(
            "Expose one GPU generation to the process (CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID so "
            "indices match nvidia-smi), keep the model on one GPU family, upgrade bitsandbytes "
            f"({minor(CC_CHOOSES_LIBRARY.below_text)}+ no longer chooses by the highest GPU), or use 4-bit.",
            ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", "nvidia-smi --query-gpu=index,name,compute_cap --format=csv"],
        ),
        covers=(["cublaslt_ran_into_error"] if log.seen(facts, "cublaslt_error") else [])
        + (["mixed_gpu_wrong_compute_capability"] if mixed else []),
    )


# --------------------------------------------------------------------------------- platform and packages
@rule(
    "BNB509",
    "log-windows-legacy-loader",
    Severity.ERROR,
    "The log shows no Linux-only bitsandbytes loader failing on Windows",
    needs=("log",),
    covers=("windows_path_not_iterable", "windows_linux_so_loaded"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723", BNB_DOCS_INSTALL),
    stands_in_for=("BNB204", "BNB312"),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def windows_legacy(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `argument of type 'WindowsPath' is not iterable` and on `[WinError 193] %1 is not a valid Win32
    application` (in any language, e.g. `不是有效的 Win32 应用程序`). It is the log twin of [BNB204](BNB204.md) and
    [BNB312](BNB312.md).

    ## Why it matters

    Before 0.43.0 bitsandbytes had no Windows support: the wheel holds Linux `.so` files and its CUDA setup searches for
    Linux libraries. On Windows it either hands a `WindowsPath` to code expecting a string, or asks `LoadLibrary` to
    load an ELF file. The "Solution" lines it prints (`LD_LIBRARY_PATH`, `find / -name libcudart.so`) are Linux advice
    and do not apply.

    ## How to fix

    Install a release with Windows wheels, or run under WSL2:

    ```bash
    pip install -U "bitsandbytes>=0.43.0"
    ```
    """
    if not log.seen(facts, "windows_path_not_iterable", "windows_linux_library"):
        return None
    crash = log.seen(facts, "windows_path_not_iterable")
    return Hit(
        title=(
            "bitsandbytes' Linux-only loader crashed on a Windows path ('WindowsPath' is not iterable)"
            if crash
            else "Windows refused bitsandbytes' Linux library ([WinError 193])"
        ),
        explanation=f"Before {WINDOWS_WHEELS.first_text} bitsandbytes had no Windows support: the wheel holds Linux "
        ".so files and its CUDA "
        "setup searches for Linux libraries. On Windows "
        + (
            "it hands a WindowsPath to code that expects a string and crashes. "
            if crash
            else "LoadLibrary rejects the ELF file ('%1 is not a valid Win32 application'). "
        )
        + "The 'Solution' lines it prints (LD_LIBRARY_PATH, find / -name libcudart.so) are Linux advice and do not "
        "apply.",
        evidence=log.line_evidence(facts, "windows_path_not_iterable", "windows_linux_library", "bnb_library_selected"),
        remediation=Remediation(
            f"Install a release with Windows wheels ({WINDOWS_WHEELS.first_text} or newer), or run under WSL2.",
            [UPGRADE_TO_WINDOWS_WHEELS],
        ),
        covers=(["windows_path_not_iterable"] if crash else [])
        + (["windows_linux_so_loaded"] if log.seen(facts, "windows_linux_library") else []),
    )


@rule(
    "BNB510",
    "log-macos-no-native-library",
    Severity.ERROR,
    "The log shows no macOS loader rejecting a bitsandbytes library",
    needs=("log",),
    covers=("macos_apple_silicon_no_native_lib",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1378", BNB_DOCS_INSTALL),
    stands_in_for=("BNB204", "BNB313"),
    confirm=("pip show bitsandbytes", "uname -m"),
)
def macos(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when macOS's loader rejects a bitsandbytes library: `not a mach-o file`, or `mach-o file, but is an
    incompatible architecture`. It is the log twin of [BNB204](BNB204.md) and [BNB313](BNB313.md).

    ## Why it matters

    Releases before 0.49 ship Linux ELF libraries only, so `dlopen` fails on a Mac, bitsandbytes falls back, and every
    quantized operation fails (transformers then reports a misleading ImportError). Macs have no CUDA: the CUDA kernels
    behind `load_in_8bit`/`load_in_4bit` never run there.

    ## How to fix

    - Do not use `load_in_8bit`/`load_in_4bit` with these releases on macOS.
    - bitsandbytes 0.49+ publishes an Apple Silicon build (CPU/MPS backends); check its documentation for what is
      supported.
    - For quantized inference on a Mac use MLX or llama.cpp (GGUF), or move to a CUDA machine.
    """
    if not log.seen(facts, "macos_not_macho"):
        return None
    return Hit(
        title="macOS cannot load this bitsandbytes library (not a Mach-O file for this Mac)",
        explanation=f"Releases before {minor(MACOS_WHEELS.first_text)} ship Linux ELF libraries only, so dlopen on a "
        "Mac fails ('not a mach-o "
        "file'), bitsandbytes falls back, and every quantized operation fails; transformers then reports a "
        "misleading ImportError. Macs have no CUDA: the CUDA kernels behind load_in_8bit/load_in_4bit never run "
        "there.",
        evidence=log.line_evidence(facts, "macos_not_macho"),
        remediation=Remediation(
            "Do not use load_in_8bit/load_in_4bit with these releases on macOS. bitsandbytes "
            f"{minor(MACOS_WHEELS.first_text)}+ publishes an Apple "
            "Silicon build (CPU/MPS backends, check its documentation for what is supported); for quantized inference "
            "on a Mac use MLX or llama.cpp (GGUF), or move to a CUDA machine.",
            ["pip show bitsandbytes", "uname -m"],
        ),
    )


@rule(
    "BNB511",
    "log-torch-cuda-none",
    Severity.ERROR,
    "The log shows no sign of a CPU-only (or ROCm) torch under a CUDA bitsandbytes",
    needs=("log",),
    covers=("torch_version_cuda_none",),
    references=(TORCH_GET_STARTED, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1202"),
    stands_in_for=("BNB202",),
    confirm=(TORCH_CHECK,),
)
def torch_cuda_none(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the signs of a torch without CUDA under a CUDA bitsandbytes: `Could not load bitsandbytes native
    library: 'NoneType' object has no attribute 'split'` (from `cuda_specs.py`), a `libbitsandbytes_cudaNone` file name,
    and torch's `Torch not compiled with CUDA enabled`. It is the log twin of [BNB202](BNB202.md), which fires instead
    when the log also names the GPU.

    ## Why it matters

    bitsandbytes builds its library name from `torch.version.cuda`, which is `None` for CPU-only and ROCm builds of
    PyTorch. No CUDA operation of bitsandbytes can work with that torch.

    ## How to fix

    - Check torch: `python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"`.
    - NVIDIA GPU: install a CUDA build of PyTorch (the selector on pytorch.org gives the `--index-url`).
    - AMD GPU: a ROCm torch with a bitsandbytes release that supports ROCm.
    """
    if not log.seen(facts, "torch_cuda_none"):
        return None
    torch = torch_of(facts)
    version = torch.version if torch and torch.installed and torch.version else None
    return Hit(
        title="torch is not a CUDA build (torch.version.cuda is None)" + (f": torch {version}" if version else ""),
        explanation="bitsandbytes derives its library name from torch.version.cuda, which is None for CPU-only and "
        "ROCm builds of PyTorch ('NoneType' object has no attribute 'split', libbitsandbytes_cudaNone, 'Torch not "
        "compiled with CUDA enabled'). No CUDA operation of bitsandbytes can work with this torch.",
        evidence=log.line_evidence(facts, "torch_cuda_none"),
        remediation=Remediation(
            "Install a CUDA build of PyTorch for an NVIDIA GPU (pytorch.org's selector gives the --index-url), or, on "
            "an AMD GPU, a ROCm torch with a bitsandbytes release that supports ROCm.",
            [TORCH_CHECK]
            + (
                [f"pip install --force-reinstall torch --index-url {_torch_index(facts)}"]
                if _torch_index(facts)
                else []
            ),
        ),
    )


@rule(
    "BNB512",
    "log-import-module-missing",
    Severity.ERROR,
    "The log shows no bitsandbytes import failing on a missing module (triton.ops, scipy)",
    needs=("log",),
    covers=("triton_ops_module_missing", "scipy_missing"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1492",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/426",
    ),
    stands_in_for=("BNB207", "BNB208"),
    confirm=("pip show bitsandbytes triton scipy",),
)
def module_missing(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule fires when importing bitsandbytes fails on a missing module: `No module named 'triton.ops'` (also a
    traceback line `from triton.ops… import`, and the message cut after `triton.o`), and `No module named 'scipy'`. It
    is the log twin of [BNB207](BNB207.md) and [BNB208](BNB208.md), which fire instead when the log shows the versions
    they need.

    ## Why it matters

    - bitsandbytes 0.39 to 0.45.0 import `triton.ops.matmul_perf_model` when they load; triton 3.2 (shipped with torch
      2.6) removed `triton.ops`.
    - bitsandbytes 0.39.0 to 0.41.x import scipy for the NF4 data type without declaring it as a dependency.

    ## How to fix

    - triton: upgrade bitsandbytes (0.45.1 removed the import), or pin triton below 3.2 together with torch below 2.6:

      ```bash
      pip install -U "bitsandbytes>=0.45.1"
      ```

    - scipy: `pip install scipy`, or upgrade bitsandbytes.
    """
    hits = []
    if log.seen(facts, "triton_ops_missing"):
        hits.append(
            Hit(
                title=f"bitsandbytes imports triton.ops, which triton {TRITON_WITHOUT_OPS.first_text} removed",
                explanation=f"bitsandbytes {minor(TRITON_OPS_IMPORT.first_text)} to {TRITON_OPS_IMPORT.last_text} import "
                f"triton.ops.matmul_perf_model when they are imported; triton {TRITON_WITHOUT_OPS.first_text} (shipped "
                f"with torch {TORCH_WITH_TRITON_WITHOUT_OPS.first_text}) removed triton.ops, so `import bitsandbytes` "
                "fails with \"ModuleNotFoundError: No module named 'triton.ops'\".",
                evidence=log.line_evidence(facts, "triton_ops_missing"),
                remediation=Remediation(
                    f"Upgrade bitsandbytes ({TRITON_OPS_IMPORT.below_text} removed the import; users "
                    f"report {TRITON_OPS_REPORTED_WORKING}+ working), or pin triton below "
                    f"{TRITON_WITHOUT_OPS.first_text} together with torch below "
                    f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}.",
                    [f'pip install -U "bitsandbytes{TRITON_OPS_IMPORT.after().pip_spec()}"'],
                ),
                covers=["triton_ops_module_missing"],
            )
        )
    if log.seen(facts, "scipy_missing"):
        hits.append(
            Hit(
                title="bitsandbytes needs scipy, which is not installed",
                explanation=f"bitsandbytes {SCIPY_IMPORT.first_text} to {SCIPY_IMPORT.last_text} import scipy (for the NF4 "
                "data type) without declaring it as a "
                "dependency, so `import bitsandbytes` fails with \"No module named 'scipy'\" in slim environments.",
                evidence=log.line_evidence(facts, "scipy_missing"),
                remediation=Remediation("Install scipy, or upgrade bitsandbytes.", ["pip install scipy"]),
                covers=["scipy_missing"],
            )
        )
    return hits


# --------------------------------------------------------------------------------- the native-library chain
@rule(
    "BNB513",
    "log-legacy-libcudart-search",
    Severity.WARNING,
    "The log shows no legacy CUDA setup failing to find libcudart",
    needs=("log",),
    covers=("libcudart_not_found_legacy_cuda_setup",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/778",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1041",
    ),
    stands_in_for=("BNB205", "BNB303"),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def legacy_libcudart(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy CUDA setup's `CUDA_SETUP: WARNING! libcudart.so not found in any environmental path.
    Searching in backup paths...` (and the 0.43.1–0.45 diagnostics' `CUDA runtime files not found in any environmental
    path`), citing the `did not contain ['libcudart.so', …]` lines before it. It is the log twin of [BNB205](BNB205.md)
    and [BNB303](BNB303.md); when BNB205 fires on the same log (it does whenever the log shows the legacy setup and
    torch's CUDA), its finding carries these lines.

    ## Why it matters

    Releases up to 0.43.0 search `CONDA_PREFIX`, `LD_LIBRARY_PATH` and every other path-like variable for
    `libcudart.so`. The search is fragile: it discards hits it found (#958), misreads colon-separated lists (#1112), and
    never looks inside site-packages, where pip's torch keeps its CUDA runtime. It therefore fails on ordinary pip
    installs and its advice points at the wrong CUDA. On Windows it looks for Linux file names and cannot succeed.

    ## How to fix

    Upgrade bitsandbytes: since 0.43.1 the loader follows `torch.version.cuda` and needs no `LD_LIBRARY_PATH` changes.

    ```bash
    pip install -U "bitsandbytes>=0.43.1"
    ```

    On the legacy releases, add the folder of a `libcudart.so` matching torch's CUDA to `LD_LIBRARY_PATH`.
    """
    if not log.seen(facts, "legacy_libcudart_not_found"):
        return None
    windows = log.is_windows(facts)
    return Hit(
        title="bitsandbytes' legacy CUDA setup found no libcudart on the environment's paths",
        explanation=f"Releases up to {LEGACY_CUDA_SETUP.last_text} search CONDA_PREFIX, LD_LIBRARY_PATH and other "
        "path-like variables for "
        "libcudart.so. The search is fragile (it discards hits, misreads colon-separated lists) and never looks "
        "inside site-packages, where pip's torch keeps its CUDA runtime, so it fails on ordinary pip installs; "
        "the advice it prints then points at the wrong CUDA."
        + (" On Windows the search looks for Linux file names and cannot succeed." if windows else ""),
        evidence=log.line_evidence(facts, "legacy_libcudart_not_found", "legacy_path_did_not_contain"),
        remediation=Remediation(
            f"Upgrade bitsandbytes: since {LEGACY_CUDA_SETUP.below_text} the loader follows torch.version.cuda and "
            "needs no LD_LIBRARY_PATH changes. On the legacy releases, add the folder of a libcudart.so that matches "
            "torch's CUDA to LD_LIBRARY_PATH.",
            [UPGRADE_PAST_LEGACY_SETUP],
        ),
    )


@rule(
    "BNB514",
    "log-duplicate-cuda-runtimes",
    Severity.WARNING,
    "The log shows no 'Found duplicate ... libcudart' warning",
    needs=("log",),
    covers=("duplicate_cuda_runtimes_found",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/393",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/205",
    ),
    stands_in_for=("BNB305",),
    confirm=("pip show bitsandbytes", "echo $LD_LIBRARY_PATH"),
)
def duplicates(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy setup's `Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0']
    files: {…}.. We'll flip a coin` and on the diagnostics' `Found duplicate CUDA runtime files (see below).` It is a
    warning: the message alone proves nothing. It is the log twin of [BNB305](BNB305.md).

    ## Why it matters

    The legacy CUDA setup found more than one `libcudart` on the searched paths and picked one. That matters only when
    they are different CUDA versions and the one used differs from torch's; then `invalid device function`, `named
    symbol not found` or `CUBLAS_STATUS_INVALID_VALUE` follow. `libcudart.so` and `libcudart.so.11.0` in one folder are
    usually a file and its symlink.

    ## How to fix

    - Check whether the files are distinct: `readlink -f` each path.
    - Keep one CUDA runtime matching `torch.version.cuda` on `LD_LIBRARY_PATH`/`PATH`/`CUDA_HOME`.
    - Upgrade bitsandbytes (0.43.1+ no longer scans these paths):

      ```bash
      pip install -U "bitsandbytes>=0.43.1"
      ```
    """
    if not log.seen(facts, "duplicate_cuda_runtimes"):
        return None
    return Hit(
        title="Several CUDA runtimes were found on the searched paths ('Found duplicate ... We'll flip a coin')",
        explanation="The legacy CUDA setup found more than one libcudart and picked one. That matters only when they "
        "are different CUDA versions and the one used differs from torch's: then follow-on errors such as 'invalid "
        "device function' or 'named symbol not found' appear. libcudart.so and libcudart.so.11.0 in the same folder "
        "are usually one file and a symlink, so the warning alone proves nothing.",
        evidence=log.line_evidence(facts, "duplicate_cuda_runtimes"),
        remediation=Remediation(
            "Check whether the files are distinct (readlink -f). Keep one CUDA runtime matching torch.version.cuda on "
            f"LD_LIBRARY_PATH/PATH/CUDA_HOME, and upgrade bitsandbytes ({LEGACY_CUDA_SETUP.below_text}+ no longer "
            "scans these paths).",
            ["echo $LD_LIBRARY_PATH", UPGRADE_PAST_LEGACY_SETUP],
        ),
    )


@rule(
    "BNB515",
    "log-legacy-path-noise",
    Severity.INFO,
    "The log shows no 'non-existent directories' warnings of the legacy CUDA setup",
    needs=("log",),
    covers=("nonexistent_path_warnings_noise",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1002",),
    confirm=(PYTHON_M_BNB,),
)
def path_noise(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the legacy setup's `The following directories listed in your path were found to be non-existent:
    {PosixPath(…)}` (and 0.43+'s shorter `The directory listed in your path is found to be non-existent`). It reports
    info: these lines are noise, listed so that they are not mistaken for the failure.

    ## Why it matters

    The legacy CUDA setup splits every environment variable that looks like a path and warns about each piece that is
    not a folder: URLs, notebook kernel arguments, proxy settings, Windows paths. Colab logs carry dozens of them. The
    actual failure, if any, is elsewhere in the log (often the first `CUDA SETUP:` error or `Loading binary` line).

    ## How to fix

    Ignore these lines. Upgrading bitsandbytes makes them shorter or removes them.
    """
    if not log.seen(facts, "nonexistent_paths"):
        return None
    return Hit(
        title="Noise: 'directories listed in your path were found to be non-existent'",
        explanation="The legacy CUDA setup splits every path-like environment variable and lists each piece that is "
        "not a folder (URLs, notebook kernel arguments, Windows paths). These lines are harmless; the failure, if "
        "any, is elsewhere in the log.",
        evidence=log.line_evidence(facts, "nonexistent_paths", limit=1),
        remediation=Remediation("Ignore these lines. Upgrading bitsandbytes makes them shorter or removes them."),
    )


@rule(
    "BNB516",
    "log-bnb-library-missing-for-cuda",
    Severity.ERROR,
    "The log shows no missing bitsandbytes library for the CUDA/ROCm version in use",
    needs=("log",),
    covers=("cuda_binary_missing_for_torch_cuda_version", "cuda_lt_11_unsupported", "rocm_version_tag_misparsed"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/138",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/2014",
    ),
    stands_in_for=("BNB301",),
    confirm=("pip show bitsandbytes", TORCH_CHECK, PYTHON_M_BNB),
)
def library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule fires when the log shows that bitsandbytes has no library for the CUDA version in use: `Required library
    version not found: libbitsandbytes_cudaXYZ.so` (legacy), `Could not find the bitsandbytes CUDA binary at …`
    (0.43.1–0.45), `Configured CUDA binary not found at …` (0.46–0.49), `No compatible CUDA binary found at …` (0.50+),
    or `CUDA version lower than 11 are currently not supported`. For CUDA 10.x it says that no build exists. A missing
    `libbitsandbytes_rocmNN.so` of 0.46–0.49 whose tag no ROCm has (`rocm80`…`rocm84`, or torch's ROCm 7.10+ spelled
    `major*10+minor` when the log shows it) is that release's tag-building bug: the fix is 0.50+. It stays
    silent when `BNB_CUDA_VERSION` chose the file ([BNB302](BNB302.md)) and when not even the CPU library exists
    ([BNB309](BNB309.md)). It is the log twin of [BNB301](BNB301.md).

    ## Why it matters

    bitsandbytes picks `libbitsandbytes_cuda<version>` from torch's CUDA version (the detected runtime on releases
    before 0.41). When the package has no such file (the release predates that CUDA version, or it is a third-party
    build for another CUDA, such as a conda-forge package), it falls back to its CPU library (0.43.1–0.45), raises at
    import (legacy) or at the first GPU call (0.46+). No bitsandbytes build supports CUDA 10.x, and LLM.int8() needs
    CUDA 11 or newer.

    ## How to fix

    - CUDA 10.x: install a CUDA 11.8 or 12.x build of PyTorch (its wheels bring their own runtime), remove CUDA 10
      folders from `LD_LIBRARY_PATH`, then upgrade bitsandbytes; an old driver may need an update first.
    - Otherwise: install the current bitsandbytes from PyPI, keeping torch and bitsandbytes from the same channel, or
      build bitsandbytes for your CUDA version.

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```
    """
    if not log.seen(facts, "bnb_library_not_found", "cuda_older_than_11"):
        return None
    if log.seen(facts, "bnb_cuda_version_override"):
        return Skip("BNB_CUDA_VERSION chose the library (BNB302 judges the override)")
    if log.seen(facts, "bnb_cpu_library_not_found", "bnb_not_compiled"):
        return Skip("not even the CPU library exists: nothing was compiled (BNB309)")
    missing = facts.native.selection.expected_file if facts.native and facts.native.selection else None
    lines = log.line_evidence(facts, "cuda_older_than_11", "bnb_library_not_found", "detected_cuda_version", limit=4)
    rocm = _misbuilt_rocm(facts, missing)
    if rocm is not None and missing is not None:
        return Hit(
            title=f"{missing} is ROCm {rocm[0]}.{rocm[1]} spelled wrongly by bitsandbytes "
            f"{ROCM_TAG_MISBUILT.first_text}–{ROCM_TAG_MISBUILT.last_text}",
            explanation=f"bitsandbytes {ROCM_TAG_MISBUILT.first_text}–{ROCM_TAG_MISBUILT.last_text} build the ROCm "
            f"tag as major*10+minor, so ROCm {rocm[0]}.{rocm[1]} becomes '{rocm[0] * 10 + rocm[1]}' instead of "
            f"'{rocm[0]}{rocm[1]}': the release looks for {missing}, which no release ships, and every native call "
            f"raises 'Configured ROCm binary not found'. {ROCM_TAG_MISBUILT.below_text} fixed the tag (PR #1889).",
            evidence=lines,
            remediation=Remediation(
                f"Upgrade bitsandbytes to {ROCM_TAG_MISBUILT.below_text} or newer, which reads ROCm "
                f"{rocm[0]}.{rocm[1]} as rocm{rocm[0]}{rocm[1]} and falls back to the nearest ROCm {rocm[0]}.x build; "
                "these releases read no override for ROCm, so without upgrading only a source build for the "
                "installed ROCm helps.",
                [f'pip install -U "bitsandbytes{ROCM_TAG_MISBUILT.after().pip_spec()}"', PYTHON_M_BNB],
            ),
            covers=["rocm_version_tag_misparsed"],
        )
    if log.seen(facts, "cuda_older_than_11"):
        old = OLDEST_CUDA_MAJOR - 1
        return Hit(
            title=f"CUDA {old}.x is older than any bitsandbytes build"
            + (f" ({missing} does not exist)" if missing else ""),
            explanation=f"bitsandbytes ships no libraries for CUDA {old}.x and LLM.int8() needs CUDA "
            f"{OLDEST_CUDA_MAJOR} or newer. The legacy loader picked the CUDA version from the runtime it found "
            f"(often an old toolkit on LD_LIBRARY_PATH or a CUDA {old} build of torch), found no matching library and "
            "fell back to its CPU library.",
            evidence=lines,
            remediation=Remediation(
                f"Install a CUDA {' or '.join(SUGGESTED_TORCH_CUDA)} build of PyTorch (its wheels bring their own CUDA "
                f"runtime), remove CUDA {old} folders from LD_LIBRARY_PATH, then upgrade bitsandbytes; an old driver "
                "may need an update first.",
                [TORCH_CHECK, "pip install -U bitsandbytes"],
            ),
            covers=["cuda_lt_11_unsupported", "cuda_binary_missing_for_torch_cuda_version"],
        )
    return Hit(
        title="bitsandbytes has no library for this CUDA version" + (f": {missing} is missing" if missing else ""),
        explanation="bitsandbytes picks libbitsandbytes_cuda<version> from torch's CUDA version (the detected runtime "
        f"on releases before {CUDA_VERSION_FROM_TORCH.first_text}). The installed package has no such file: the "
        "release predates that CUDA version, "
        "or it is a third-party build for another CUDA (conda-forge packages are not supported upstream). It then "
        "falls back to its CPU library or fails on the first GPU call.",
        evidence=lines,
        remediation=Remediation(
            "Install the current bitsandbytes from PyPI, keeping torch and bitsandbytes from the same channel (pip "
            "with pip), or build bitsandbytes from source for your CUDA version.",
            ["pip install -U bitsandbytes", PYTHON_M_BNB],
        ),
        covers=["cuda_binary_missing_for_torch_cuda_version"],
    )


def _misbuilt_rocm(facts: Facts, missing: str | None) -> tuple[int, int] | None:
    """The ROCm version whose tag a 0.46-0.49 release spelled wrongly, from the missing file's name (and
    torch's ROCm version when the log shows it); None when the name is an honest tag."""
    match = re.match(r"libbitsandbytes_rocm(\d+)\.", missing or "")
    bnb = facts.python.bitsandbytes.version if facts.python else None
    if match is None or (bnb is not None and not ROCM_TAG_MISBUILT.contains(bnb)):
        return None
    hip = major_minor(facts.python.torch.hip) if facts.python else None
    if hip is not None:
        return hip if hip[1] >= 10 and match.group(1) == str(hip[0] * 10 + hip[1]) else None
    return rocm_from_misbuilt_tag(match.group(1))


@rule(
    "BNB517",
    "log-windows-dll-not-loaded",
    Severity.ERROR,
    "The log shows no bitsandbytes DLL that Windows could not load",
    needs=("log",),
    covers=("windows_dll_could_not_find_module",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/639",
        "https://docs.python.org/3/library/os.html#os.add_dll_directory",
    ),
    stands_in_for=("BNB311",),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def windows_dll(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `Could not find module '…libbitsandbytes_cudaXYZ.dll' (or one of its dependencies). Try using the
    full path with constructor syntax.` (When the missing DLL is `libbitsandbytes_cpu.dll`, nothing was compiled and
    [BNB309](BNB309.md) reports it.) It is the log twin of [BNB311](BNB311.md).

    ## Why it matters

    The DLL itself is usually there: what fails is a DLL it imports, typically the CUDA runtime or cuBLAS of the CUDA
    version it was built for. Python 3.8+ does not search `PATH` for a DLL's dependencies, so a CUDA toolkit on `PATH`
    does not help. Releases before 0.43 had no official Windows build; each community DLL expects one specific CUDA
    version.

    ## How to fix

    Install the official Windows wheels, which use the CUDA libraries torch ships:

    ```bash
    pip install -U "bitsandbytes>=0.43.0"
    ```

    With a community build, install the CUDA runtime it was built for and do not mix it with another CUDA version.
    """
    if not log.seen(facts, "windows_dll_not_loaded"):
        return None
    first = log.first(facts, "windows_dll_not_loaded")
    name = (
        first.text.split("'")[1].replace("/", "\\").rsplit("\\", 1)[-1]
        if first and first.text.count("'") >= 2
        else "the DLL"
    )
    return Hit(
        title=f"Windows could not load {name} or one of the DLLs it imports",
        explanation="The file is usually there: what fails is a DLL it imports, typically the CUDA runtime or cuBLAS "
        f"of the CUDA version the build was made for. Python {PYTHON_DLL_PATH_SEARCH_DROPPED}+ no longer searches "
        "PATH for a DLL's dependencies, so a CUDA toolkit on PATH does not help. Releases before "
        f"{minor(WINDOWS_WHEELS.first_text)} had no official Windows build; community DLLs each expect one specific "
        "CUDA version.",
        evidence=log.line_evidence(facts, "windows_dll_not_loaded", "cuda_runtime_path"),
        remediation=Remediation(
            f"Install the official Windows wheels (bitsandbytes {WINDOWS_WHEELS.first_text} or newer), which use the "
            "CUDA libraries torch ships. With a community build, install the CUDA runtime it was built for and do not "
            "mix it with another CUDA version.",
            [UPGRADE_TO_WINDOWS_WHEELS],
        ),
    )


@rule(
    "BNB518",
    "log-cuda-libraries-mixed",
    Severity.ERROR,
    "The log shows no CUDA libraries of two CUDA installs mixed in one process",
    needs=("log",),
    covers=("nvjitlink_cusparse_symbol_mismatch", "fatbinwrap_undefined_symbol", "conda_env_vs_system_cuda_mixup"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1115",
        "https://github.com/facebookresearch/bitsandbytes/issues/21",
    ),
    stands_in_for=("BNB304",),
    confirm=("echo $LD_LIBRARY_PATH", TORCH_CUDA_LIBS_CHECK),
)
def cuda_mixed(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule fires on three signs of CUDA libraries from two installs in one process:

    - `libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12`;
    - `undefined symbol: __fatbinwrap_…` when loading bitsandbytes;
    - `undefined symbol: cudaRuntimeGetVersion` from the legacy CUDA setup (a conda environment without its own CUDA
      runtime).

    It is the log twin of [BNB304](BNB304.md), which finds the same by resolving the libraries on the machine.

    ## Why it matters

    - torch's pip-installed `libcusparse.so.12` needs the `libnvJitLink.so.12` shipped next to it; an older copy from a
      system CUDA folder on `LD_LIBRARY_PATH` wins the search. Not a bitsandbytes bug, but it stops every import of
      torch.
    - A `__fatbinwrap` symbol missing means the C++ part and the CUDA part were built or loaded with different CUDA
      versions (early releases with several CUDA installs).
    - The legacy setup took its CUDA runtime from outside the environment (an old `/usr/local/cuda`, or a conda env
      without cudatoolkit), not the one torch uses.

    ## How to fix

    - Remove system CUDA folders from `LD_LIBRARY_PATH` when using pip's torch (or put
      `site-packages/nvidia/nvjitlink/lib` first), and keep `nvidia-nvjitlink-cu12` at least as new as
      `nvidia-cusparse-cu12`.
    - Make `PATH` and `LD_LIBRARY_PATH` point to one CUDA install matching torch.
    - Keep torch and bitsandbytes from one ecosystem and upgrade bitsandbytes, whose loader follows
      `torch.version.cuda`.

    ```bash
    echo $LD_LIBRARY_PATH
    pip install -U nvidia-nvjitlink-cu12 bitsandbytes
    ```
    """
    hits = []
    if log.seen(facts, "nvjitlink_undefined_symbol"):
        hits.append(
            Hit(
                title="libcusparse found an older libnvJitLink from another CUDA install (undefined symbol __nvJitLink…)",
                explanation="torch's pip-installed libcusparse.so.12 needs the libnvJitLink.so.12 shipped next to it, but "
                "the loader found an older copy first, usually from a system CUDA folder on LD_LIBRARY_PATH. This is "
                "not a bitsandbytes bug, but it stops every import of torch and therefore of bitsandbytes.",
                evidence=log.line_evidence(facts, "nvjitlink_undefined_symbol"),
                remediation=Remediation(
                    "Remove the system CUDA lib folder from LD_LIBRARY_PATH when using pip's torch (or put "
                    "site-packages/nvidia/nvjitlink/lib first), and keep nvidia-nvjitlink-cu12 at least as new as "
                    "nvidia-cusparse-cu12.",
                    ["echo $LD_LIBRARY_PATH", "pip install -U nvidia-nvjitlink-cu12"],
                ),
                covers=["nvjitlink_cusparse_symbol_mismatch"],
            )
        )
    if log.seen(facts, "fatbinwrap_undefined_symbol"):
        hits.append(
            Hit(
                title="bitsandbytes' library and the CUDA runtime come from different CUDA versions (__fatbinwrap)",
                explanation="An undefined __fatbinwrap_ symbol means the C++ library and the CUDA part were built or "
                "loaded with different CUDA versions, typically with several CUDA installs on the search paths.",
                evidence=log.line_evidence(facts, "fatbinwrap_undefined_symbol"),
                remediation=Remediation(
                    "Make PATH and LD_LIBRARY_PATH point to one CUDA install that matches torch (check "
                    "`ls $CONDA_PREFIX/lib/*cudart*`), or upgrade bitsandbytes, whose loader follows torch.",
                    ["echo $LD_LIBRARY_PATH", "pip install -U bitsandbytes"],
                ),
                covers=["fatbinwrap_undefined_symbol"],
            )
        )
    if log.seen(facts, "cuda_runtime_symbol_missing"):
        hits.append(
            Hit(
                title="The CUDA runtime found is not the one torch uses (conda environment vs system CUDA)",
                explanation="bitsandbytes called a CUDA runtime function that the libcudart it found does not have: the "
                "runtime came from outside the environment (an old /usr/local/cuda, or a conda env without cudatoolkit).",
                evidence=log.line_evidence(facts, "cuda_runtime_symbol_missing", "cuda_runtime_path"),
                remediation=Remediation(
                    "Keep torch and bitsandbytes from one ecosystem (pip with pip), upgrade bitsandbytes so selection "
                    "follows torch.version.cuda, or install the matching CUDA runtime into the environment and put "
                    "$CONDA_PREFIX/lib first; remove old CUDA folders from LD_LIBRARY_PATH.",
                    ["echo $LD_LIBRARY_PATH", "pip install -U bitsandbytes"],
                ),
                covers=["conda_env_vs_system_cuda_mixup"],
            )
        )
    return hits


@rule(
    "BNB519",
    "log-cpu-library-fallback",
    Severity.ERROR,
    "The log shows no fallback to bitsandbytes' CPU library",
    needs=("log",),
    covers=("compiled_without_gpu_support", "cpu_lib_undefined_symbol_cget_col_row_stats"),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/459"),
    stands_in_for=("BNB301", "BNB308", "BNB202"),
    confirm=(PYTHON_M_BNB, TORCH_CHECK),
)
def cpu_fallback(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when the log shows bitsandbytes on its CPU library: `The installed version of bitsandbytes was
    compiled without GPU support`, `Defaulting to libbitsandbytes_cpu.so`, `Loading binary …libbitsandbytes_cpu.so`,
    `Proceeding to load CPU-only library`, and CUDA-only functions missing from it (`undefined symbol:
    cget_col_row_stats`, Windows' `function 'cadam32bit_grad_fp32' not found`). It is an error when the log shows
    nothing that explains the fallback, and info ("a consequence of the cause above") when it does. The explanation
    names the platform's reason when the log shows it (Windows with a release before 0.43, macOS). It is the log twin of
    [BNB301](BNB301.md), [BNB308](BNB308.md) and [BNB202](BNB202.md).

    ## Why it matters

    Despite its wording, "compiled without GPU support" does not mean a bad build: the loader chose
    `libbitsandbytes_cpu` because it found no usable CUDA library (no GPU visible to torch, no library for torch's CUDA
    version, or a platform without GPU builds). Every 8-bit optimizer and 8/4-bit GPU call then fails with messages such
    as `'NoneType' object has no attribute 'cadam32bit_grad_fp32'` or `undefined symbol: cget_col_row_stats`.

    ## How to fix

    - Read the lines before the fallback, or run `python -m bitsandbytes`, for the reason.
    - Usual fixes: a CUDA build of torch with `torch.cuda.is_available()` True, then `pip install -U bitsandbytes`
      (0.43.0+ on Windows).
    - Do not copy a CUDA library over `libbitsandbytes_cpu.so`: it hides the symptom and breaks later.
    """
    if not log.seen(facts, "cpu_library_selected", "compiled_without_gpu_support", "cpu_library_missing_symbol"):
        return None
    severity, because = _severity_as_consequence(facts)
    lines = log.line_evidence(
        facts,
        "cpu_library_selected",
        "compiled_without_gpu_support",
        "cpu_library_missing_symbol",
        "native_library_unavailable",
        limit=4,
    )
    windows_legacy = log.is_windows(facts) and log.legacy_loader(facts)
    if log.is_macos(facts):
        why = (
            f"macOS has no CUDA, and releases before {minor(MACOS_WHEELS.first_text)} have no macOS build: only "
            "CPU code can load."
        )
        fix = Remediation(
            "Use a CUDA machine for 8-bit/4-bit GPU work, or MLX / llama.cpp on a Mac.", ["pip show bitsandbytes"]
        )
    elif windows_legacy:
        why = (
            f"On Windows, releases before {minor(WINDOWS_WHEELS.first_text)} hold only Linux libraries and a "
            "loader that never finds CUDA, so they always end up on the CPU library."
        )
        fix = Remediation(
            f"Install a release with Windows support ({WINDOWS_WHEELS.first_text} or newer), or run under WSL2.",
            [UPGRADE_TO_WINDOWS_WHEELS],
        )
    else:
        why = (
            "Typical reasons: torch cannot see a GPU (CPU-only torch, driver problem), or the package holds no "
            "library for torch's CUDA version; the lines before the fallback say which."
        )
        fix = Remediation(
            "Read the lines before the fallback (or run `python -m bitsandbytes`) for the reason. Usual fixes: a CUDA "
            "build of torch with torch.cuda.is_available() True, then `pip install -U bitsandbytes`. Do not copy a "
            "CUDA library over libbitsandbytes_cpu.so: it hides the symptom and breaks later.",
            [TORCH_CHECK, PYTHON_M_BNB, "pip install -U bitsandbytes"],
        )
    return Hit(
        title="bitsandbytes fell back to its CPU library ('compiled without GPU support')",
        explanation="Despite its wording, 'The installed version of bitsandbytes was compiled without GPU support' "
        "means the loader chose libbitsandbytes_cpu: every 8-bit optimizer and 8/4-bit GPU call then fails "
        "(\"'NoneType' object has no attribute 'cadam32bit_grad_fp32'\", 'undefined symbol: cget_col_row_stats'). "
        + why
        + because,
        evidence=lines,
        remediation=fix,
        severity=severity,
        covers=["compiled_without_gpu_support"]
        + (
            ["cpu_lib_undefined_symbol_cget_col_row_stats"]
            if log.seen(facts, "cpu_library_missing_symbol") and not (windows_legacy or log.is_macos(facts))
            else []
        ),
    )


@rule(
    "BNB520",
    "log-native-library-unavailable",
    Severity.ERROR,
    "The log shows no call into a bitsandbytes native library that failed to load",
    needs=("log",),
    covers=("native_lib_none_attribute_errors", "cuda_setup_failed_despite_gpu_available"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1615", BNB_ERRORS),
    stands_in_for=("BNB309", "BNB301"),
    confirm=(PYTHON_M_BNB,),
)
def native_unavailable(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the messages that follow a failed library load: `AttributeError: 'NoneType' object has no
    attribute 'c…'` (`cquantize_blockwise_fp16_nf4`, `cint8_vector_quant`, `cuDeviceGetCount`, …), 0.46+'s `Attempted to
    use bitsandbytes native library functionality but it's not available`, and the umbrella `CUDA Setup failed despite
    GPU being available` / `CUDA SETUP: Setup Failed!` / `CUDA detection failed!`. Like [BNB519](BNB519.md), it is info
    when the log shows the cause and an error when it does not. It is the log twin of [BNB309](BNB309.md) and
    [BNB301](BNB301.md).

    ## Why it matters

    These messages carry no diagnosis: the native library failed to load earlier, `lib` is `None`, and the first C call
    fails. The cause is the first loader error in the log (a missing CUDA library, a `GLIBC`/`CXXABI` version, a
    `WindowsPath` crash, `BNB_CUDA_VERSION`, a missing binary). Maintainers' first advice is that the bitsandbytes
    version is outdated.

    ## How to fix

    - Scroll up to the first `Could not load bitsandbytes native library` / `CUDA SETUP:` error and fix that; `python -m
      bitsandbytes` prints it directly.
    - First try upgrading bitsandbytes and restarting the notebook kernel:

      ```bash
      pip install -U bitsandbytes
      python -m bitsandbytes
      ```
    """
    if not log.seen(facts, "native_library_unavailable", "cuda_setup_failed"):
        return None
    severity, because = _severity_as_consequence(facts, "cpu_library_selected", "compiled_without_gpu_support")
    umbrella = log.seen(facts, "cuda_setup_failed")
    return Hit(
        title=(
            "bitsandbytes could not set up its CUDA library ('CUDA Setup failed')"
            if umbrella and not log.seen(facts, "native_library_unavailable")
            else "A bitsandbytes function was called after its native library failed to load"
        ),
        explanation="'CUDA Setup failed despite GPU being available' and \"'NoneType' object has no attribute "
        "'c…'\" carry no diagnosis of their own: the native library failed to load earlier (lib is None) and the "
        "cause is the first loader error in the log." + because,
        evidence=log.line_evidence(facts, "native_library_unavailable", "cuda_setup_failed", "native_load_error"),
        remediation=Remediation(
            "Scroll up to the first 'Could not load bitsandbytes native library' / CUDA SETUP error and fix that; "
            "`python -m bitsandbytes` prints it directly. First try upgrading bitsandbytes and restarting the "
            "notebook kernel.",
            [PYTHON_M_BNB, "pip install -U bitsandbytes"],
        ),
        severity=severity,
        covers=(["native_lib_none_attribute_errors"] if log.seen(facts, "native_library_unavailable") else [])
        + (["cuda_setup_failed_despite_gpu_available"] if umbrella else []),
    )


# --------------------------------------------------------------------------------- workflows
@rule(
    "BNB521",
    "transformers-misleading-importerror",
    Severity.ERROR,
    "The log shows no transformers 'requires Accelerate and the latest bitsandbytes' ImportError",
    needs=("log",),
    covers=("transformers_importerror_requires_accelerate_bnb",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1306",
        "https://github.com/huggingface/transformers/pull/30533",
    ),
    confirm=(TORCH_CHECK, "pip show transformers accelerate bitsandbytes", PYTHON_M_BNB),
)
def transformers_importerror(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on transformers' `ImportError: Using bitsandbytes 8-bit quantization requires Accelerate: pip install
    accelerate and the latest version of bitsandbytes` and `… requires the latest version of bitsandbytes`. It is info
    when the log shows an earlier bitsandbytes failure that explains it.

    ## Why it matters

    The message comes from transformers, not bitsandbytes: `is_bitsandbytes_available()` returned False. Since
    transformers 4.3x that check also requires `torch.cuda.is_available()`, so a CPU-only torch, a runtime without a GPU
    (a Colab CPU runtime, a Mac), a bitsandbytes that fails to import, or packages installed into a running kernel all
    produce this misleading text even with both packages installed.

    ## How to fix

    - Check `torch.cuda.is_available()` first: install a CUDA build of torch or pick a GPU runtime (Colab: Runtime ›
      Change runtime type › GPU).
    - Restart the kernel after installing packages.
    - Upgrade transformers, accelerate and bitsandbytes; `python -m bitsandbytes` shows bitsandbytes' own error, if any.

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    pip install -U transformers accelerate bitsandbytes
    ```
    """
    if not log.seen(facts, "transformers_bnb_importerror"):
        return None
    severity, because = _severity_as_consequence(facts)
    notebook = log.seen(facts, "notebook")
    return Hit(
        title="transformers says bitsandbytes or Accelerate is missing, but its check also needs a CUDA GPU",
        explanation="The message comes from transformers, not bitsandbytes: is_bitsandbytes_available() returned "
        f"False. Since transformers {BNB_CHECK_NEEDS_GPU_SINCE} that check also requires torch.cuda.is_available(), "
        "so a CPU-only torch, a "
        "runtime without a GPU, a bitsandbytes that fails to import, or packages installed into a running kernel "
        "all produce this text." + because,
        evidence=log.line_evidence(facts, "transformers_bnb_importerror", limit=1),
        remediation=Remediation(
            "Check torch.cuda.is_available() first: install a CUDA build of torch or pick a GPU runtime"
            + (" (Colab: Runtime > Change runtime type > GPU)" if notebook else "")
            + "; restart the kernel after installing packages; upgrade transformers, accelerate and bitsandbytes; "
            "`python -m bitsandbytes` shows bitsandbytes' own error, if any.",
            [TORCH_CHECK, "pip install -U transformers accelerate bitsandbytes", PYTHON_M_BNB],
        ),
        severity=severity,
    )


@rule(
    "BNB522",
    "stale-modules-after-upgrade",
    Severity.ERROR,
    "The log shows no bitsandbytes module importing a name its sibling lacks (old and new files mixed)",
    needs=("log",),
    covers=("colab_stale_modules_sync_gpu",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1792",),
    confirm=("pip show bitsandbytes peft transformers accelerate", PYTHON_M_BNB),
)
def stale_modules(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when a bitsandbytes module imports a name that another bitsandbytes module lacks: `ImportError:
    cannot import name 'X' from 'bitsandbytes.Y'` (for example `sync_gpu` from `bitsandbytes.utils`), and the paraphrase
    `can not import 'sync_gpu'`.

    ## Why it matters

    After `pip install -U bitsandbytes` inside a running notebook, the modules already imported stay in memory next to
    the new files on disk, so a new module imports from an old one. Outdated packages built on bitsandbytes (an old
    PEFT) add to it. `python -m bitsandbytes` in a fresh process usually reports success, which makes this confusing.

    ## How to fix

    Restart the runtime or kernel after upgrading, and upgrade the packages built on bitsandbytes together with it:

    ```bash
    pip install -U bitsandbytes peft transformers accelerate
    ```
    """
    if not log.seen(facts, "stale_bnb_modules"):
        return None
    return Hit(
        title="Old and new bitsandbytes modules are mixed in one Python process",
        explanation="A bitsandbytes module imports a name that another bitsandbytes module does not define (such as "
        "sync_gpu from bitsandbytes.utils). After `pip install -U bitsandbytes` inside a running notebook, the old "
        "modules already imported stay in memory next to the new files; outdated packages built on bitsandbytes "
        "(an old PEFT) add to it. `python -m bitsandbytes` in a fresh process usually reports success.",
        evidence=log.line_evidence(facts, "stale_bnb_modules"),
        remediation=Remediation(
            "Restart the runtime or kernel after upgrading, and upgrade peft, transformers and "
            "accelerate together with bitsandbytes.",
            ["pip install -U bitsandbytes peft transformers accelerate", PYTHON_M_BNB],
        ),
    )


@rule(
    "BNB530",
    "peft-merge-into-quantized-base",
    Severity.WARNING,
    "The log shows no LoRA merge into a 4-bit or 8-bit base layer",
    needs=("log",),
    covers=("peft_merge_lora_into_4bit_rounding_warning",),
    references=(
        "https://github.com/huggingface/peft/issues/2321",
        "https://github.com/huggingface/peft/issues/2105",
        "https://github.com/artidoro/qlora/issues/29",
    ),
    confirm=('python -c "import peft; print(peft.__version__)"',),
)
def peft_merge(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on PEFT's `UserWarning: Merge lora module to 4-bit linear may get different generations due to
    rounding errors.` (and the `Unmerge` and 8-bit variants). It is a warning: nothing fails, but the merged model
    differs from the adapter's outputs.

    ## Why it matters

    `merge_and_unload()` on a bitsandbytes 4-bit layer dequantizes the weight, adds the LoRA update and quantizes the
    sum to 4-bit again, so rounding error is unavoidable. PEFT's maintainers say there is no way to avoid it at this
    precision; the warning only makes users aware. QLoRA trained the adapter against the dequantized base, so the
    faithful merge happens in 16-bit.

    ## How to fix

    If output fidelity matters, do not merge into the quantized model:

    - keep the adapter unmerged; or
    - load the base model in bf16/fp16 (no `quantization_config`), attach the adapter, `merge_and_unload()` and save;
      then quantize the merged 16-bit model once if you need a 4-bit model:

    ```python
    base = AutoModelForCausalLM.from_pretrained(base_id, torch_dtype=torch.bfloat16)
    merged = PeftModel.from_pretrained(base, adapter_id).merge_and_unload()
    merged.save_pretrained("merged-bf16")  # quantize this once, when loading it later
    ```
    """
    if not log.seen(facts, "peft_merge_quantized_warning"):
        return None
    bits = "8" if any("8-bit" in m.text for m in log.matches(facts, "peft_merge_quantized_warning")) else "4"
    return Hit(
        title=f"LoRA weights were merged into a {bits}-bit quantized base: generations will drift",
        explanation=f"merge_and_unload() on a bitsandbytes {bits}-bit layer dequantizes the weight, adds the LoRA "
        f"update and quantizes the result to {bits}-bit again, so rounding error is unavoidable and the merged model "
        "no longer matches the adapter's outputs. PEFT only warns; nothing is broken.",
        evidence=log.line_evidence(facts, "peft_merge_quantized_warning"),
        remediation=Remediation(
            "If output fidelity matters, do not merge into the quantized model: keep the adapter unmerged, or load the "
            "base model in bf16/fp16 (no quantization_config), attach the adapter, call merge_and_unload() and save; "
            "quantize the merged 16-bit model once afterwards if you need a 4-bit model."
        ),
    )


@rule(
    "BNB531",
    "peft-legacy-quantized-merge-error",
    Severity.ERROR,
    "The log shows no old PEFT refusing to merge LoRA layers into a quantized model",
    needs=("log",),
    covers=("peft_merge_in_8bit_mode_valueerror_legacy",),
    references=("https://github.com/huggingface/peft/pull/851", "https://github.com/artidoro/qlora/issues/28"),
    confirm=('python -c "import peft; print(peft.__version__)"',),
)
def peft_legacy_merge(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on old PEFT's `ValueError: Cannot merge LORA layers when the model is loaded in 8-bit mode` (raised
    for 4-bit models too).

    ## Why it matters

    PEFT releases before PR #851 (mid-2023) refused to merge into any bitsandbytes-quantized model and used the 8-bit
    wording for 4-bit models as well. Newer PEFT merges, with the rounding warning of [BNB530](BNB530.md).

    ## How to fix

    - Merge into an unquantized base instead (load it in bf16/fp16, attach the adapter, `merge_and_unload()`, save); or
    - upgrade PEFT if a merge into the quantized model is what you want:

      ```bash
      pip install -U peft
      ```
    """
    if not log.seen(facts, "peft_legacy_merge_error"):
        return None
    return Hit(
        title="This PEFT release cannot merge LoRA layers into a quantized model",
        explanation="PEFT releases before PR #851 (mid-2023) refuse to merge into any bitsandbytes-quantized model "
        "and say '8-bit mode' even for 4-bit models. Newer PEFT merges, with a rounding warning, because merging at "
        "low precision loses accuracy.",
        evidence=log.line_evidence(facts, "peft_legacy_merge_error"),
        remediation=Remediation(
            "Merge into an unquantized base instead (load it in bf16/fp16, attach the adapter, merge_and_unload, save), "
            "or upgrade PEFT if a merge into the quantized model is what you want.",
            ["pip install -U peft"],
        ),
    )


@rule(
    "BNB532",
    "tensors-on-different-devices",
    Severity.ERROR,
    "The log shows no 'Expected all tensors to be on the same device' error",
    needs=("log",),
    covers=("tensors_same_device_after_device_map_auto",),
    references=(
        "https://github.com/huggingface/peft/issues/1831",
        "https://github.com/huggingface/trl/issues/2760",
        "https://github.com/huggingface/peft/issues/3169",
    ),
    confirm=("nvidia-smi", 'python -c "import peft, transformers; print(peft.__version__, transformers.__version__)"'),
)
def different_devices(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
    cuda:0 and cpu!` (and `cuda:1 and cuda:0`), noting `torch.nn.DataParallel` when the log shows `Caught RuntimeError
    in replica N on device N`. The message is generic PyTorch, so the confidence is medium unless the log shows a
    quantized model.

    ## Why it matters

    Part of a quantized computation lives on another device than the activations: `device_map` offloaded some layers (or
    their `quant_state`) to the CPU or split them across GPUs; `DataParallel` replicas keep the 4-bit `quant_state` on
    device 0; or, with LoRA on CPU-offloaded bitsandbytes layers, the base result stays on the CPU while the LoRA update
    is on the GPU.

    ## How to fix

    - Load the quantized model on one device when it fits: `device_map={"": 0}`.
    - For several GPUs use accelerate/torchrun DDP with `device_map={"": local_rank}` instead of `DataParallel`.
    - Avoid CPU offload with bitsandbytes layers; move inputs to the device of the model's first layer.
    - Upgrade peft (device fixes in PR #3418):

      ```bash
      pip install -U peft accelerate transformers
      ```
    """
    if not log.seen(facts, "tensors_different_devices"):
        return None
    replica = log.seen(facts, "dataparallel_replica_error")
    quantized = log.seen(facts, "quantization_config") or bool(facts.python and facts.python.bitsandbytes.installed)
    return Hit(
        title="Parts of a "
        + ("quantized " if quantized else "")
        + "model run on different devices"
        + (" (torch.nn.DataParallel)" if replica else ""),
        explanation="An operation received tensors on two devices. With bitsandbytes layers this happens when "
        "device_map offloaded some layers (or their quant_state) to the CPU or split them across GPUs, when "
        "torch.nn.DataParallel replicas keep the 4-bit quant_state on device 0, or when a LoRA update on the GPU "
        "meets a base layer offloaded to the CPU.",
        evidence=log.line_evidence(facts, "tensors_different_devices", "dataparallel_replica_error"),
        remediation=Remediation(
            "Load the quantized model on one device when it fits (device_map={'': 0}); for several GPUs use "
            "accelerate/torchrun DDP with device_map={'': local_rank} instead of DataParallel; avoid CPU offload with "
            "bitsandbytes layers; move inputs to the device of the model's first layer; upgrade peft.",
            ["nvidia-smi", "pip install -U peft accelerate transformers"],
        ),
    )


@rule(
    "BNB533",
    "bnb-inputs-off-gpu",
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
    if not log.seen(facts, "bnb_device_guard"):
        return None
    return Hit(
        title="A bitsandbytes operation got input, weight or quant_state tensors that are not on the GPU",
        explanation="bitsandbytes' functional ops check that every tensor they receive (input, weight, absmax, code, "
        "bias) is on the same CUDA device. The application's memory manager (typical in ComfyUI/Forge low-VRAM "
        "modes with NF4 models) moved part of a quantized module to the CPU. This is an application issue, not a "
        "bitsandbytes bug.",
        evidence=log.line_evidence(facts, "bnb_device_guard"),
        remediation=Remediation(
            "Keep the whole quantized module and its quant_state on the GPU: disable low-VRAM offloading for "
            "bitsandbytes models, free VRAM before sampling, update the custom node or application, and report it "
            "there.",
            ["nvidia-smi"],
        ),
    )
