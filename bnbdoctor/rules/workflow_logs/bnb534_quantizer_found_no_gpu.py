"""BNB534 quantizer-found-no-gpu: passes when the log shows no bitsandbytes quantizer refusing to load because it found no GPU."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.common import torch_of
from bnbdoctor.rules.workflow_logs._shared import VERSIONS_CHECK


def _torch_version(facts: Facts) -> str | None:
    torch = torch_of(facts)
    return (torch.version if torch and torch.installed else None) or log.version(facts, "torch")


def _no_gpu_cause(facts: Facts, devices: str | None) -> tuple[str, str, str, list[str]] | None:
    """(cause in a few words, why, fix, commands) for what the rest of the log shows about the missing accelerator."""
    torch_version = _torch_version(facts) or ""
    if log.seen(facts, S.TORCH_CUDA_NONE) or torch_version.endswith("+cpu"):
        shown = f"torch {torch_version}" if torch_version else "torch.version.cuda = None"
        return (
            f"torch is a CPU-only build ({shown})",
            f"The log shows a CPU-only build of torch ({shown}): it cannot see any GPU.",
            (
                "Install a CUDA build of torch from the PyTorch index for your driver (pip install torch --index-url "
                "https://download.pytorch.org/whl/cuXXX), then load the model again."
            ),
            [TORCH_CHECK, "nvidia-smi"],
        )
    no_driver = facts.gpu is not None and not facts.gpu.nvml_available
    if log.seen(facts, S.NO_NVIDIA_DRIVER, S.LIBCUDA_NOT_FOUND) or no_driver:
        return (
            "no NVIDIA driver is visible to torch",
            (
                "The log shows that torch finds no NVIDIA driver (libcuda): the GPU is not visible to this process. In "
                "a container that means it was started without GPU access; on a host, the driver is missing."
            ),
            (
                "Start the container with the GPU (docker run --gpus all, or the NVIDIA container runtime), or install "
                "the "
                "NVIDIA driver on the host; nvidia-smi must list the GPU inside the environment that runs the script."
            ),
            ["nvidia-smi", TORCH_CHECK],
        )
    if log.seen(facts, S.DRIVER_TOO_OLD, S.CUDA_DRIVER_INSUFFICIENT, S.CUDA_ERROR_803):
        return (
            "CUDA failed to initialise (driver)",
            (
                "The log shows that CUDA failed to initialise (the driver is too old for this torch, or does not match "
                "its kernel module): torch.cuda.is_available() is False although a GPU may be present."
            ),
            "Update the NVIDIA driver, or install a torch built for an older CUDA that this driver supports.",
            ["nvidia-smi", TORCH_CHECK],
        )
    if log.is_macos(facts) or (devices and "mps" in devices):
        return (
            "Apple Silicon (MPS) is not accepted by this bitsandbytes/transformers",
            (
                "The log points to Apple Silicon (MPS): older bitsandbytes and transformers releases accept only CUDA "
                "(and a few other backends) for quantization."
            ),
            (
                "Use a bitsandbytes release with MPS support and a transformers that accepts it, or another "
                "quantization method on macOS."
            ),
            [VERSIONS_CHECK],
        )
    if log.seen(facts, S.COMPILED_WITHOUT_GPU_SUPPORT, S.CPU_LIBRARY_SELECTED):
        return (
            "bitsandbytes saw no usable CUDA either",
            (
                "The log also shows bitsandbytes loading its CPU library: bitsandbytes saw no usable CUDA either, so "
                "torch "
                "or the driver is the problem rather than the quantizer."
            ),
            (
                "Make torch.cuda.is_available() return True (a CUDA build of torch, a visible driver), then reinstall "
                "bitsandbytes if it still loads its CPU library."
            ),
            [TORCH_CHECK, "nvidia-smi", "python -m bitsandbytes"],
        )
    return None


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes quantizer refusing to load because it found no GPU",
    needs=("log",),
    covers=("quantizer_no_gpu_found",),
    references=(
        "https://github.com/huggingface/diffusers/issues/13361",
        "https://github.com/huggingface/diffusers/pull/13915",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1627",
        "https://github.com/hiyouga/LlamaFactory/issues/4369",
    ),
    confirm=(TORCH_CHECK, "nvidia-smi"),
)
def quantizer_no_gpu(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when transformers' (or diffusers') bitsandbytes quantizer refuses to load a model because torch
    offers no accelerator it can quantize on. Its `validate_environment` says so in one of these wordings, by release:

    - `RuntimeError: No GPU found. A GPU is needed for quantization.` (transformers before {{ transformers.NO_GPU_FOUND.below_text }});
    - ``RuntimeError: None of the available devices `available_devices = None` are supported by the bitsandbytes
      version you have installed: `bnb_supported_devices = {...}` `` (the multi-backend check, transformers 4.4x-5.x);
    - `RuntimeError: CUDA is required but not available for bitsandbytes. ...`;
    - `ImportError: The installed version of bitsandbytes (<{{ transformers.IMPORTERROR_FOR_OLD_BNB.bnb_below }}) requires CUDA, but CUDA is not available.`

    The finding says which cause the rest of the log points to: a CPU-only torch (`+cpu`, `torch.version.cuda` is
    None), no NVIDIA driver visible (a container started without the GPU), CUDA failing to initialise (driver too old
    or mismatched), Apple Silicon (MPS), or bitsandbytes falling back to its CPU library. When the log shows none of
    these, it says so and what to run.

    ## Why it matters

    The message names the symptom (torch sees no supported accelerator), not its cause; users often reinstall
    bitsandbytes or transformers, which changes nothing while torch itself cannot see the GPU.

    ## How to fix

    Find out why torch sees no accelerator:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    nvidia-smi
    ```

    Install a CUDA build of torch, start the container with `--gpus all` or the NVIDIA runtime, or fix the driver. On
    Apple Silicon use a bitsandbytes and transformers that accept MPS, or another quantization method.
    """
    matches = log.matches(facts, S.QUANTIZER_NO_GPU)
    if not matches:
        return None
    devices = None
    for match in matches:
        found = re.search(r"available_devices = (None|set\(\)|\{[^}]*\})", match.text)
        if found:
            devices = found.group(1)
    cause = _no_gpu_cause(facts, devices)
    seen = f" (available_devices = {devices})" if devices else ""
    what = (
        "transformers' bitsandbytes quantizer checks, before loading any weight, that torch offers an accelerator the "
        f"installed bitsandbytes supports; it found none{seen}. The message names the symptom, not the cause: a "
        "CPU-only torch, a container without GPU access, a driver or CUDA initialisation failure, or an unsupported "
        "platform. "
    )
    if cause is None:
        return Hit(
            title="transformers found no GPU to quantize on; the log does not show why torch sees none",
            explanation=what + "The rest of the log shows none of these; check torch and the driver on the machine.",
            evidence=log.line_evidence(facts, S.QUANTIZER_NO_GPU, limit=2),
            remediation=Remediation(
                "Check what torch sees: a CUDA build of torch, torch.cuda.is_available() True, nvidia-smi listing the "
                "GPU in the same environment (container, WSL, venv) that runs the script.",
                [TORCH_CHECK, "nvidia-smi"],
            ),
        )
    short, why, fix, commands = cause
    return Hit(
        title=f"transformers found no GPU to quantize on: {short}",
        explanation=what + why,
        evidence=log.line_evidence(facts, S.QUANTIZER_NO_GPU, limit=2),
        remediation=Remediation(fix, commands),
    )
