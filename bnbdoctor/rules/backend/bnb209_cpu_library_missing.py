"""BNB209 cpu-library-missing: passes when the CPU library is there when bitsandbytes selects its CPU backend."""

from __future__ import annotations

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import CPU_FALLBACK_ERA, LEGACY_CUDA_SETUP, NONE_LIBRARY_ATTRIBUTE_ERRORS
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, predicted_selection


@rule(
    Severity.ERROR,
    "The CPU library is there when bitsandbytes selects its CPU backend",
    needs=("python", "platform"),
    covers=("source_build_native_lib_missing", "native_lib_none_attribute_errors"),
    references=(
        BNB_DOCS_INSTALL,
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941",
    ),
    log_gate=LogGate(
        "the log does not show bitsandbytes' CPU library missing", signatures=(S.BNB_CPU_LIBRARY_NOT_FOUND,)
    ),
    requires=("torch-matches-gpu",),
)
def cpu_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` and `platform` facts. It replays the installed release's library choice (see [the
    native chain](../native-chain.md)); when that choice is the CPU backend (torch is a CPU-only build, or it sees no
    GPU) and the package folder holds compiled libraries but no `libbitsandbytes_cpu` file, it reports an error. A
    folder with no library at all is [BNB309](BNB309.md)'s case.

    This is what a build made for one backend looks like: `cmake -DCOMPUTE_BACKEND=cuda` builds only
    `libbitsandbytes_cuda126.so`, which a Jetson or a source checkout then carries alone.

    ## Why it matters

    bitsandbytes picks its library from torch, not from what is in the folder. With the CPU backend selected and the
    CPU library absent, nothing loads:

    - up to {{ loader.LEGACY_CUDA_SETUP.last_text }} the legacy setup fails to load `libbitsandbytes_cpu.so`;
    - {{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }} log `Could not load bitsandbytes native library: … libbitsandbytes_cpu.so: cannot open shared object
      file` and every native call fails with `'NoneType' object has no attribute 'c…'`;
    - {{ loader.CPU_FALLBACK_ERA.below_text }}+ import fine and raise `Failed to load CPU-only bitsandbytes library` at the first native call.

    When the machine has a GPU and torch is a CPU-only build, the CPU backend is the mistake, not the missing file:
    that is [BNB202](BNB202.md), and this finding follows from it.

    ## How to fix

    Build the CPU backend as well, in the checkout the library came from, and reinstall:

    ```bash
    cmake -DCOMPUTE_BACKEND=cpu -S . && make
    pip install .
    ```

    or install a released wheel, which ships the CPU library: `pip install --force-reinstall bitsandbytes`.
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    selection = predicted_selection(facts)
    if selection is None:
        return Skip("the library choice cannot be predicted")
    if selection.backend != "cpu" or selection.exists or not bnb.native_libraries:
        return None
    local = built_locally(bnb)
    if LEGACY_CUDA_SETUP.contains(bnb.version):
        effect = "The legacy CUDA setup fails to load it, and bitsandbytes cannot be used."
    elif CPU_FALLBACK_ERA.contains(bnb.version):
        effect = (
            "bitsandbytes logs 'Could not load bitsandbytes native library' and every native call fails with "
            "\"'NoneType' object has no attribute 'c…'\"."
        )
    else:
        effect = (
            "bitsandbytes imports, then raises 'Failed to load CPU-only bitsandbytes library' at the first native call."
        )
    return Hit(
        title=f"bitsandbytes {bnb.version} selects its CPU library, and this install has none",
        explanation=f"{selection.reason[0].upper()}{selection.reason[1:]}, so bitsandbytes asks for "
        f"{selection.expected_file}; the package holds only {', '.join(bnb.native_libraries)}"
        + (f" ({local})" if local else "")
        + ". "
        + effect,
        evidence=[
            ev("selected", f"{selection.expected_file} (missing)", "native.selection.expected_file"),
            ev("shipped", ", ".join(bnb.native_libraries), "python.bitsandbytes.native_libraries"),
            ev("why the CPU backend", selection.reason, "native.selection.reason"),
        ],
        remediation=Remediation(
            "Build the CPU backend too (cmake -DCOMPUTE_BACKEND=cpu in the source checkout, then reinstall it), or "
            "install a released wheel, which ships the CPU library.",
            [] if local else ["pip install --force-reinstall bitsandbytes"],
        ),
        covers=["source_build_native_lib_missing"]
        + (["native_lib_none_attribute_errors"] if NONE_LIBRARY_ATTRIBUTE_ERRORS.contains(bnb.version) else []),
    )
