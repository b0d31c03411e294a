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


def _torch_index(facts: Facts) -> str | None:
    return torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None


@rule(
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
    if not log.seen(facts, S.TORCH_CUDA_NONE):
        return None
    torch = torch_of(facts)
    version = torch.version if torch and torch.installed and torch.version else None
    return Hit(
        title="torch is not a CUDA build (torch.version.cuda is None)" + (f": torch {version}" if version else ""),
        explanation="bitsandbytes derives its library name from torch.version.cuda, which is None for CPU-only and "
        "ROCm builds of PyTorch ('NoneType' object has no attribute 'split', libbitsandbytes_cudaNone, 'Torch not "
        "compiled with CUDA enabled'). No CUDA operation of bitsandbytes can work with this torch.",
        evidence=log.line_evidence(facts, S.TORCH_CUDA_NONE),
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
