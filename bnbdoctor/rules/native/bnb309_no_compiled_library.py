"""BNB309 no-compiled-library: passes when the bitsandbytes package folder holds a compiled native library."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev


def _log_names_the_gpu_library(facts: Facts) -> bool:
    """A log that names the GPU library bitsandbytes wanted shows only that it and the CPU fallback are missing,
    not an empty folder: a build for one backend (CMake's ``COMPUTE_BACKEND=cuda`` or ``hip``, as conda-forge, the
    ROCm fork and most own builds make) ships no CPU library, so the two misses are what a build for another
    CUDA or ROCm version looks like. BNB516 reads that case. (The later "Forgot to compile" and ``str2optimizer``
    errors follow any library that did not load, so they do not tell the two apart.)"""
    return facts.python is not None and facts.python.selected_by == "log" and log.seen(facts, S.BNB_LIBRARY_NOT_FOUND)


@rule(
    Severity.ERROR,
    "The bitsandbytes package folder holds a compiled native library",
    needs=("python",),
    covers=("source_build_native_lib_missing", "native_lib_none_attribute_errors"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180", BNB_DOCS_INSTALL),
    log_gate=LogGate(
        "the log does not show bitsandbytes' libraries missing",
        signatures=(S.BNB_CPU_LIBRARY_NOT_FOUND, S.BNB_NOT_COMPILED),
    ),
)
def no_library(facts: Facts) -> Hit | None:
    r"""## What it detects

    The rule reads the `python` facts. It fires when bitsandbytes is importable but its package folder holds no
    `libbitsandbytes_*` file at all: no CPU library, no CUDA, ROCm or XPU library. Read from a log, it fires on the
    CPU library's absence only when the log names no GPU library that was wanted: a build for one backend (CMake's
    `COMPUTE_BACKEND=cuda` or `hip`, which conda-forge, the ROCm fork and most own builds use) ships no CPU library,
    so "the CUDA or ROCm library for this version is missing, and so is the CPU one" is a build for another version,
    which [BNB516](BNB516.md) reads.

    The wording depends on whether the package has installation metadata. Without metadata it is a source checkout
    reached through `sys.path`: the current directory, `PYTHONPATH`, or an editable setup whose build never ran. With
    metadata it is an installation that ended up without its compiled part. Only in the second case does the finding
    offer a reinstall command.

    ## Why it matters

    The Python half of bitsandbytes is plain source; the native half has to be compiled by CMake, and `pip install
    git+https://…` or `import` from a clone does not always do that. Without any library, every release fails, but the
    messages point elsewhere:

    - `Could not find the bitsandbytes CUDA binary at …libbitsandbytes_cuda121.so`, followed by `Could not load
      bitsandbytes native library: …libbitsandbytes_cpu.so: cannot open shared object file` ({{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }});
    - on Windows: `Could not find module '…\bitsandbytes\libbitsandbytes_cpu.dll' (or one of its dependencies)`;
    - later: `NameError: name 'str2optimizer32bit' is not defined`, or `AttributeError: 'NoneType' object has no
      attribute 'c…'`, because the library handle is `None`;
    - {{ loader.EXACT_MATCH_ERA.first_text }}–{{ loader.EXACT_MATCH_ERA.last_text }}: the first native call raises the `Forgot to compile the bitsandbytes library?` message. {{ loader.NEAREST_BUILD.first_text }}+ raises a
      generic `Attempted to use bitsandbytes native library functionality but it's not available` text instead.

    The `NameError` and `NoneType` errors are only downstream symptoms. Maintainers' triage treats them as "the native
    library did not load" and points back to the first load error.

    ## How to fix

    Find out which folder Python really imports, without importing bitsandbytes:

    ```bash
    python -c "import importlib.util as u; print(u.find_spec('bitsandbytes').origin)"
    ls "$(dirname "$(python -c "import importlib.util as u; print(u.find_spec('bitsandbytes').origin)")")" | grep libbitsandbytes_
    ```

    - A clone shadows the installed package (you ran Python inside the repository, or `PYTHONPATH` points at it): change
      directory or clean `PYTHONPATH`.
    - You want a release: `pip install --force-reinstall bitsandbytes` from PyPI.
    - You want a source build: compile the backend that matches torch before installing:

      ```bash
      cmake -DCOMPUTE_BACKEND=cuda -S . && make
      pip install .
      ```

    - ppc64le and other platforms without wheels always need the source build.

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1524 (`libbitsandbytes_cpu.dll` missing on Windows)
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed) or bnb.native_libraries or _log_names_the_gpu_library(facts):
        return None
    source = not bnb.has_metadata
    return Hit(
        title="bitsandbytes has no compiled library" + (" (a source checkout on sys.path)" if source else ""),
        explanation=f"{bnb.location} holds no libbitsandbytes_* file. "
        + (
            "It is a git checkout or an install from source that was never compiled (pip install "
            "git+https://… without a build backend, or `import` from the repository folder). "
            if source
            else "The install is incomplete. "
        )
        + "bitsandbytes then fails with 'Could not find the bitsandbytes CUDA binary', \"NameError: name "
        "'str2optimizer32bit' is not defined\" or 'NoneType' attribute errors.",
        evidence=[
            ev("package folder", bnb.location, "python.bitsandbytes.location"),
            ev(
                "metadata",
                "present" if bnb.has_metadata else "none (not pip-installed)",
                "python.bitsandbytes.has_metadata",
            ),
        ],
        remediation=Remediation(
            "Install a released wheel, or compile the library in the checkout "
            "(cmake -DCOMPUTE_BACKEND=cuda -S . && make) before installing it.",
            ["pip install --force-reinstall bitsandbytes"] if bnb.has_metadata else [],
        ),
    )
