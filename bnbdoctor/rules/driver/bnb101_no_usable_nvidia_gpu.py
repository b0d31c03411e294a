"""BNB101 no-usable-nvidia-gpu: passes when an NVIDIA driver answers and at least one GPU is visible to CUDA."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, ev, torch_of

_DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"


@rule(
    Severity.ERROR,
    "An NVIDIA driver answers and at least one GPU is visible to CUDA",
    needs=("gpu", "platform"),
    covers=("no_gpu_detected_cpu_fallback", "cuda_driver_insufficient_for_runtime"),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/486"),
    requires=("driver-exposed",),
)
def no_usable_gpu(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `gpu` and `platform` facts and is skipped when either probe failed. It is also skipped on macOS
    (no NVIDIA driver exists there) and when torch is a ROCm (`torch.version.hip`) or XPU build, because then no NVIDIA
    GPU is expected.

    It passes when NVML (the driver's management library) loaded and at least one GPU is visible, i.e. not hidden by
    `CUDA_VISIBLE_DEVICES`. Otherwise it reports one finding, worded for the case it sees:

    - NVML lists GPUs but `CUDA_VISIBLE_DEVICES` matches none of them;
    - NVML answers but lists no GPU (typical of a container started without GPU access);
    - the driver is installed but its kernel module is not loaded (`nvml_error_kind` is `driver_not_loaded`);
    - NVML did not answer in time (`timeout`);
    - NVML could not be loaded at all, i.e. no driver. Under WSL2 the advice points at the Windows driver instead.

    The finding is an **error** when `torch.version.cuda` is set (a GPU is expected) and **info** otherwise: a machine
    without an NVIDIA GPU that runs bitsandbytes on its CPU backend is a valid setup.

    ## Why it matters

    bitsandbytes picks its native library from what torch reports. If `torch.cuda.is_available()` is False, every
    release loads the CPU library, and anything that needs CUDA (8-bit optimizers, LLM.int8(), 4-bit quantization on a
    GPU) fails later. Depending on the release, users see:

    - {{ loader.NO_GPU_DETECTED_WARNING.first_text }}–{{ loader.NO_GPU_DETECTED_WARNING.last_text }} (legacy loader): `WARNING: No GPU detected! Check your CUDA paths. Proceeding to load CPU-only
      library...`
    - up to {{ loader.CPU_FALLBACK_ERA.last_text }}: `The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit
      multiplication, and GPU quantization are unavailable.` (the package is fine; only the CPU library was chosen)
    - {{ loader.CPU_FALLBACK_ERA.below_text }}+: `Method '{name}' not available in CPU-only version of bitsandbytes.` at the first missing native call.
    - A CUDA library forced onto a machine without a usable driver: `Error CUDA driver version is insufficient for CUDA
      runtime version at line 167 in file ...ops.cu`.

    ## Example notes

    On a machine where torch is a CUDA build, the same case is an error titled `No NVIDIA driver found`, and the fix
    line asks for the driver to be installed.

    ## How to fix

    Check what the driver sees and what CUDA is allowed to see:

    ```bash
    nvidia-smi
    nvidia-smi -L
    echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
    python -c "import torch; print(torch.version.cuda, torch.cuda.is_available())"
    ```

    - GPUs hidden: `unset CUDA_VISIBLE_DEVICES`, or set it to indices or UUIDs printed by `nvidia-smi -L`. CUDA stops
      reading the list at the first entry it cannot match.
    - No driver: install the NVIDIA driver for the GPU; `nvidia-smi` must list it afterwards. After a driver update,
      reboot so the kernel module and the user-space library match.
    - Containers: start them with the NVIDIA Container Toolkit, e.g. `docker run --gpus all ...`.
    - WSL2: install the driver on Windows, never a Linux driver inside WSL (see [BNB107](BNB107.md)).
    - No NVIDIA GPU at all: there is nothing to repair. Use a CPU build of torch and do not enable 8-bit optimizers or
      GPU quantization.

    ## Severity note

    lowered to **info** when torch is not a CUDA build

    ## Further reading

    - https://www.nvidia.com/Download/index.aspx
    - https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html
      (`CUDA_VISIBLE_DEVICES`)
    - https://github.com/NVIDIA/nvidia-container-toolkit
    """
    gpu, platform = facts.gpu, facts.platform
    assert gpu is not None and platform is not None
    torch = torch_of(facts)
    if platform.os == "macos":
        return Skip("macOS has no NVIDIA driver; bitsandbytes uses its CPU/MPS backends there")
    if torch and torch.installed and (torch.hip or torch.xpu):
        return Skip(f"torch is a {torch.build} build; NVIDIA GPUs are not expected")
    if platform.jetson_release:
        return Skip("Jetson's integrated GPU is not visible to NVML; CUDA works without it")
    if gpu.nvml_available and gpu.visible:
        return None
    expected = bool(torch and torch.cuda)
    severity = Severity.ERROR if expected else Severity.INFO
    evidence = [ev("NVML", "available" if gpu.nvml_available else gpu.nvml_error, "gpu.nvml_error")]
    if torch is not None and torch.installed:
        evidence.append(ev("torch build", f"{torch.version} (CUDA {torch.cuda or 'none'})", "python.torch.cuda"))
    consequence = (
        "torch is a CUDA build, so a GPU is expected, but torch.cuda.is_available() will be False: "
        "bitsandbytes then loads its CPU library and every CUDA 8-bit/4-bit operation fails."
        if expected
        else "bitsandbytes will use its CPU backend; 8-bit optimizers, LLM.int8() and 4-bit "
        "quantization on a GPU are unavailable on this machine."
    )
    if gpu.nvml_available and gpu.devices and not gpu.visible:
        evidence.append(ev("CUDA_VISIBLE_DEVICES", repr(gpu.cuda_visible_devices), "gpu.cuda_visible_devices"))
        evidence.append(ev("GPUs present", ", ".join(d.name for d in gpu.devices), "gpu.devices"))
        return Hit(
            title=f"CUDA_VISIBLE_DEVICES={gpu.cuda_visible_devices!r} hides every GPU",
            explanation="The driver sees GPUs, but CUDA_VISIBLE_DEVICES matches none of them (CUDA stops "
            "at the first entry it cannot match). " + consequence,
            evidence=evidence,
            remediation=Remediation(
                "Unset CUDA_VISIBLE_DEVICES or list valid GPU indices/UUIDs (see `nvidia-smi -L`).",
                ["nvidia-smi -L", "unset CUDA_VISIBLE_DEVICES"],
            ),
            severity=severity,
            covers=["no_gpu_detected_cpu_fallback"],
        )
    if gpu.nvml_available:
        title, why = "The NVIDIA driver reports no GPUs", "NVML answered but lists no GPU."
        fix = Remediation(
            "Check that the GPU is attached (containers need `--gpus all` and the NVIDIA container toolkit).",
            ["nvidia-smi"],
        )
    elif gpu.nvml_error_kind == "driver_not_loaded":
        title, why = "The NVIDIA driver is installed but not loaded", f"NVML: {gpu.nvml_error}."
        fix = Remediation(
            "Load the kernel module (reboot after a driver update) or, in a container, start it "
            "with the NVIDIA runtime (`docker run --gpus all ...`).",
            ["nvidia-smi"],
        )
    elif gpu.nvml_error_kind == "timeout":
        title, why = "The NVIDIA driver did not answer", f"NVML: {gpu.nvml_error}."
        fix = Remediation(
            "A hung driver needs attention before bitsandbytes can work: check `nvidia-smi` and the kernel log.",
            ["nvidia-smi", "dmesg | grep -i nvrm"],
        )
    else:
        title = (
            "No NVIDIA driver found"
            if expected
            else "No NVIDIA GPU on this machine: bitsandbytes will use its CPU backend"
        )
        why = f"NVML could not be loaded ({gpu.nvml_error or 'no driver library'})."
        if platform.wsl == 2:
            fix = Remediation(
                "Under WSL2 the driver comes from Windows: install the current NVIDIA Windows "
                "driver and make sure /usr/lib/wsl/lib is on the loader path. Do not install a "
                "Linux driver inside WSL.",
                ["ls /usr/lib/wsl/lib", "nvidia-smi"],
            )
        elif expected:
            fix = Remediation(
                "Install the NVIDIA driver for your GPU (then `nvidia-smi` must list it), or, "
                "on a machine without an NVIDIA GPU, install a CPU build of torch.",
                ["nvidia-smi"],
            )
        else:
            fix = Remediation(
                "Nothing to fix if this machine has no NVIDIA GPU. On a GPU machine, install the "
                "NVIDIA driver and a CUDA build of torch.",
                ["nvidia-smi"],
            )
    # "CUDA driver version is insufficient" is what a CUDA library does on a machine whose driver is
    # missing or not loaded; a hidden, hung or GPU-less driver, or no GPU at all, only means the CPU library.
    no_driver = not gpu.nvml_available and gpu.nvml_error_kind != "timeout"
    return Hit(
        title=title,
        explanation=f"{why} {consequence}",
        evidence=evidence,
        remediation=fix,
        severity=severity,
        references=[_DRIVER_DOWNLOAD],
        covers=(
            ["no_gpu_detected_cpu_fallback", "cuda_driver_insufficient_for_runtime"]
            if no_driver and expected
            else ["no_gpu_detected_cpu_fallback"]
        ),
    )
