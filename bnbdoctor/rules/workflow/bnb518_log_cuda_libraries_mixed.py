"""BNB518 log-cuda-libraries-mixed: passes when the log shows no CUDA libraries of two CUDA installs mixed in one process."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

TORCH_CUDA_LIBS_CHECK = (
    'ldd $(python -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), '
    "'lib', 'libtorch_cuda.so'))\") | grep -i -E 'nvjitlink|cusparse|cudart'"
)

#: The three signs, each with its own fix: a finding for each the log shows.
FINDINGS = (
    log.LogFinding(
        (S.NVJITLINK_UNDEFINED_SYMBOL,),
        title="libcusparse found an older libnvJitLink from another CUDA install (undefined symbol __nvJitLink…)",
        explanation="torch's pip-installed libcusparse.so.12 needs the libnvJitLink.so.12 shipped next to it, but "
        "the loader found an older copy first, usually from a system CUDA folder on LD_LIBRARY_PATH. This is "
        "not a bitsandbytes bug, but it stops every import of torch and therefore of bitsandbytes.",
        fix="Remove the system CUDA lib folder from LD_LIBRARY_PATH when using pip's torch (or put "
        "site-packages/nvidia/nvjitlink/lib first), and keep nvidia-nvjitlink-cu12 at least as new as "
        "nvidia-cusparse-cu12.",
        commands=("echo $LD_LIBRARY_PATH", "pip install -U nvidia-nvjitlink-cu12"),
        covers=("nvjitlink_cusparse_symbol_mismatch",),
    ),
    log.LogFinding(
        (S.FATBINWRAP_UNDEFINED_SYMBOL,),
        title="bitsandbytes' library and the CUDA runtime come from different CUDA versions (__fatbinwrap)",
        explanation="An undefined __fatbinwrap_ symbol means the C++ library and the CUDA part were built or "
        "loaded with different CUDA versions, typically with several CUDA installs on the search paths.",
        fix="Make PATH and LD_LIBRARY_PATH point to one CUDA install that matches torch (check "
        "`ls $CONDA_PREFIX/lib/*cudart*`), or upgrade bitsandbytes, whose loader follows torch.",
        commands=("echo $LD_LIBRARY_PATH", "pip install -U bitsandbytes"),
        covers=("fatbinwrap_undefined_symbol",),
    ),
    log.LogFinding(
        (S.CUDA_RUNTIME_SYMBOL_MISSING,),
        also_quoted=(S.CUDA_RUNTIME_PATH,),
        title="The CUDA runtime found is not the one torch uses (conda environment vs system CUDA)",
        explanation="bitsandbytes called a CUDA runtime function that the libcudart it found does not have: the "
        "runtime came from outside the environment (an old /usr/local/cuda, or a conda env without cudatoolkit).",
        fix="Keep torch and bitsandbytes from one ecosystem (pip with pip), upgrade bitsandbytes so selection "
        "follows torch.version.cuda, or install the matching CUDA runtime into the environment and put "
        "$CONDA_PREFIX/lib first; remove old CUDA folders from LD_LIBRARY_PATH.",
        commands=("echo $LD_LIBRARY_PATH", "pip install -U bitsandbytes"),
        covers=("conda_env_vs_system_cuda_mixup",),
    ),
)


@rule(
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
    return log.hits(facts, FINDINGS)
