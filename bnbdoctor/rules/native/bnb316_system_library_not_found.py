"""BNB316 system-library-not-found: passes when every C/C++ runtime library the selected bitsandbytes build needs is found by the loader."""

from __future__ import annotations

from bnbdoctor.facts import Facts, ResolvedDependency
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.loader import CPU_LIBRARY_NEEDS_OPENMP, XPU_PER_ONEAPI_YEAR
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev
from bnbdoctor.rules.native._shared import (
    _library_name,
    _loader_evidence,
    _native,
    _not_found_hit,
    _unresolved,
)


def _sycl_mismatch(facts: Facts, deps: list[ResolvedDependency]) -> Hit:
    """BNB316's branch for an XPU library linked against another SYCL/oneAPI runtime major than the installed one."""
    native, bnb = _native(facts), bnb_of(facts)
    needed = ", ".join(d.name for d in deps)
    present = sorted({p.rsplit("/", 1)[-1] for d in deps for p in d.other_sonames})
    versioned_xpu = XPU_PER_ONEAPI_YEAR.contains(bnb.version if bnb else None)
    return Hit(
        title=f"{_library_name(native)} needs {needed}, but this oneAPI runtime provides {', '.join(present)}",
        explanation=f"The XPU library is linked against one SYCL/oneAPI runtime major ({needed}); the runtime "
        f"installed here (torch's XPU wheels or the oneAPI toolkit) is another one ({', '.join(present)}). The "
        "loader matches the SONAME exactly, so loading fails; bitsandbytes then falls back to a mock library and "
        "the error appears later, as a RuntimeError at the first native call.",
        evidence=[
            ev(d.name, f"not found; present instead: {', '.join(d.other_sonames)}", "native.dependencies") for d in deps
        ]
        + _loader_evidence(facts),
        remediation=Remediation(
            (
                "Install the oneAPI runtime this XPU library was built for, or a torch XPU build that brings it."
                if versioned_xpu
                else f"Upgrade bitsandbytes: {XPU_PER_ONEAPI_YEAR.first_text}+ ships one XPU library per oneAPI year "
                "and loads the one for the runtime torch uses; or install the oneAPI runtime this library was built "
                "for."
            ),
            [
                f"ldd {native.library or _xpu_library_glob(facts)} | grep -i sycl",
                *([] if versioned_xpu else [f'pip install -U "bitsandbytes{XPU_PER_ONEAPI_YEAR.pip_spec()}"']),
            ],
        ),
        covers=["xpu_sycl_runtime_mismatch"],
    )


def _xpu_library_glob(facts: Facts) -> str:
    bnb = bnb_of(facts)
    return f"{bnb.location if bnb and bnb.location else '<site-packages>/bitsandbytes'}/libbitsandbytes_xpu*.so"


@rule(
    Severity.ERROR,
    "Every C/C++ runtime library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=("xpu_sycl_runtime_mismatch",),
    references=(
        "https://man7.org/linux/man-pages/man8/ld.so.8.html",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/releases",
    ),
    requires=("library-readable",),
)
def system_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `platform` facts and applies to Linux only; [BNB311](BNB311.md) handles Windows
    imports. Among the libraries the selected bitsandbytes library needs, it takes everything that is not a CUDA or ROCm
    library and reports those the loader's search cannot find. That covers the C and C++ runtimes (`libstdc++.so.6`,
    `libgcc_s.so.1`, `libgomp.so.1`), glibc's parts (`libm.so.6`, `librt.so.1`, …), and any other dependency.

    For the GNU OpenMP, C++ and GCC runtimes, the fix names the distribution packages that provide them. The search and
    the places bnbdoctor looks outside it are the same as for [BNB303](BNB303.md).

    ## Why it matters

    These libraries are part of every normal Linux installation, so their absence is surprising and the message is
    short:

    ```text
    OSError: libgomp.so.1: cannot open shared object file: No such file or directory
    ```

    The usual cause is **OpenMP in minimal images**. From {{ loader.CPU_LIBRARY_NEEDS_OPENMP.first_text }} the CPU library `libbitsandbytes_cpu.so` links
    `libgomp.so.1`. Slim container images and minimal cloud images do not always install the GNU OpenMP runtime. A copy
    of OpenMP that ships inside torch's wheel under a private file name does not satisfy bitsandbytes' dependency, which
    asks for `libgomp.so.1` by name. The CPU library is the one loaded on every machine without a usable GPU, so
    CPU-only CI jobs and containers are where this shows up. The CUDA libraries of {{ loader.CUDA_LIBRARY_NEEDS_GLIBC_PARTS.first_text }}+ also link `librt`, `libpthread`
    and `libdl`, which glibc provides everywhere.

    Less often: a container built from `scratch` or a distroless image that lacks `libstdc++`, or a musl-based image
    (Alpine), where glibc's libraries do not exist at all. bitsandbytes' wheels are built for glibc only.

    The Intel XPU libraries also depend on oneAPI runtime libraries (`libsycl.so`, `libsvml.so`, `libimf.so`, …). They
    are reported here too, but they come from Intel's oneAPI runtime, not from the system package manager. When the
    needed SONAME is missing but the same library is present under another one (`libsycl.so.8` needed, `libsycl.so.9`
    installed: the XPU library was built against another oneAPI release), the finding says so (catalog
    `xpu_sycl_runtime_mismatch`): bitsandbytes then falls back to a mock library and fails at the first native call.
    {{ loader.XPU_PER_ONEAPI_YEAR.first_text }}+ ship one XPU library per oneAPI year (`libbitsandbytes_xpu2025`, `…xpu2026`).

    ## How to fix

    Confirm what is missing:

    ```bash
    ldd /path/to/site-packages/bitsandbytes/libbitsandbytes_cpu.so | grep 'not found'
    ```

    - Install the runtime with the system package manager, in the image's build step for containers:

      ```bash
      apt-get update && apt-get install -y libgomp1        # Debian, Ubuntu
      dnf install -y libgomp                               # RHEL, Rocky, Fedora
      ```

    - `libstdc++.so.6` or `libgcc_s.so.1` missing: install `libstdc++6` / `libgcc-s1` (Debian, Ubuntu) or `libstdc++` /
      `libgcc` (RHEL family). If they exist but are too old, see [BNB306](BNB306.md).
    - Alpine or other musl systems: use a glibc-based image; the PyPI wheels do not support musl.
    - XPU builds: install Intel's oneAPI runtime for the release torch was built with.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    native = _native(facts)
    if facts.platform and facts.platform.os != "linux":
        return Skip("Linux only (Windows imports are checked by BNB311)")
    oneapi = _unresolved(native, ("oneapi",))
    other_major = [d for d in oneapi if d.other_sonames]
    if other_major:
        return _sycl_mismatch(facts, other_major)
    if oneapi:
        return Hit(
            title=f"{_library_name(native)} needs Intel oneAPI runtime libraries the loader cannot find: "
            f"{', '.join(d.name for d in oneapi)}",
            explanation="The XPU builds link the SYCL/oneAPI runtime (libsycl, libsvml, libimf, …), which comes with "
            "the oneAPI toolkit or the runtime wheels torch's XPU build depends on; it is not a system package.",
            evidence=[ev(d.name, "not found", "native.dependencies") for d in oneapi] + _loader_evidence(facts),
            remediation=Remediation(
                "Source the oneAPI environment before Python, or install the runtime wheels.",
                ["source /opt/intel/oneapi/setvars.sh", "pip install intel-sycl-rt intel-cmplr-lib-rt"],
            ),
            covers=[],
        )
    missing = _unresolved(native, ("cxx_runtime", "libc", "other"))
    if not missing:
        return None
    hints = {
        "libgomp.so.1": "the GNU OpenMP runtime (Debian/Ubuntu: libgomp1; RHEL: libgomp)",
        "libstdc++.so.6": "the GNU C++ runtime (libstdc++6 / libstdc++)",
        "libgcc_s.so.1": "the GCC runtime (libgcc-s1 / libgcc)",
    }
    wanted = [hints[d.name] for d in missing if d.name in hints]
    return _not_found_hit(
        facts,
        missing,
        "These are ordinary system runtime libraries; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'. The CPU build of {CPU_LIBRARY_NEEDS_OPENMP.first_text}+ "
        "also needs OpenMP "
        "(libgomp.so.1), which slim container images often lack.",
        Remediation(
            "Install "
            + ("; ".join(wanted) if wanted else "the missing runtime libraries")
            + " with the system package manager.",
            [],
        ),
        covers=[],
    )
