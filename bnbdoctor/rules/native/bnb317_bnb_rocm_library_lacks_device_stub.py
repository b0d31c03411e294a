"""BNB317 bnb-rocm-library-lacks-device-stub: passes when the selected bitsandbytes GPU library defines the kernels it references."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import ROCM_IN_PYPI_WHEEL, ROCM_PREVIEW_WHEELS
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import bnb_of, ev
from bnbdoctor.rules.native._shared import missing_device_stub


@rule(
    Severity.ERROR,
    "The selected bitsandbytes GPU library defines the kernels it references",
    needs=("load",),
    covers=("rocm_lib_undefined_device_stub",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1550",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1519",
        "https://github.com/ROCm/bitsandbytes/issues/67",
    ),
    log_gate=LogGate("the log shows no undefined device stub", signatures=(S.ROCM_DEVICE_STUB_UNDEFINED,)),
)
def device_stub_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `load` facts: the real loader's message for the library bitsandbytes selected (or, in
    `bnbdoctor explain`, the `Could not load bitsandbytes native library: …` line of a log). It fires when the loader
    refused the library for an undefined symbol of the form `_Z<n>__device_stub__k<Kernel>…`, for example
    `undefined symbol: _Z36__device_stub__kOptimizer32bit1StateI12hip_bfloat16Li2EEvPT_S2_PfS3_ffffffiffbi`. It is
    skipped when the load check did not run, and passes when the library loaded or failed for another reason.

    ## Why it matters

    A `__device_stub__` symbol is the host-side launcher the HIP (or CUDA) compiler emits next to each kernel
    instantiation. bitsandbytes' own library references it, so only the library itself can define it: when it is
    undefined, the library was built without that kernel instantiation (in issue #1550, the `hip_bfloat16` 32-bit
    optimizer of the {{ loader.ROCM_PREVIEW_WHEELS.last_text }} multi-backend preview wheels). Every dependency resolved and nothing on the machine is
    wrong; the file is a packaging defect, and maintainers said the preview wheel was not ready. bitsandbytes then
    runs without its native library and fails at the first quantized call.

    ## How to fix

    - Install a released bitsandbytes that ships ROCm libraries for the installed ROCm ({{ loader.ROCM_IN_PYPI_WHEEL.first_text }}+ wheels carry them on
      PyPI; {{ loader.NEAREST_BUILD.first_text }}+ picks the nearest ROCm build of the same major), instead of a preview or multi-backend wheel.
    - Or build bitsandbytes from source for the local ROCm: `cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=gfx1100 -S .
      && make && pip install .`.

    ```bash
    pip show bitsandbytes
    pip install -U "bitsandbytes>={{ loader.ROCM_IN_PYPI_WHEEL.first_text }}"
    ```
    """
    found = missing_device_stub(facts)
    if found is None:
        load = facts.load
        return Skip(f"the load check did not run: {load.skipped_reason}") if load and not load.ran else None
    symbol, kernel = found
    load, bnb = facts.load, bnb_of(facts)
    assert load is not None
    named = re.search(r"libbitsandbytes_\w+\.(?:so|dll|dylib)", f"{load.library or ''} {load.error or ''}")
    library = named.group(0) if named else "the bitsandbytes library"
    rocm = "rocm" in library or "hip" in library or "hip_" in symbol
    backend = "ROCm" if rocm else "GPU"
    spec = full(ROCM_IN_PYPI_WHEEL.first_text)
    return Hit(
        title=f"{library} lacks the {kernel} kernel: a {backend} build without that kernel",
        explanation=f"The loader refused {library}: it references {symbol}, the launch stub of one of its own "
        f"kernels ({kernel}), which only the library itself can define. It was built without that kernel "
        f"instantiation, a defect of the build (seen in the {ROCM_PREVIEW_WHEELS.last_text} multi-backend preview wheels), "
        "not of this "
        "machine: every dependency resolved. bitsandbytes then has no native library and fails at the first "
        "quantized call.",
        evidence=[ev("the real loader said", load.error, "load.error")]
        + ([ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")] if bnb and bnb.version else []),
        remediation=Remediation(
            f"Install a released bitsandbytes with {backend} libraries for the installed runtime "
            f"({ROCM_IN_PYPI_WHEEL.first_text}+ ship ROCm builds on PyPI) instead of a preview wheel, or build it "
            "from source for the local ROCm (-DCOMPUTE_BACKEND=hip).",
            ["pip show bitsandbytes", f'pip install -U "bitsandbytes>={spec}"'],
        ),
    )
