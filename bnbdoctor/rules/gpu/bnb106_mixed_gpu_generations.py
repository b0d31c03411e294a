"""BNB106 mixed-gpu-generations: passes when all visible GPUs fall on the same side of bitsandbytes' capability thresholds."""

from __future__ import annotations

from bnbdoctor.facts import Facts, GpuDevice
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.gpus import CC_CHOOSES_LIBRARY, INT8_MATMUL_MIN, QUANTIZATION_MIN
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, versioned, visible_gpus


@rule(
    Severity.WARNING,
    "All visible GPUs fall on the same side of bitsandbytes' capability thresholds",
    needs=("gpu",),
    covers=("mixed_gpu_wrong_compute_capability", "cublaslt_ran_into_error"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/448",),
)
def mixed_gpus(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `gpu` facts. It is skipped when fewer than two visible GPUs have a known compute capability, and
    for bitsandbytes {{ gpus.CC_CHOOSES_LIBRARY.below_text }} and newer, whose library choice no longer depends on the GPUs (BNB104 and BNB105 judge each
    GPU there). It passes when all of them have the same capability, or when all fall in the same one of three tiers:

    - below {{ gpus.QUANTIZATION_MIN.text }}: unsupported by current bitsandbytes;
    - from {{ gpus.QUANTIZATION_MIN.text }}, below {{ gpus.INT8_MATMUL_MIN.text }}: supported, but without int8 tensor cores;
    - {{ gpus.INT8_MATMUL_MIN.text }} and newer: fast LLM.int8().

    When the visible GPUs span more than one tier, it reports one warning. The warning names the GPU with the highest
    capability and the GPUs in lower tiers, and suggests a `CUDA_VISIBLE_DEVICES` that keeps only the GPUs in the top
    tier. Indices are NVML's, which is `nvidia-smi`'s PCI bus order.

    ## Why it matters

    bitsandbytes reduces all visible GPUs to one number, the **highest** compute capability. Up to {{ gpus.CC_CHOOSES_LIBRARY.last_text }} that number
    picks the library for the whole process: the cuBLASLt build when it is {{ gpus.INT8_MATMUL_MIN.text }} or more, the `_nocublaslt` build
    otherwise. Work that then runs on a GPU from another generation uses code chosen for a different one:

    - old loaders reporting the wrong card, e.g. `CUDA SETUP: Highest compute capability among GPUs detected: 6.1` on a
      box with an A6000, then `Error named symbol not found at line 528 in file .../ops.cu`;
    - int8 matmul on the weaker card: `cuBLAS API failed with status 15` followed by `Exception: cublasLt ran into an
      error!` (status 15 is `CUBLAS_STATUS_NOT_SUPPORTED`).

    From {{ gpus.CC_CHOOSES_LIBRARY.below_full }} the `_nocublaslt` variant is gone and the library depends only on torch's CUDA version. The risk that
    remains is placement. With `device_map="auto"`, accelerate spreads layers over every visible GPU, so the older card
    runs them slowly ([BNB104](BNB104.md)) or not at all ([BNB105](BNB105.md)).

    ## Example notes

    The finding's explanation (one library chosen for the whole process) describes releases up to {{ gpus.CC_CHOOSES_LIBRARY.last_text }}. With 0.50.2,
    as here, what remains is the placement and int8 speed difference described above.

    ## How to fix

    Hide the older GPUs from CUDA. The suggested indices are `nvidia-smi`'s. CUDA numbers the fastest GPU 0 by default,
    so set `CUDA_DEVICE_ORDER` to make CUDA use the same PCI bus order:

    ```bash
    nvidia-smi -L
    export CUDA_DEVICE_ORDER=PCI_BUS_ID
    export CUDA_VISIBLE_DEVICES=0
    ```

    Or keep the quantized model on one card: `device_map={"": 0}` in `from_pretrained`. On releases before {{ gpus.CC_CHOOSES_LIBRARY.below_text }} also
    upgrade bitsandbytes (`pip install -U bitsandbytes`).

    ## Further reading

    - https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html
      (`CUDA_VISIBLE_DEVICES`)
    - https://stackoverflow.com/questions/13781738/how-does-cuda-assign-device-ids-to-gpus (CUDA numbers the fastest GPU
      0 by default)
    """
    gpus = [d for d in visible_gpus(facts) if d.cc]
    if len(gpus) < 2:
        return Skip("fewer than two visible GPUs")
    bnb = bnb_of(facts)
    release = release_tuple(bnb.version) if bnb and bnb.installed else None
    if release is not None and not CC_CHOOSES_LIBRARY.contains(release):
        return Skip(
            f"from {minor(CC_CHOOSES_LIBRARY.below_text)} the library choice no longer depends on compute "
            "capability (BNB104/BNB105 judge each GPU)"
        )
    if len({d.cc for d in gpus}) < 2:
        return None

    def tier(device: GpuDevice) -> int:
        cc = device.cc
        assert cc is not None
        return 0 if cc < QUANTIZATION_MIN.cc else 1 if cc < INT8_MATMUL_MIN.cc else 2

    if len({tier(d) for d in gpus}) < 2:
        return None
    best = max(gpus, key=lambda d: d.cc)  # type: ignore[arg-type,return-value]
    weak = [d for d in gpus if tier(d) < tier(best)]
    keep = ",".join(str(d.index) for d in gpus if tier(d) == tier(best))
    names = ", ".join(sorted({d.name for d in weak}))
    return Hit(
        title=f"Mixed GPU generations: {versioned(facts, 'bitsandbytes', bnb.version if bnb else None)} chooses its library for cc "
        f"{best.cc_text}; {names} {'lags' if len(weak) == 1 else 'lag'} behind",
        explanation=f"Releases before {minor(CC_CHOOSES_LIBRARY.below_text)} pick one native library for the whole "
        "process from the highest compute "
        f"capability among visible GPUs ({best.cc_text}, {best.name}): the cuBLASLt build instead of the "
        "_nocublaslt one. Work placed on the older GPU(s) then runs code chosen for the newer one: int8 matmul "
        "errors ('cublasLt ran into an error') or missing kernels; device_map='auto' spreads layers across them.",
        evidence=[
            ev(f"GPU {d.index}", f"{d.name}, compute capability {d.cc_text}", f"gpu.devices[{d.index}]") for d in gpus
        ],
        remediation=Remediation(
            f"Upgrade bitsandbytes ({minor(CC_CHOOSES_LIBRARY.below_text)}+ no longer chooses by the highest GPU), "
            "or hide the older GPU(s) from "
            "CUDA. The indices below are nvidia-smi's (PCI bus order), so set CUDA_DEVICE_ORDER too.",
            ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", f"export CUDA_VISIBLE_DEVICES={keep}"],
        ),
    )
