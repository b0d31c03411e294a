"""BNB104 int8-matmul-slow-path: passes when every visible GPU has int8 tensor cores for LLM.int8()."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.gpus import (
    GTX16_NAME_CHECK,
    INT8_MATMUL_MIN,
    INT8_NAMEERROR,
    INT8_WITHOUT_FALLBACK,
    QUANTIZATION_MIN,
)
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.releases import NO_TENSOR_CORE_NAMES
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, versioned, visible_gpus
from bnbdoctor.rules.gpu._shared import _group, _group_label


@rule(
    Severity.WARNING,
    f"Every visible GPU has int8 tensor cores for LLM.int8() (cc {INT8_MATMUL_MIN.text}+)",
    needs=("gpu",),
    covers=("slow_int8_matmul_warning_cc_lt_75", "int8_matmul_unsupported_cc_lt_75", "cuda_setup_nameerror_bnb_0_37"),
    references=(
        "https://huggingface.co/docs/bitsandbytes/main/en/reference/nn/linear8bit",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/529",
    ),
    requires=("gpus-have-kernels", "torch-runs-on-gpus"),
)
def int8_slow_path(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu` facts and is skipped when no NVIDIA GPU is visible. It reports one finding for each visible
    GPU that has compute capability {{ gpus.QUANTIZATION_MIN.text }} or newer (older GPUs are [BNB103](BNB103.md)'s) and either:

    - has compute capability below {{ gpus.INT8_MATMUL_MIN.text }}, so it has no int8 tensor cores (Pascal 6.x, Volta 7.0, Xavier 7.2); or
    - has compute capability {{ gpus.INT8_MATMUL_MIN.text }} but its name contains `GTX 1630`, `GTX 1650` or `GTX 1660`, and the installed
      bitsandbytes is older than {{ gpus.GTX16_NAME_CHECK.below_text }}. These Turing cards have no tensor cores, and bitsandbytes' `supports_igemmlt()`
      excludes them by name (the function is called up to {{ gpus.GTX16_NAME_CHECK.last_text }}).

    Only LLM.int8() (`load_in_8bit=True`) is affected, so the finding is a warning.

    ## Why it matters

    LLM.int8() multiplies the int8 part of each layer with cuBLASLt's int8 tensor-core kernels (`igemmlt`), which need
    {{ gpus.INT8_MATMUL_MIN.architecture }} ({{ gpus.INT8_MATMUL_MIN.text }}) or newer. On older GPUs:

    - {{ gpus.INT8_WITHOUT_FALLBACK.below_minor }} to {{ gpus.CC_CHOOSES_LIBRARY.last_text }} load a `_nocublaslt` library and use a slower 8-bit matmul. From {{ gpus.CC_CHOOSES_LIBRARY.below_full }} the Python side no longer
      branches on compute capability, but the GPU still has no int8 tensor cores. The legacy loader says so: `WARNING:
      Compute capability < 7.5 detected! Only slow 8-bit matmul is supported for your GPU!`. This is a warning, not the
      failure. If something else breaks, the cause is elsewhere in the log.
    - {{ gpus.INT8_WITHOUT_FALLBACK.last_text }} and older have no slow path. They abort in the matmul with `ERROR: Your GPU does not support Int8 Matmul!`
      and an `igemmlt` assertion (`Assertion 'false' failed`).
    - 0.36.0 and {{ gpus.INT8_NAMEERROR.first_text }} can crash on import on these GPUs with `NameError: name 'cuda_setup' is not defined`. The bug is
      in the warning code for capability < 7.5.

    4-bit quantization (NF4/FP4) and the 8-bit optimizers do not use these kernels. They work from compute capability
    {{ gpus.QUANTIZATION_MIN.text }}.

    ## How to fix

    - Prefer 4-bit quantization on these GPUs. With transformers:

      ```python
      from transformers import BitsAndBytesConfig

      config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
      ```

    - If you need 8-bit, expect it to be slower. On bitsandbytes {{ gpus.INT8_NAMEERROR.first_text }} or older, upgrade first, for the slow path and
      the `NameError` fix:

      ```bash
      pip install -U bitsandbytes
      ```

    - For fast LLM.int8(), use a Turing (RTX 20xx, T4) or newer GPU.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation (LLM.int8() needs compute capability 7.5+)
    - https://huggingface.co/docs/transformers/v4.49.0/en/quantization/bitsandbytes
    """
    if not visible_gpus(facts):
        return Skip("no visible NVIDIA GPU")
    bnb = bnb_of(facts)
    release = release_tuple(bnb.version) if bnb and bnb.installed else None
    old_name_check = GTX16_NAME_CHECK.contains(release)  # supports_igemmlt() is used up to 0.44.x
    hits = []
    for group in _group(visible_gpus(facts)):
        device = group[0]
        cc = device.cc
        if cc is None or cc < QUANTIZATION_MIN.cc:
            continue  # BNB103 already speaks for this GPU
        no_tensor_cores = old_name_check and any(tag in device.name for tag in NO_TENSOR_CORE_NAMES)
        if cc >= INT8_MATMUL_MIN.cc and not no_tensor_cores:
            continue
        why = (
            f"{device.name} has compute capability {device.cc_text} but no tensor cores, and this "
            "bitsandbytes release excludes it from the int8 matmul by name"
            if no_tensor_cores
            else f"compute capability {device.cc_text} has no int8 tensor cores ({INT8_MATMUL_MIN.architecture}, "
            f"{INT8_MATMUL_MIN.text}, is the first)"
        )
        evidence = [
            ev("GPU", _group_label(group), f"gpu.devices[{device.index}].name"),
            ev("compute capability", device.cc_text, f"gpu.devices[{device.index}].compute_capability"),
        ]
        fixed = INT8_NAMEERROR.after().pip_spec()
        if INT8_WITHOUT_FALLBACK.contains(release):
            hits.append(
                Hit(
                    title=f"{_group_label(group)}: {versioned(facts, 'bitsandbytes', bnb.version)} cannot run LLM.int8() here",  # type: ignore[union-attr]
                    explanation=f"LLM.int8() needs int8 tensor cores; {why}. Releases before "
                    f"{minor(INT8_WITHOUT_FALLBACK.below_text)} have no fallback and "
                    "fail with 'ERROR: Your GPU does not support Int8 Matmul!'.",
                    evidence=[*evidence, ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],  # type: ignore[union-attr]
                    remediation=Remediation(
                        f"Upgrade bitsandbytes ({minor(INT8_WITHOUT_FALLBACK.below_text)}+ has a "
                        "slower path for these GPUs), or use 4-bit quantization.",
                        [f'pip install -U "bitsandbytes{fixed}"'],
                    ),
                    severity=Severity.ERROR,
                    covers=["int8_matmul_unsupported_cc_lt_75"],
                )
            )
            continue
        if INT8_NAMEERROR.contains(release):
            hits.append(
                Hit(
                    title=f"{versioned(facts, 'bitsandbytes', bnb.version)} crashes at import on compute capability {device.cc_text}",  # type: ignore[union-attr]
                    explanation=f"{INT8_NAMEERROR.first_text} raises \"NameError: name 'cuda_setup' is not defined\" "
                    f"while setting up the slow int8 path for GPUs below {INT8_MATMUL_MIN.text}.",
                    evidence=[*evidence, ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],  # type: ignore[union-attr]
                    remediation=Remediation("Upgrade bitsandbytes.", [f'pip install -U "bitsandbytes{fixed}"']),
                    severity=Severity.ERROR,
                    covers=["cuda_setup_nameerror_bnb_0_37"],
                )
            )
            continue
        hits.append(
            Hit(
                title=f"{_group_label(group)}: LLM.int8() runs on the slow path",
                explanation=f"LLM.int8() (load_in_8bit) uses cuBLASLt int8 tensor-core kernels; {why}. bitsandbytes "
                f"falls back to a slower 8-bit matmul (releases before {minor(INT8_WITHOUT_FALLBACK.below_text)} failed "
                "outright with 'Your GPU does not support Int8 Matmul!'). 4-bit (NF4/FP4) and 8-bit optimizers are "
                "unaffected.",
                evidence=evidence,
                remediation=Remediation(
                    "Prefer 4-bit quantization (load_in_4bit=True, bnb_4bit_quant_type='nf4') on "
                    "this GPU, or accept slower 8-bit inference; use a "
                    f"{INT8_MATMUL_MIN.architecture} or newer GPU for fast LLM.int8()."
                ),
                covers=["slow_int8_matmul_warning_cc_lt_75"],
            )
        )
    return hits
