"""BNB201 torch-missing: passes when PyTorch is installed in the examined interpreter."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import TORCH_GET_STARTED, torch_of
from bnbdoctor.rules.packages._shared import _not_installed


@rule(
    Severity.ERROR,
    "PyTorch is installed in the examined interpreter",
    needs=("python",),
    requires=("users-env-examined",),
    covers=(),
    references=(TORCH_GET_STARTED,),
    log_gate=LogGate(
        "a log shows torch missing only with \"No module named 'torch'\"", signatures=(S.TORCH_NOT_INSTALLED,)
    ),
)
def torch_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts: the interpreter bnbdoctor examines, chosen by `--python`, an active virtual
    environment or conda environment, or `PATH`. It fires when PyTorch is not installed in that interpreter. bnbdoctor
    finds this out by reading installed metadata; it never imports torch.

    The suggested command takes the highest CUDA version the NVIDIA driver supports and picks the newest PyTorch wheel
    index at or below it (preferring the same CUDA major). If there is no usable driver, it suggests a plain `pip
    install torch`.

    ## Why it matters

    bitsandbytes is a PyTorch extension. It imports torch when it is imported, and it asks torch for the CUDA version it
    should load a library for. Without torch, `import bitsandbytes` stops at that first import, and so does any
    transformers or PEFT code that loads a model in 8 or 4 bits.

    A missing torch is often a sign that bnbdoctor is looking at a different interpreter from the one the failing
    program uses, for example a system Python instead of the project's virtual environment.

    ## How to fix

    First make sure bnbdoctor examines the interpreter you actually run:

    ```bash
    python -c "import sys; print(sys.executable)"
    bnbdoctor --python /path/to/that/python
    ```

    If torch really is missing there, install a CUDA build that your driver can run (PyTorch's install selector gives
    the exact command), then bitsandbytes:

    ```bash
    pip install torch --index-url https://download.pytorch.org/whl/cu124
    pip install -U bitsandbytes
    ```

    Current bitsandbytes releases need a recent torch ({{ releases.CURRENT_TORCH_MINIMUM.series }} requires PyTorch {{ releases.CURRENT_TORCH_MINIMUM.torch }} or newer); see [BNB206](BNB206.md).

    ## Further reading

    - https://pytorch.org/get-started/previous-versions
    - https://huggingface.co/docs/bitsandbytes/v0.50.0/installation (system requirements)
    """
    torch = torch_of(facts)
    if torch is None or torch.installed:
        return None
    gpu_index = torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None
    command = f"pip install torch --index-url {gpu_index}" if gpu_index else "pip install torch"
    return _not_installed(
        facts,
        "PyTorch",
        "bitsandbytes is a PyTorch extension: it cannot be imported without torch. If torch is "
        "installed elsewhere, bnbdoctor examined the wrong interpreter (choose it with --python).",
        Remediation(
            "Install PyTorch for your platform (see pytorch.org), or point bnbdoctor at the "
            "interpreter you use: `bnbdoctor --python /path/to/python`.",
            [command],
        ),
    )
