"""BNB310 rocm-library-not-found: passes when every ROCm/HIP library the selected bitsandbytes build needs is found by the loader."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL
from bnbdoctor.rules.native._shared import (
    _folder,
    _library_path_export,
    _native,
    _not_found_hit,
    _unresolved,
)


@rule(
    Severity.ERROR,
    "Every ROCm/HIP library the selected bitsandbytes build needs is found by the loader",
    needs=("native",),
    covers=("rocm_hip_libraries_missing",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1520", BNB_DOCS_INSTALL),
    requires=("library-readable",),
)
def rocm_missing(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `native` facts. Among the libraries the selected bitsandbytes library needs, it picks the
    ROCm/HIP ones (`libhipblas`, `libhipblaslt`, `libhipsparse`, `librocrand`, `libamdhip64`, `rocblas`, …) and reports
    those the loader's search does not find. The search is the same as for CUDA libraries ([BNB303](BNB303.md)).
    bitsandbytes' ROCm libraries carry a `RUNPATH` of `/opt/rocm/lib:/opt/rocm-X.Y.Z/lib`, so a standard ROCm install is
    found without any environment variable.

    Each missing library is listed with any copy bnbdoctor found outside the search, for example under `/opt/rocm/lib`.
    When there is such a copy, the fix includes an `LD_LIBRARY_PATH` line. The rule is not limited to Linux: with a ROCm
    build on Windows, the same DLLs are also reported by [BNB311](BNB311.md).

    ## Why it matters

    The ROCm builds of bitsandbytes (in the PyPI wheel from {{ loader.ROCM_IN_PYPI_WHEEL.first_text }}; before that in forks and preview wheels) are linked
    against the math libraries of one ROCm release:

    | release | ROCm libraries needed |
    |---|---|
    | 0.49.2, `rocm62`–`rocm64` | `libhipblas.so.2`, `libhipsparse.so.1`, `libhipblaslt.so.0` |
    | 0.49.2, `rocm70`–`rocm72` | `libhipblas.so.3`, `libhipsparse.so.4`, `libhipblaslt.so.1` |
    | 0.50.2, Linux | `libhipblas` and `libhipblaslt` (`.so.2`/`.so.0` for ROCm 6.4, `.so.3`/`.so.1` for ROCm 7.x); `librocrand.so.1` for ROCm 7.14 and 7.15 |
    | 0.50.2, Windows | `hipblas.dll`, `rocblas.dll`, `libhipblaslt.dll`, `amdhip64_7.dll` |

    They have to come from a ROCm installation, or be already loaded into the process under the same names. A container
    or machine without the ROCm math libraries, or with only part of them (hipBLAS without hipBLASLt), fails to load the
    library:

    ```text
    libhipblaslt.so.0: cannot open shared object file: No such file or directory
    ```

    With {{ loader.ROCM_IN_PYPI_WHEEL.first_text }}+ the import still succeeds, and the first native call fails with the loader's message. Older forks printed
    `CUDA SETUP: Setup Failed!` after `libhipblas.so.0: cannot open shared object file` for
    `libbitsandbytes_hip_nohipblaslt.so`. A library that loads but was built for another GPU architecture is a different
    failure (`hipErrorNoBinaryForGpu`), which this rule does not check.

    ## Example notes

    The GPU line is about NVIDIA GPUs only; an AMD GPU does not appear there.

    ## How to fix

    Compare torch's ROCm version with what is installed:

    ```bash
    python -c "import torch; print(torch.version.hip)"
    ls -d /opt/rocm* ; ls /opt/rocm/lib | grep -E 'libhip(blas|blaslt|sparse)\.so'
    ```

    - Install the missing ROCm packages (`hipblas`, `hipblaslt`, `hipsparse`) of the same ROCm release as torch, using
      AMD's package repositories or a ROCm container image.
    - ROCm installed in a versioned folder without the `/opt/rocm` link: add its `lib` folder to `LD_LIBRARY_PATH`, or
      create the link the way AMD's installer does.
    - Several ROCm releases side by side: make sure the one matching `torch.version.hip` comes first.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1519 (installing for an AMD GPU)
    """
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("rocm",))
    if not missing:
        return None
    folders = sorted({_folder(d.elsewhere[0]) for d in missing if d.elsewhere})
    return _not_found_hit(
        facts,
        missing,
        "The ROCm build of bitsandbytes links hipBLAS/hipBLASLt (and hipSPARSE or rocRAND on some "
        "releases) from a ROCm install; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'.",
        Remediation(
            "Install the ROCm libraries of the version torch was built for (hipblas, hipblaslt), "
            "or add the ROCm lib folder to LD_LIBRARY_PATH.",
            [_library_path_export(folders)] if folders else [],
        ),
    )
