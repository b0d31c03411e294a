"""BNB308 cpu-only-bitsandbytes-on-gpu-machine: passes when bitsandbytes ships GPU libraries when torch uses a GPU."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.loader import CPU_FALLBACK_ERA, LEGACY_CUDA_SETUP
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, torch_of, versioned, visible_gpus


@rule(
    Severity.ERROR,
    "bitsandbytes ships GPU libraries when torch uses a GPU",
    needs=("python", "gpu"),
    covers=(
        "compiled_without_gpu_support",
        "cpu_lib_undefined_symbol_cget_col_row_stats",
        "cuda_setup_failed_despite_gpu_available",
        "cuda_binary_missing_for_torch_cuda_version",
    ),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate("a log does not list the files bitsandbytes ships"),
)
def cpu_only_build(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `python` and `gpu` facts; it does not need the native analysis. It fires when all of these hold:

    - bitsandbytes is installed;
    - torch is a CUDA build and at least one NVIDIA GPU is visible;
    - the package folder holds `libbitsandbytes_*` files, but none for CUDA, ROCm or XPU (typically only
      `libbitsandbytes_cpu.so`).

    A package with no compiled library at all is [BNB309](BNB309.md)'s case. On such a machine [BNB301](BNB301.md)
    usually fires as well, because the CUDA library torch's version asks for is missing. This rule names the reason: the
    package was built or packaged without GPU support.

    ## Why it matters

    A CPU-only bitsandbytes is a valid install on a machine without a GPU. On a GPU machine it is nearly always an
    accident:

    - a source build configured without the CUDA backend, e.g. `cmake -S .` without `-DCOMPUTE_BACKEND=cuda`, then `pip
      install .`;
    - a CPU-only package from a third-party channel;
    - a wheel copied from another machine or stripped of its CUDA libraries.

    bitsandbytes does not say "CPU-only package" in so many words. Depending on the release, users see:

    - up to {{ loader.LEGACY_CUDA_SETUP.last_text }}: `import bitsandbytes` fails with `CUDA Setup failed despite GPU being available` after `Required
      library version not found`;
    - {{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }}: `Could not find the bitsandbytes CUDA binary`, then the CPU library loads with `The installed
      version of bitsandbytes was compiled without GPU support`. GPU features fail afterwards;
    - {{ loader.CPU_FALLBACK_ERA.below_text }}+: the import works, and the first GPU operation raises a "binary not found" error.

    Older stacks also showed `libbitsandbytes_cpu.so: undefined symbol: cget_col_row_stats` when transformers loaded an
    8-bit model on a CPU library. The symbol exists only in the CUDA build. A widely shared workaround copies a CUDA
    library over `libbitsandbytes_cpu.so`. It hides the symptom and breaks later.

    ## How to fix

    See what is installed and where it came from:

    ```bash
    pip show -f bitsandbytes | grep -E '^(Version|Location)|libbitsandbytes_'
    conda list bitsandbytes 2>/dev/null
    ```

    - Replace it with the PyPI wheel, which ships CUDA libraries for x86-64 Linux, aarch64 Linux ({{ platforms.LINUX_AARCH64_WHEELS.first_minor }}+) and Windows:
      `pip install --force-reinstall --no-deps bitsandbytes`. Remove a conda package of the same name first (`conda
      remove bitsandbytes`).
    - Building from source on purpose: configure the CUDA backend, with the same CUDA major as torch, then reinstall:

      ```bash
      cmake -DCOMPUTE_BACKEND=cuda -S . && make
      pip install .
      ```

    - Do not copy a CUDA library over `libbitsandbytes_cpu.so`.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/459 (`cget_col_row_stats`, closed with "upgrade")
    """
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed and torch and torch.cuda and visible_gpus(facts)):
        return None
    gpu_libs = [f for f in bnb.native_libraries if re.match(r"libbitsandbytes_(cuda|rocm|xpu)", f)]
    if gpu_libs or not bnb.native_libraries:
        return None
    symptom = (
        "`import bitsandbytes` fails with 'CUDA Setup failed despite GPU being available'"
        if LEGACY_CUDA_SETUP.contains(bnb.version)
        else "bitsandbytes warns that it could not find its CUDA binary and runs CPU-only ('compiled without "
        "GPU support'; older releases then failed with e.g. 'undefined symbol: cget_col_row_stats')"
        if CPU_FALLBACK_ERA.contains(bnb.version)
        else "the first quantized operation raises a 'binary not found' error"
    )
    # What each loader era makes of a package without a GPU library (the symptom above).
    covers = (
        [
            "cuda_setup_failed_despite_gpu_available",
            "compiled_without_gpu_support",
            "cpu_lib_undefined_symbol_cget_col_row_stats",
        ]
        if LEGACY_CUDA_SETUP.contains(bnb.version)
        else ["compiled_without_gpu_support"]
        if CPU_FALLBACK_ERA.contains(bnb.version)
        else ["cuda_binary_missing_for_torch_cuda_version"]
    )
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} is a CPU-only build on a machine with a CUDA GPU",
        explanation="The package holds only " + ", ".join(bnb.native_libraries) + ": it was built or packaged "
        f"without GPU support (a source build without the CUDA backend, or a CPU-only conda package). {symptom}.",
        evidence=[
            ev("native libraries", ", ".join(bnb.native_libraries), "python.bitsandbytes.native_libraries"),
            ev("torch", f"{torch.version} (CUDA {torch.cuda})", "python.torch.cuda"),
        ],
        remediation=Remediation(
            "Install the PyPI wheel (it ships CUDA builds), or rebuild with the CUDA backend "
            "(cmake -DCOMPUTE_BACKEND=cuda).",
            ["pip install --force-reinstall --no-deps bitsandbytes"],
        ),
        covers=covers,
    )
