"""BNB102 driver-older-than-torch-cuda: passes when the driver supports the CUDA version torch was built with."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.drivers import driver_for, last_branch
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev, torch_of


@rule(
    Severity.ERROR,
    "The driver supports the CUDA version torch was built with",
    needs=("gpu", "python"),
    covers=("nvidia_driver_too_old_for_torch_cuda", "driver_cuda_combination_unsupported_803"),
    references=("https://docs.nvidia.com/deploy/cuda-compatibility/",),
)
def driver_too_old(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `gpu` and `python` facts. It is skipped when torch is not a CUDA build, or when the highest CUDA
    version the driver supports (NVML's value, shown as "CUDA Version" by `nvidia-smi`) or `torch.version.cuda` cannot
    be read.

    It compares the two as major.minor versions. It passes when the driver's version is at least torch's. Otherwise:

    - driver major < torch major (e.g. driver 11.4, torch cu121): an **error**;
    - same major, older minor (e.g. driver 12.2, torch cu124): a **warning**, because CUDA's minor version compatibility
      lets the runtime start, with limits.

    When it can, the finding suggests the same torch version from the newest PyTorch CUDA wheel index the driver can
    run.

    ## Why it matters

    - **Major version behind.** The CUDA runtime in torch cannot start on the driver. torch prints `The NVIDIA driver on
      your system is too old (found version 11000)` (11000 means CUDA 11.0) and `torch.cuda.is_available()` is False.
      bitsandbytes then has no GPU: it loads its CPU library or, on the legacy loader, stops with `CUDA Setup failed
      despite GPU being available`.
    - **Minor version behind.** NVIDIA supports running an application built with a newer toolkit from the same major
      family on an older driver (CUDA 12.x needs driver >= 525, 11.x needs >= 450), but with a limited feature set. PTX
      produced by the newer toolkit cannot be JIT-compiled by the older driver and fails with `the provided PTX was
      compiled with an unsupported toolchain`.
    - **A driver whose parts disagree** (user-space library newer or older than the loaded kernel module, typically
      after a driver upgrade without a reboot, or a `cuda-compat` library on the path) gives CUDA error 803: `CUDA
      exception! Error code: system has unsupported display driver / cuda driver combination`, then `RuntimeError:
      Unexpected error from cudaGetDeviceCount() ... Error 803`. The legacy loader then falls back to the CPU library.
      This rule catches it only when the version that NVML reports is also older than torch's CUDA.

    ## How to fix

    Compare the driver's "CUDA Version" with torch's:

    ```bash
    nvidia-smi
    python -c "import torch; print(torch.__version__, torch.version.cuda)"
    ```

    Either update the NVIDIA driver to one that supports torch's CUDA version, or install torch built for a CUDA version
    the driver supports, then a bitsandbytes release that has a library for it:

    ```bash
    pip install --force-reinstall "torch==2.5.1" --index-url https://download.pytorch.org/whl/cu118
    ```

    Pick the torch version and index from PyTorch's "previous versions" page, because not every torch release exists for
    every CUDA index. For error 803: reboot after a driver upgrade, remove `cuda-compat` directories from
    `LD_LIBRARY_PATH`, and in containers use the host's driver (do not install one in the image).

    ## Severity note

    a **warning** when only the minor version is behind

    ## Further reading

    - https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
    - https://pytorch.org/get-started/previous-versions
    """
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
        ev(
            "driver", f"{gpu.driver_version} (supports CUDA up to {gpu.driver_cuda_version})", "gpu.driver_cuda_version"
        ),
        ev("torch", f"{torch.version} built with CUDA {torch.cuda}", "python.torch.cuda"),
    ]
    index = torch_index_for(driver)
    commands = ["nvidia-smi"]
    if index and torch.version:
        base = torch.version.split("+")[0]
        commands.append(f'pip install --force-reinstall "torch=={base}" --index-url {index}')
    windows = bool(facts.platform and facts.platform.os == "windows")
    limits = [(d, branch) for d in gpu.visible if d.cc and (branch := last_branch(d.cc)) and branch.cuda < runtime]
    if limits:
        device, branch = limits[0]
        update = (
            f"No driver runs CUDA {torch.cuda} on GPU {device.index} ({device.name}): {branch.family} GPUs' last driver "
            f"branch, {branch.branch}, stops at CUDA {branch.cuda[0]}.{branch.cuda[1]}. Use a torch build for CUDA "
            f"{gpu.driver_cuda_version} or older"
        )
    else:
        needed = driver_for(torch.cuda, windows)
        update = f"Update the NVIDIA driver to one that supports CUDA {torch.cuda}" + (
            f" ({needed} or newer)" if needed else ""
        )
    if driver[0] < runtime[0]:
        return Hit(
            title=f"Driver supports CUDA {gpu.driver_cuda_version}, torch needs CUDA {torch.cuda}",
            explanation="A CUDA runtime of a newer major version than the driver supports cannot start: "
            'torch.cuda.is_available() is False ("The NVIDIA driver on your system is too old"), so '
            "bitsandbytes has no GPU and falls back to, or fails in, its CPU library.",
            evidence=evidence,
            remediation=Remediation(
                (f"{update}." if limits else f"{update}, or install a torch build for CUDA {driver[0]}.x")
                + (f" ({index})" if index else "")
                + ", then a matching bitsandbytes. "
                "Check that the torch version exists on that index (pytorch.org/get-started/previous-versions).",
                commands,
            ),
            references=["https://pytorch.org/get-started/previous-versions/"],
            covers=["nvidia_driver_too_old_for_torch_cuda"],
        )
    return Hit(
        title=f"Driver supports CUDA {gpu.driver_cuda_version}, older than torch's CUDA {torch.cuda}",
        explanation="Within one CUDA major version the runtime works on an older driver (minor version "
        "compatibility), but PTX built by the newer toolkit cannot be JIT-compiled and some features are "
        "missing; kernels that need JIT fail with errors such as 'the provided PTX was compiled with an "
        "unsupported toolchain' or 'unsupported display driver / cuda driver combination'.",
        evidence=evidence,
        remediation=Remediation(
            f"{update}." if limits else f"{update}, or use a torch build for CUDA {gpu.driver_cuda_version} or older.",
            commands,
        ),
        severity=Severity.WARNING,
        references=["https://pytorch.org/get-started/previous-versions/"],
        covers=["driver_cuda_combination_unsupported_803"],
    )
