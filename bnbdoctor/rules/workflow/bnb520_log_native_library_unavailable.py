"""BNB520 log-native-library-unavailable: passes when the log shows no call into a bitsandbytes native library that failed to load."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import BNB_ERRORS, PYTHON_M_BNB, _severity_as_consequence


@rule(
    Severity.ERROR,
    "The log shows no call into a bitsandbytes native library that failed to load",
    needs=("log",),
    covers=(
        "native_lib_none_attribute_errors",
        "cuda_setup_failed_despite_gpu_available",
        "jetson_l4t_aarch64_wheel_mismatch",
    ),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1615", BNB_ERRORS),
    stands_in_for=("BNB309", "BNB301"),
    confirm=(PYTHON_M_BNB,),
)
def native_unavailable(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on the messages that follow a failed library load: `AttributeError: 'NoneType' object has no
    attribute 'c…'` (`cquantize_blockwise_fp16_nf4`, `cint8_vector_quant`, `cuDeviceGetCount`, …), {{ loader.NONE_LIBRARY_ATTRIBUTE_ERRORS.below_text }}+'s `Attempted to
    use bitsandbytes native library functionality but it's not available`, and the umbrella `CUDA Setup failed despite
    GPU being available` / `CUDA SETUP: Setup Failed!` / `CUDA detection failed!`. Like [BNB519](BNB519.md), it is info
    when the log shows the cause and an error when it does not; on a Jetson (L4T or JetPack in the log) the umbrella is
    no published build for L4T's CUDA. It is the log twin of [BNB309](BNB309.md) and [BNB301](BNB301.md).

    ## Why it matters

    These messages carry no diagnosis: the native library failed to load earlier, `lib` is `None`, and the first C call
    fails. The cause is the first loader error in the log (a missing CUDA library, a `GLIBC`/`CXXABI` version, a
    `WindowsPath` crash, `BNB_CUDA_VERSION`, a missing binary). Maintainers' first advice is that the bitsandbytes
    version is outdated.

    ## How to fix

    - Scroll up to the first `Could not load bitsandbytes native library` / `CUDA SETUP:` error and fix that; `python -m
      bitsandbytes` prints it directly.
    - First try upgrading bitsandbytes and restarting the notebook kernel:

      ```bash
      pip install -U bitsandbytes
      python -m bitsandbytes
      ```
    """
    if not log.seen(facts, S.NATIVE_LIBRARY_UNAVAILABLE, S.CUDA_SETUP_FAILED):
        return None
    severity, because = _severity_as_consequence(facts, S.CPU_LIBRARY_SELECTED, S.COMPILED_WITHOUT_GPU_SUPPORT)
    umbrella = log.seen(facts, S.CUDA_SETUP_FAILED)
    if umbrella and severity is not Severity.INFO and facts.platform is not None and facts.platform.jetson_release:
        return Hit(
            title="bitsandbytes could not set up its CUDA library on a Jetson: no published build is for L4T",
            explanation=f"The log shows a Jetson ({facts.platform.jetson_release}). bitsandbytes' published builds "
            "are for x86-64 and server ARM (sbsa) with the standard CUDA toolkit, not for Jetson's L4T/JetPack CUDA, "
            "so its library does not load there and bitsandbytes reports 'CUDA Setup failed'.",
            evidence=log.line_evidence(facts, S.CUDA_SETUP_FAILED, S.NATIVE_LOAD_ERROR, S.PLATFORM),
            remediation=Remediation(
                "Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda -S . && make, then pip install .) or "
                "install a wheel built for JetPack (the Jetson AI Lab index, a third-party build).",
                ["cat /etc/nv_tegra_release", PYTHON_M_BNB],
            ),
            covers=["jetson_l4t_aarch64_wheel_mismatch", "cuda_setup_failed_despite_gpu_available"],
        )
    return Hit(
        title=(
            "bitsandbytes could not set up its CUDA library ('CUDA Setup failed')"
            if umbrella and not log.seen(facts, S.NATIVE_LIBRARY_UNAVAILABLE)
            else "A bitsandbytes function was called after its native library failed to load"
        ),
        explanation="'CUDA Setup failed despite GPU being available' and \"'NoneType' object has no attribute "
        "'c…'\" carry no diagnosis of their own: the native library failed to load earlier (lib is None) and the "
        "cause is the first loader error in the log." + because,
        evidence=log.line_evidence(facts, S.NATIVE_LIBRARY_UNAVAILABLE, S.CUDA_SETUP_FAILED, S.NATIVE_LOAD_ERROR),
        remediation=Remediation(
            "Scroll up to the first 'Could not load bitsandbytes native library' / CUDA SETUP error and fix that; "
            "`python -m bitsandbytes` prints it directly. First try upgrading bitsandbytes and restarting the "
            "notebook kernel.",
            [PYTHON_M_BNB, "pip install -U bitsandbytes"],
        ),
        severity=severity,
        covers=(["native_lib_none_attribute_errors"] if log.seen(facts, S.NATIVE_LIBRARY_UNAVAILABLE) else [])
        + (["cuda_setup_failed_despite_gpu_available"] if umbrella else []),
    )
