"""BNB551 log-torch-gpu-incompatible: passes when the log shows no torch warning that a GPU is not compatible with it."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.torch_wheels import builds_for
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_GET_STARTED

#: The GPU and its compute capability in torch's two wordings of the warning.
_GPU = re.compile(
    r"(?P<name>\S.{0,120}?) with CUDA capability sm_(?P<sm>\d{2,3}) is not compatible"
    r"|Found GPU\d{1,2} (?P<found>.{1,120}?) which is of compute capability \(CC\) (?P<major>\d{1,2})\.(?P<minor>\d)"
)
ARCH_CHECK = 'python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"'


def _gpu(facts: Facts) -> tuple[str, tuple[int, int]] | None:
    """The GPU torch's warning names, with its compute capability."""
    for match in log.matches(facts, S.TORCH_GPU_INCOMPATIBLE):
        found = _GPU.search(match.text)
        if found is None:
            continue
        if found.group("sm"):
            sm = int(found.group("sm"))
            return found.group("name").removeprefix("UserWarning: ").strip(), (sm // 10, sm % 10)
        return found.group("found").strip(), (int(found.group("major")), int(found.group("minor")))
    return None


@rule(
    Severity.ERROR,
    "The log shows no torch warning that a GPU is not compatible with the installed torch",
    needs=("log",),
    covers=("torch_build_lacks_gpu_arch",),
    references=(TORCH_GET_STARTED, "https://github.com/pytorch/pytorch/issues/150733"),
    stands_in_for=("BNB120",),
    confirm=(ARCH_CHECK,),
    refutes=("torch-runs-on-gpus",),
)
def torch_gpu_incompatible(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reports torch's own warning that it cannot run on a GPU: `NVIDIA GeForce RTX 5090 with CUDA capability
    sm_120 is not compatible with the current PyTorch installation.` (older releases, followed by the architectures it
    was built for) or `Found GPU0 ... which is of compute capability (CC) 6.1.` (newer ones). It is the log twin of
    [BNB120](BNB120.md): when the log also shows the torch build and the GPU, BNB120 judges it from torch's own list and
    this finding folds into it. When the facts are not enough for BNB120, or its reading of the listed architectures
    would say the GPU runs (PTX for an older architecture, which torch does not count), torch's statement stands, and
    the findings that assume torch runs on the GPU (bitsandbytes' "no kernel image" errors) are listed under it.

    ## Why it matters

    When torch says it has no kernels for the GPU, every CUDA operation of torch fails with `no kernel image is
    available for execution on the device`; bitsandbytes is only the first library to call one. No bitsandbytes
    release or setting changes that: the torch build has to.

    ## How to fix

    Install a torch build whose wheels include the GPU's architecture: the finding names the oldest CUDA flavor of
    the newest torch release that does (cu126 for Maxwell, Pascal and Volta; cu128 or newer for Blackwell, sm_120), and
    check it:

    ```bash
    pip install --force-reinstall "torch==2.8.0" --index-url https://download.pytorch.org/whl/cu128
    python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"
    ```
    """
    if not log.seen(facts, S.TORCH_GPU_INCOMPATIBLE):
        return None
    named = _gpu(facts)
    fix = None
    what = "this GPU"
    if named is not None:
        name, cc = named
        what = f"{name} (sm_{cc[0]}{cc[1]})"
        builds = builds_for(cc)
        newest = [b for b in builds if b.minor == builds[0].minor] if builds else []
        fix = newest[-1] if newest else None  # the oldest CUDA of the newest release: the oldest driver runs it
    if fix is not None and named is not None:
        remediation = Remediation(
            f"Install torch {fix.release} for CUDA {fix.cuda} ({fix.flavor}), whose wheels include "
            f"sm_{named[1][0]}{named[1][1]}; then run bnbdoctor again (bitsandbytes follows torch's CUDA).",
            [fix.install_command(), ARCH_CHECK],
        )
    else:
        remediation = Remediation(
            "Install a torch build whose wheels include this GPU's architecture (see the PyTorch install page), or "
            "build torch from source with TORCH_CUDA_ARCH_LIST set for it; then run bnbdoctor again.",
            [ARCH_CHECK],
        )
    return Hit(
        title=f"torch says it has no kernels for {what}: install a torch build that has them",
        explanation="torch's own warning: the installed torch was not compiled for this GPU's architecture. Every CUDA "
        "operation of torch then fails with 'no kernel image is available for execution on the device', before "
        "bitsandbytes' own kernels matter. On the machine, BNB120 reads the architectures torch was built for from "
        "its library.",
        evidence=log.line_evidence(facts, S.TORCH_GPU_INCOMPATIBLE, limit=3),
        remediation=remediation,
    )
