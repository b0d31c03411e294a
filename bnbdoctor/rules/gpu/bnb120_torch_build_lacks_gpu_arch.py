"""BNB120 torch-build-lacks-gpu-arch: passes when the installed torch has kernels for every visible GPU."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.torch_wheels import TorchBuild, arch_runs_on, builds_for, recorded_list
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import TORCH_GET_STARTED, ev, torch_of, versioned, visible_gpus
from bnbdoctor.rules.gpu._shared import _group, _group_label


def _torch_arch_text(sass: list[int] | tuple[int, ...], ptx: list[int] | tuple[int, ...]) -> str:
    """``sm_70 sm_75 ... compute_120``: how torch.cuda.get_arch_list() prints a list."""
    return " ".join([f"sm_{a}" for a in sass] + [f"compute_{a}" for a in ptx]) or "none"


def _torch_fix(candidates: list[TorchBuild], installed: tuple[int, ...] | None, facts: Facts) -> TorchBuild | None:
    """The build to suggest: one the driver can run (the same CUDA major: CUDA's minor-version compatibility), the
    installed release line if it has one, else the newest release; within a release the newest CUDA the driver's
    major allows (the oldest when the driver is unknown)."""
    driver = major_minor(facts.gpu.driver_cuda_version) if facts.gpu else None
    pool = [b for b in candidates if driver is None or (major_minor(b.cuda) or (0, 0))[0] <= driver[0]] or candidates
    pool = [b for b in pool if installed and b.minor == installed[:2]] or pool
    if not pool:
        return None
    newest = max(b.minor for b in pool)
    pool = [b for b in pool if b.minor == newest]
    key = lambda b: major_minor(b.cuda) or (0, 0)  # noqa: E731
    return max(pool, key=key) if driver else min(pool, key=key)


@rule(
    Severity.ERROR,
    "The installed torch has kernels for every visible GPU",
    needs=("gpu", "python"),
    covers=("torch_build_lacks_gpu_arch",),
    references=(
        TORCH_GET_STARTED,
        "https://github.com/pytorch/pytorch/issues/150733",
        "https://github.com/pytorch/pytorch/issues/157517",
        "https://github.com/pytorch/pytorch/issues/172352",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1715",
    ),
    confirm=('python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"',),
    log_gate=LogGate(
        "the log shows neither torch's incompatible-GPU warning nor 'no kernel image is available'",
        signatures=(S.TORCH_GPU_INCOMPATIBLE, S.NO_KERNEL_IMAGE),
    ),
    refutes=("torch-runs-on-gpus",),
)
def torch_lacks_arch(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu` and `python` facts and is skipped when no visible NVIDIA GPU has a known compute capability
    or torch is not a CUDA build. It takes the GPU architectures the installed torch was compiled for from, in order:

    1. the `torch_arch` facts: the fatbin headers of `torch/lib/libtorch_cuda.so`, read without importing torch (only
       the ELF section headers and the 64-byte header of each fatbin entry, never the ~1 GB of device code); from a log,
       the list torch prints in its own warning;
    2. bnbdoctor's table of PyTorch's Linux x86-64 wheels (`bnbdoctor/knowledge/torch_wheels.py`), when the library
       cannot be read (Windows, a file that is not there). A torch release the table does not record is judged by the
       newest earlier recorded row of its CUDA flavor, and that finding is a warning.

    It reports one error for each visible GPU (identical GPUs together) that no entry of the list can run: SASS for the
    same major architecture with a minor version not above the GPU's, or PTX for an architecture at or below it.

    ## Why it matters

    Every CUDA op of torch then fails with `CUDA error: no kernel image is available for execution on the device`, and
    `import torch` warns `NVIDIA GeForce GTX 1080 with CUDA capability sm_61 is not compatible with the current PyTorch
    installation. The current PyTorch install supports CUDA capabilities sm_75 sm_80 ...`. bitsandbytes is only the
    first library to hit it: its own kernels are beside the point, so bnbdoctor lists bitsandbytes' architecture
    findings ([BNB103](BNB103.md), [BNB105](BNB105.md)) under this one.

    PyTorch's arch lists change with the CUDA flavor of the wheel:

    - cu118 to cu126: sm_50 to sm_90 (cu118 adds sm_37); no Blackwell (sm_100, sm_120) and no PTX to JIT from;
    - cu128 and cu129 drop Maxwell and Pascal ({{ torch_wheels.CU128_WITHOUT_VOLTA.first_text }}'s cu128 also drops Volta, restored in {{ torch_wheels.CU128_WITHOUT_VOLTA.below_text }} by pytorch#157517), and add
      sm_100 and sm_120;
    - cu130 starts at Turing (sm_75): CUDA 13 cannot build for Volta.

    ## How to fix

    Install a torch wheel whose list includes the GPU. The finding names a published (torch, CUDA) pair that the driver
    can run: cu126 for Maxwell, Pascal and Volta; cu128 or newer for Blackwell (RTX 50xx, sm_120). For a GTX 1080 with
    torch 2.8.0+cu128:

    ```bash
    pip install --force-reinstall "torch==2.8.0" --index-url https://download.pytorch.org/whl/cu126
    python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"
    ```

    Then run `bnbdoctor` again: bitsandbytes picks its library by torch's CUDA version, so its own findings may change.
    A GPU no published wheel covers needs torch built from source with `TORCH_CUDA_ARCH_LIST` set for it.

    ## Further reading

    - https://github.com/pytorch/pytorch/blob/main/RELEASE.md (PyTorch CUDA support matrix)
    - https://dev-discuss.pytorch.org/t/cuda-toolkit-version-and-architecture-support-update-maxwell-and-pascal-architecture-support-removed-in-cuda-12-8-and-12-9-builds/3128
    - https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility
    """
    gpus = [d for d in visible_gpus(facts) if d.cc]
    if not gpus:
        return Skip("no visible NVIDIA GPU with a known compute capability")
    torch = torch_of(facts)
    if torch is None or not torch.installed or torch.build != "cuda":
        return Skip("torch is not a CUDA build")
    arch = facts.torch_arch
    exact = True
    table_source: str | None = None
    if arch is not None and (arch.sass or arch.ptx):
        sass, ptx = tuple(arch.sass), tuple(arch.ptx)
        if arch.source == "log":
            origin = "as torch's own warning in the log lists them"
            origin_fact = "torch_arch.sass"
        else:
            shared = f"{arch.sharing} of {arch.containers}" if arch.sharing != arch.containers else str(arch.containers)
            origin = f"read from the fatbin headers of {arch.library}: {shared} fatbin containers"
            origin_fact = "torch_arch.sass"
    else:
        windows = facts.platform is not None and facts.platform.os == "windows"
        recorded = None if windows else recorded_list(torch.version, torch.cuda)
        why = arch.error if arch is not None and arch.error else None
        if recorded is None:
            unread = why or "torch's library was not read"
            return Skip(
                f"{unread}, and {versioned(facts, 'torch', torch.version)} (CUDA {torch.cuda}) is not in bnbdoctor's "
                "table of PyTorch's Linux wheels"
            )
        build, exact = recorded.build, recorded.exact
        sass, ptx = build.sass, build.ptx
        origin = (
            f"bnbdoctor's table of PyTorch's Linux wheels, torch {build.release} {build.flavor}"
            if exact
            else f"assumed from the newest earlier recorded {build.flavor} build, torch {build.release}"
        ) + (f"; the library itself was not read: {why}" if why else "")
        origin_fact = None
        table_source = build.source
    installed = release_tuple(torch.version)
    hits = []
    for group in _group(gpus):
        device = group[0]
        cc = device.cc
        assert cc is not None
        if arch_runs_on(sass, ptx, cc):
            continue
        listed = _torch_arch_text(sass, ptx)
        fix = _torch_fix(builds_for(cc), installed, facts)
        if fix is not None:
            remediation = Remediation(
                f"Install torch {fix.release} for CUDA {fix.cuda} ({fix.flavor}), whose wheels include "
                f"{_torch_arch_text(fix.sass, fix.ptx)}; then run bnbdoctor again (bitsandbytes follows torch's CUDA).",
                [fix.install_command(), 'python -c "import torch; print(torch.cuda.get_arch_list())"'],
            )
        else:
            remediation = Remediation(
                f"No published PyTorch wheel bnbdoctor knows of has kernels for sm_{cc[0]}{cc[1]}: build torch from "
                f"source with TORCH_CUDA_ARCH_LIST={cc[0]}.{cc[1]}, or use a newer GPU.",
                [],
            )
        hits.append(
            Hit(
                title=f"{versioned(facts, 'torch', torch.version)} has no kernels for {_group_label(group)}",
                explanation=f"This torch was compiled for {listed} ({origin}). None of these runs on "
                f"sm_{cc[0]}{cc[1]}: SASS runs only on the same major architecture with an equal or higher minor (on a "
                "Jetson only its own), PTX only on GPUs at or above its architecture. Every CUDA op of torch fails with 'no kernel image is "
                "available for execution on the device', before bitsandbytes' own kernels matter."
                + ("" if exact else " The list is assumed: bnbdoctor's table does not record this torch release."),
                evidence=[
                    ev("GPU", _group_label(group), f"gpu.devices[{device.index}]"),
                    ev("torch", f"{torch.version} (CUDA {torch.cuda})", "python.torch.version"),
                    ev("torch kernels", listed, origin_fact),
                    *([ev("recorded from", table_source)] if table_source else []),
                ],
                remediation=remediation,
                severity=None if exact else Severity.WARNING,
                covers=["torch_build_lacks_gpu_arch"],
            )
        )
    return hits
