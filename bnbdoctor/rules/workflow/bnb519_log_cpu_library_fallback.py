"""BNB519 log-cpu-library-fallback: passes when the log shows no fallback to bitsandbytes' CPU library."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import MACOS_WHEELS, WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, torch_of
from bnbdoctor.rules.common import TORCH_BUILD_CHECK as TORCH_CHECK
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, UPGRADE_TO_WINDOWS_WHEELS, _severity_as_consequence


@rule(
    Severity.ERROR,
    "The log shows no fallback to bitsandbytes' CPU library",
    needs=("log",),
    covers=(
        "compiled_without_gpu_support",
        "cpu_lib_undefined_symbol_cget_col_row_stats",
        "torch_cpu_flavor_on_gpu_host",
        "macos_apple_silicon_no_native_lib",
    ),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/459"),
    stands_in_for=("BNB301", "BNB308", "BNB202"),
    confirm=(PYTHON_M_BNB, TORCH_CHECK),
)
def cpu_fallback(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when the log shows bitsandbytes on its CPU library: `The installed version of bitsandbytes was
    compiled without GPU support`, `Defaulting to libbitsandbytes_cpu.so`, `Loading binary …libbitsandbytes_cpu.so`,
    `Proceeding to load CPU-only library`, and CUDA-only functions missing from it (`undefined symbol:
    cget_col_row_stats`, Windows' `function 'cadam32bit_grad_fp32' not found`). It is an error when the log shows
    nothing that explains the fallback, and info ("a consequence of the cause above") when it does. The explanation
    names the platform's reason when the log shows it (Windows with a release before {{ platforms.WINDOWS_WHEELS.first_minor }}, macOS), and a torch the log names
    as a CPU build (`pytorch version: 2.4.1+cpu`, as ComfyUI prints it at start-up), which is then the cause it
    reports (`torch_cpu_flavor_on_gpu_host`). It is the log twin of
    [BNB301](BNB301.md), [BNB308](BNB308.md) and [BNB202](BNB202.md).

    ## Why it matters

    Despite its wording, "compiled without GPU support" does not mean a bad build: the loader chose
    `libbitsandbytes_cpu` because it found no usable CUDA library (no GPU visible to torch, no library for torch's CUDA
    version, or a platform without GPU builds). Every 8-bit optimizer and 8/4-bit GPU call then fails with messages such
    as `'NoneType' object has no attribute 'cadam32bit_grad_fp32'` or `undefined symbol: cget_col_row_stats`.

    ## How to fix

    - Read the lines before the fallback, or run `python -m bitsandbytes`, for the reason.
    - Usual fixes: a CUDA build of torch with `torch.cuda.is_available()` True, then `pip install -U bitsandbytes`
      ({{ platforms.WINDOWS_WHEELS.first_text }}+ on Windows).
    - Do not copy a CUDA library over `libbitsandbytes_cpu.so`: it hides the symptom and breaks later.
    """
    if not log.seen(facts, S.CPU_LIBRARY_SELECTED, S.COMPILED_WITHOUT_GPU_SUPPORT, S.CPU_LIBRARY_MISSING_SYMBOL):
        return None
    severity, because = _severity_as_consequence(facts)
    lines = log.line_evidence(
        facts,
        S.CPU_LIBRARY_SELECTED,
        S.COMPILED_WITHOUT_GPU_SUPPORT,
        S.CPU_LIBRARY_MISSING_SYMBOL,
        S.NATIVE_LIBRARY_UNAVAILABLE,
        limit=4,
    )
    windows_legacy = log.is_windows(facts) and log.legacy_loader(facts)
    cpu_torch = _cpu_torch_shown(facts)
    if log.is_macos(facts):
        why = (
            f"macOS has no CUDA, and releases before {minor(MACOS_WHEELS.first_text)} have no macOS build: only "
            "CPU code can load."
        )
        fix = Remediation(
            "Use a CUDA machine for 8-bit/4-bit GPU work, or MLX / llama.cpp on a Mac.", ["pip show bitsandbytes"]
        )
    elif windows_legacy:
        why = (
            f"On Windows, releases before {minor(WINDOWS_WHEELS.first_text)} hold only Linux libraries and a "
            "loader that never finds CUDA, so they always end up on the CPU library."
        )
        fix = Remediation(
            f"Install a release with Windows support ({WINDOWS_WHEELS.first_text} or newer), or run under WSL2.",
            [UPGRADE_TO_WINDOWS_WHEELS],
        )
    elif cpu_torch:
        why = (
            f"The log shows torch {cpu_torch}, a CPU-only build: bitsandbytes takes its library from torch's CUDA "
            "version, and a torch without CUDA gets the CPU library whatever GPU the machine has."
        )
        fix = Remediation(
            "Install a CUDA build of PyTorch in the environment the program runs (pytorch.org's selector gives the "
            "--index-url for the machine's driver), then start it again: bitsandbytes then loads its CUDA library. "
            "Where an installer put the CPU wheel back, pin torch or install the rest with --no-deps.",
            [TORCH_CHECK, PYTHON_M_BNB],
        )
    else:
        why = (
            "Typical reasons: torch cannot see a GPU (CPU-only torch, driver problem), or the package holds no "
            "library for torch's CUDA version; the lines before the fallback say which."
        )
        fix = Remediation(
            "Read the lines before the fallback (or run `python -m bitsandbytes`) for the reason. Usual fixes: a CUDA "
            "build of torch with torch.cuda.is_available() True, then `pip install -U bitsandbytes`. Do not copy a "
            "CUDA library over libbitsandbytes_cpu.so: it hides the symptom and breaks later.",
            [TORCH_CHECK, PYTHON_M_BNB, "pip install -U bitsandbytes"],
        )
    return Hit(
        title="bitsandbytes fell back to its CPU library ('compiled without GPU support')",
        explanation="Despite its wording, 'The installed version of bitsandbytes was compiled without GPU support' "
        "means the loader chose libbitsandbytes_cpu: every 8-bit optimizer and 8/4-bit GPU call then fails "
        "(\"'NoneType' object has no attribute 'cadam32bit_grad_fp32'\", 'undefined symbol: cget_col_row_stats'). "
        + why
        + because,
        evidence=lines,
        remediation=fix,
        severity=severity,
        covers=(["macos_apple_silicon_no_native_lib"] if log.is_macos(facts) else [])
        + (["torch_cpu_flavor_on_gpu_host"] if cpu_torch and not log.is_macos(facts) else [])
        + ["compiled_without_gpu_support"]
        + (
            ["cpu_lib_undefined_symbol_cget_col_row_stats"]
            if log.seen(facts, S.CPU_LIBRARY_MISSING_SYMBOL) and not (windows_legacy or log.is_macos(facts))
            else []
        ),
    )


def _cpu_torch_shown(facts: Facts) -> str | None:
    """The torch version the log shows when it is a CPU build by its own name (``2.4.1+cpu``), else None: the one
    reason for the fallback a log states outright."""
    torch = torch_of(facts)
    version = torch.version if torch is not None and torch.installed else None
    return version if version and version.endswith("+cpu") else None
