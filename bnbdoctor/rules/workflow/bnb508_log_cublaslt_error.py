"""BNB508 log-cublaslt-error: passes when the log shows no 'cublasLt ran into an error' failure."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.gpus import CC_CHOOSES_LIBRARY
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.ERROR,
    "The log shows no 'cublasLt ran into an error' failure",
    needs=("log",),
    covers=("cublaslt_ran_into_error", "mixed_gpu_wrong_compute_capability"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/448",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/371",
    ),
    stands_in_for=("BNB106",),
    confirm=("nvidia-smi --query-gpu=index,name,compute_cap --format=csv", "pip show bitsandbytes"),
)
def cublaslt(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `cuBLAS API failed with status 15` / `Exception: cublasLt ran into an error!`, and on GPUs of
    different generations in one legacy-loader process (the log names GPUs on both sides of the {{ gpus.QUANTIZATION_MIN.text }}/{{ gpus.INT8_MATMUL_MIN.text }} thresholds, or
    bitsandbytes' `Highest compute capability among GPUs detected` disagrees with a GPU it names), together with the
    kernel error that follows (`named symbol not found`, `no kernel image`). It is the log twin of [BNB106](BNB106.md).

    ## Why it matters

    Releases before {{ gpus.CC_CHOOSES_LIBRARY.below_text }} choose one native library and one int8 layout for the whole process, from the GPU with the
    highest compute capability. An older card next to a newer one then runs code built for the other: cuBLASLt returns
    "not supported" (status 15), or kernels fail to load. Unsupported architectures and 8-bit on some ROCm forks fail
    the same way.

    ## How to fix

    - Expose one GPU generation to the process (set `CUDA_DEVICE_ORDER=PCI_BUS_ID` so indices match `nvidia-smi`):

      ```bash
      export CUDA_DEVICE_ORDER=PCI_BUS_ID
      export CUDA_VISIBLE_DEVICES=1
      ```

    - Keep the model on one GPU family, upgrade bitsandbytes ({{ gpus.CC_CHOOSES_LIBRARY.below_text }}+ no longer chooses by the highest GPU), or use 4-bit.
    """
    if not log.seen(facts, S.CUBLASLT_ERROR, S.MIXED_GPU_GENERATIONS):
        return None
    mixed = log.seen(facts, S.MIXED_GPU_GENERATIONS)
    if not log.seen(facts, S.CUBLASLT_ERROR) and not log.legacy_loader(facts):
        return None  # mixed GPUs only mattered to the legacy loader's single library choice
    kernel_error = log.seen(facts, S.NAMED_SYMBOL_NOT_FOUND, S.NO_KERNEL_IMAGE, S.INVALID_DEVICE_FUNCTION)
    return Hit(
        title=(
            "The int8 matmul failed in cuBLASLt ('cublasLt ran into an error')"
            if log.seen(facts, S.CUBLASLT_ERROR)
            else "GPUs of different generations: the legacy loader chose one library for all of them"
            + (" and a kernel then failed" if kernel_error else "")
        ),
        explanation="cuBLASLt's int8 GEMM returned 'not supported': the layout or kernel chosen does not fit the GPU "
        f"running the layer. Releases before {minor(CC_CHOOSES_LIBRARY.below_text)} chose one library and int8 layout "
        "for the whole process from the "
        "GPU with the highest compute capability, so an older card next to a newer one gets code it cannot run; "
        "unsupported architectures and 8-bit on some ROCm forks fail the same way."
        + (" The log shows GPUs of different generations." if mixed else "")
        + (
            " The kernel error in the log ('named symbol not found', 'no kernel image') is what running another "
            "GPU's library looks like."
            if kernel_error and mixed
            else ""
        ),
        evidence=log.line_evidence(
            facts, S.CUBLASLT_ERROR, S.MIXED_GPU_GENERATIONS, S.COMPUTE_CAPABILITY, S.NAMED_SYMBOL_NOT_FOUND, limit=4
        ),
        remediation=Remediation(
            "Expose one GPU generation to the process (CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID so "
            "indices match nvidia-smi), keep the model on one GPU family, upgrade bitsandbytes "
            f"({minor(CC_CHOOSES_LIBRARY.below_text)}+ no longer chooses by the highest GPU), or use 4-bit.",
            ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", "nvidia-smi --query-gpu=index,name,compute_cap --format=csv"],
        ),
        covers=(["cublaslt_ran_into_error"] if log.seen(facts, S.CUBLASLT_ERROR) else [])
        + (["mixed_gpu_wrong_compute_capability"] if mixed else []),
    )
