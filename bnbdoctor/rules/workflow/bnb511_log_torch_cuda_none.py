"""BNB511 log-torch-cuda-none: passes when the log shows no sign of a CPU-only (or ROCm) torch under a CUDA bitsandbytes."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.common import TORCH_GET_STARTED, torch_of

#: torch's own verdict, raised by ``torch.cuda``'s lazy init: the program asked for CUDA and this torch is a CPU
#: build (a ROCm torch never says it; its torch.cuda works).
_TORCH_SAYS_CPU_BUILD = "Torch not compiled with CUDA enabled"


def _torch_index(facts: Facts) -> str | None:
    return torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None


@rule(
    Severity.ERROR,
    "The log shows no sign of a CPU-only (or ROCm) torch under a CUDA bitsandbytes",
    needs=("log",),
    covers=("torch_version_cuda_none", "torch_cpu_flavor_on_gpu_host"),
    references=(TORCH_GET_STARTED, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1202"),
    stands_in_for=("BNB202",),
    confirm=(TORCH_CHECK,),
)
def torch_cuda_none(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the signs of a torch without CUDA under a CUDA bitsandbytes: `Could not load bitsandbytes native
    library: 'NoneType' object has no attribute 'split'` (from `cuda_specs.py`), a `libbitsandbytes_cudaNone` file name,
    and torch's `Torch not compiled with CUDA enabled`. It is the log twin of [BNB202](BNB202.md), which fires instead
    when the log also names the GPU. torch's `Torch not compiled with CUDA enabled` is torch's own verdict: the program
    asked `torch.cuda` for a GPU and the installed torch is a CPU build (a ROCm torch never says it). That is a CPU
    torch where CUDA is wanted, the usual work of an installer or resolver that put PyPI's CPU wheel in place of the
    CUDA build, and the finding says so.

    ## Why it matters

    bitsandbytes builds its library name from `torch.version.cuda`, which is `None` for CPU-only and ROCm builds of
    PyTorch. No CUDA operation of bitsandbytes can work with that torch.

    ## How to fix

    - Check torch: `python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"`.
    - NVIDIA GPU: install a CUDA build of PyTorch (the selector on pytorch.org gives the `--index-url`).
    - AMD GPU: a ROCm torch with a bitsandbytes release that supports ROCm.
    """
    if not log.seen(facts, S.TORCH_CUDA_NONE):
        return None
    torch = torch_of(facts)
    version = torch.version if torch and torch.installed and torch.version else None
    cuda_wanted = any(_TORCH_SAYS_CPU_BUILD in m.text for m in log.matches(facts, S.TORCH_CUDA_NONE))
    return Hit(
        title=(
            "torch is a CPU-only build, and the program asked it for CUDA"
            if cuda_wanted
            else "torch is not a CUDA build (torch.version.cuda is None)"
        )
        + (f": torch {version}" if version else ""),
        covers=["torch_cpu_flavor_on_gpu_host", "torch_version_cuda_none"]
        if cuda_wanted
        else ["torch_version_cuda_none"],
        explanation="bitsandbytes derives its library name from torch.version.cuda, which is None for CPU-only and "
        "ROCm builds of PyTorch ('NoneType' object has no attribute 'split', libbitsandbytes_cudaNone, 'Torch not "
        "compiled with CUDA enabled'). No CUDA operation of bitsandbytes can work with this torch.",
        evidence=log.line_evidence(facts, S.TORCH_CUDA_NONE),
        remediation=Remediation(
            "Install a CUDA build of PyTorch for an NVIDIA GPU (pytorch.org's selector gives the --index-url), or, on "
            "an AMD GPU, a ROCm torch with a bitsandbytes release that supports ROCm."
            + (
                " A CPU torch where CUDA is wanted is usually an installer's or resolver's doing: PyPI's CPU wheel "
                "replaced the CUDA build, so pin torch (or install the rest with --no-deps) to keep it from coming "
                "back."
                if cuda_wanted
                else ""
            ),
            [TORCH_CHECK]
            + (
                [f"pip install --force-reinstall torch --index-url {_torch_index(facts)}"]
                if _torch_index(facts)
                else []
            ),
        ),
    )
