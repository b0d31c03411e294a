"""Rules about the NVIDIA driver: is there one, and is it new enough for torch's CUDA."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.gpus import KEPLER_LAST_DRIVER_BRANCH, MAXWELL_MIN
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, ev, torch_of

_DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"


@rule(
    "BNB101",
    "no-usable-nvidia-gpu",
    Severity.ERROR,
    "An NVIDIA driver answers and at least one GPU is visible to CUDA",
    needs=("gpu", "platform"),
    covers=("no_gpu_detected_cpu_fallback", "cuda_driver_insufficient_for_runtime"),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/486"),
)
def no_usable_gpu(facts: Facts) -> Hit | Skip | None:
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
        )
    if gpu.nvml_available:
        title, why = "The NVIDIA driver reports no GPUs", "NVML answered but lists no GPU."
        fix = Remediation("Check that the GPU is attached (containers need `--gpus all` and the NVIDIA "
                          "container toolkit).", ["nvidia-smi"])
    elif gpu.nvml_error_kind == "driver_not_loaded":
        title, why = "The NVIDIA driver is installed but not loaded", f"NVML: {gpu.nvml_error}."
        fix = Remediation("Load the kernel module (reboot after a driver update) or, in a container, start it "
                          "with the NVIDIA runtime (`docker run --gpus all ...`).", ["nvidia-smi"])
    elif gpu.nvml_error_kind == "timeout":
        title, why = "The NVIDIA driver did not answer", f"NVML: {gpu.nvml_error}."
        fix = Remediation("A hung driver needs attention before bitsandbytes can work: check `nvidia-smi` "
                          "and the kernel log.", ["nvidia-smi", "dmesg | grep -i nvrm"])
    else:
        title = "No NVIDIA driver found" if expected else "No NVIDIA GPU on this machine: bitsandbytes will use its CPU backend"
        why = f"NVML could not be loaded ({gpu.nvml_error or 'no driver library'})."
        if platform.wsl == 2:
            fix = Remediation("Under WSL2 the driver comes from Windows: install the current NVIDIA Windows "
                              "driver and make sure /usr/lib/wsl/lib is on the loader path. Do not install a "
                              "Linux driver inside WSL.", ["ls /usr/lib/wsl/lib", "nvidia-smi"])
        elif expected:
            fix = Remediation("Install the NVIDIA driver for your GPU (then `nvidia-smi` must list it), or, "
                              "on a machine without an NVIDIA GPU, install a CPU build of torch.",
                              ["nvidia-smi"])
        else:
            fix = Remediation("Nothing to fix if this machine has no NVIDIA GPU. On a GPU machine, install the "
                              "NVIDIA driver and a CUDA build of torch.", ["nvidia-smi"])
    return Hit(title=title, explanation=f"{why} {consequence}", evidence=evidence, remediation=fix,
               severity=severity, references=[_DRIVER_DOWNLOAD])


@rule(
    "BNB102",
    "driver-older-than-torch-cuda",
    Severity.ERROR,
    "The driver supports the CUDA version torch was built with",
    needs=("gpu", "python"),
    covers=("nvidia_driver_too_old_for_torch_cuda", "driver_cuda_combination_unsupported_803"),
    references=("https://docs.nvidia.com/deploy/cuda-compatibility/",),
)
def driver_too_old(facts: Facts) -> Hit | Skip | None:
    gpu, torch = facts.gpu, torch_of(facts)
    assert gpu is not None
    if not (torch and torch.cuda):
        return Skip("torch is not a CUDA build")
    driver, runtime = major_minor(gpu.driver_cuda_version), major_minor(torch.cuda)
    if driver is None or runtime is None:
        return Skip("the driver's CUDA version is unknown")
    if driver >= runtime:
        return None
    evidence = [
        ev("driver", f"{gpu.driver_version} (supports CUDA up to {gpu.driver_cuda_version})", "gpu.driver_cuda_version"),
        ev("torch", f"{torch.version} built with CUDA {torch.cuda}", "python.torch.cuda"),
    ]
    index = torch_index_for(driver)
    kepler = any(d.cc and d.cc < MAXWELL_MIN.cc for d in gpu.visible)
    commands = ["nvidia-smi"]
    if index and torch.version:
        base = torch.version.split("+")[0]
        commands.append(f'pip install --force-reinstall "torch=={base}" --index-url {index}')
    if driver[0] < runtime[0]:
        return Hit(
            title=f"Driver supports CUDA {gpu.driver_cuda_version}, torch needs CUDA {torch.cuda}",
            explanation="A CUDA runtime of a newer major version than the driver supports cannot start: "
            "torch.cuda.is_available() is False (\"The NVIDIA driver on your system is too old\"), so "
            "bitsandbytes has no GPU and falls back to, or fails in, its CPU library.",
            evidence=evidence,
            remediation=Remediation(
                f"Update the NVIDIA driver to one that supports CUDA {torch.cuda} or newer, or install a torch "
                f"build for CUDA {driver[0]}.x" + (f" ({index})" if index else "") + ", then a matching bitsandbytes. "
                "Check that the torch version exists on that index (pytorch.org/get-started/previous-versions).",
                commands,
            ),
            references=["https://pytorch.org/get-started/previous-versions/"],
        )
    return Hit(
        title=f"Driver supports CUDA {gpu.driver_cuda_version}, older than torch's CUDA {torch.cuda}",
        explanation="Within one CUDA major version the runtime works on an older driver (minor version "
        "compatibility), but PTX built by the newer toolkit cannot be JIT-compiled and some features are "
        "missing; kernels that need JIT fail with errors such as 'the provided PTX was compiled with an "
        "unsupported toolchain' or 'unsupported display driver / cuda driver combination'.",
        evidence=evidence,
        remediation=Remediation(
            (f"Kepler GPUs cannot take a newer driver ({KEPLER_LAST_DRIVER_BRANCH} is their last branch): use a torch "
             f"build for CUDA "
             f"{gpu.driver_cuda_version} or older." if kepler else
             f"Update the NVIDIA driver to one that supports CUDA {torch.cuda}, or use a torch build for CUDA "
             f"{gpu.driver_cuda_version} or older."),
            commands,
        ),
        severity=Severity.WARNING,
        references=["https://pytorch.org/get-started/previous-versions/"],
    )
