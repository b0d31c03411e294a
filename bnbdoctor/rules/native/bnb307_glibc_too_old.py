"""BNB307 glibc-too-old: passes when the system glibc defines every GLIBC_ version bitsandbytes needs."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.loader import GLIBC_234_BUILDS
from bnbdoctor.knowledge.ranges import full, minor
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, unknown_version, versioned
from bnbdoctor.rules.native._shared import GLIBC_NAMESPACES, _abi_hits, _library_name, _loader_evidence, _native


@rule(
    Severity.ERROR,
    "The system glibc defines every GLIBC_ version bitsandbytes needs",
    needs=("native", "platform"),
    covers=("glibc_2_34_not_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1610",),
    requires=("library-readable",),
)
def glibc(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule reads the `native` and `platform` facts and applies to Linux only. It collects the `GLIBC_` symbol versions
    the selected bitsandbytes library needs from `libc.so.6`, `libm.so.6`, `libpthread.so.0`, `libdl.so.2` and
    `librt.so.1`. It compares them with the versions the system glibc defines, taken from the library file itself, or
    from the glibc version when the file cannot be read. It reports one finding listing every missing version.

    When the installed release is {{ loader.GLIBC_234_BUILDS.releases.last_text }} and the selected library is the CUDA {{ loader.GLIBC_234_BUILDS.cuda.0 }} or {{ loader.GLIBC_234_BUILDS.cuda.1 }} build, the finding names the
    known packaging problem and suggests {{ loader.GLIBC_234_BUILDS.releases.below_full }} or newer. Otherwise it says the build needs a newer glibc than this
    system has.

    ## Why it matters

    glibc is never bundled: a library built against glibc {{ loader.GLIBC_234_BUILDS.glibc }} cannot load on a system with glibc 2.31, whatever else is
    installed. The loader stops with:

    ```text
    OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by …/bitsandbytes/libbitsandbytes_cuda126.so)
    ```

    bitsandbytes' Linux wheels are tagged `manylinux_2_24` and the docs name glibc {{ platforms.CURRENT_MANYLINUX.glibc_text }} as the minimum. The wheels
    inspected need at most `GLIBC_2.4`, with two exceptions:

    - **{{ loader.GLIBC_234_BUILDS.releases.last_text }}, CUDA {{ loader.GLIBC_234_BUILDS.cuda.0 }} and {{ loader.GLIBC_234_BUILDS.cuda.1 }} builds**: they bind `dlopen`, `dlsym` and `dlclose` at `GLIBC_2.34`. The maintainers
      confirmed that these builds ended up requiring more than the intended manylinux {{ platforms.CURRENT_MANYLINUX.glibc_text }}. Ubuntu 20.04 (glibc 2.31)
      and RHEL/Rocky 8 (glibc 2.28) fail as soon as torch is a cu126 or cu128 build. {{ loader.GLIBC_234_BUILDS.releases.below_full }} restored support for older
      glibc.
    - **XPU builds** ({{ loader.XPU_LIBRARY.first_text }}+): the docs state glibc 2.34 as their minimum; the inspected libraries need `GLIBC_2.32`.

    In {{ loader.GLIBC_234_BUILDS.releases.last_text }} a load error leaves the library unset. The import still succeeds, and the first quantized call fails with
    `AttributeError: 'NoneType' object has no attribute 'cint8_vector_quant'`, far from the cause.

    ## How to fix

    Check the system's glibc and the library's needs:

    ```bash
    ldd --version | head -n 1
    objdump -T /path/to/site-packages/bitsandbytes/libbitsandbytes_cudaXYZ.so | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1
    ```

    - {{ loader.GLIBC_234_BUILDS.releases.last_text }} with a cu126/cu128 torch: upgrade bitsandbytes to {{ loader.GLIBC_234_BUILDS.releases.below_full }} or newer, which supports older glibc again.
    - If you must keep {{ loader.GLIBC_234_BUILDS.releases.last_text }}: use a torch build for CUDA {{ loader.GLIBC_234_BUILDS.older_torch_cuda }} or older, so that the `cuda124` library is selected.
    - Any other build that needs a newer glibc than the system has: build bitsandbytes from source on this machine, run
      in a container with a newer base image, or upgrade the OS. Replacing the system glibc by hand breaks the machine;
      do not.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation (minimum glibc versions)
    """
    native, bnb, platform = _native(facts), bnb_of(facts), facts.platform
    assert platform is not None
    if platform.os != "linux":
        return Skip("glibc applies to Linux only")
    missing_all: list[str] = []
    for _library, missing, _need in _abi_hits(facts, GLIBC_NAMESPACES):
        missing_all.extend(m for m in missing if m not in missing_all)
    if not missing_all:
        return []
    lib = _library_name(native)
    release = release_tuple(bnb.version) if bnb else None
    mislinked = GLIBC_234_BUILDS
    if mislinked.releases.contains(release) and mislinked.affects(lib):
        fixed_in = full(mislinked.releases.below_text)
        fix = (
            f"The {minor(mislinked.releases.first_text)}.x CUDA {'/'.join(mislinked.cuda)} builds were linked "
            f"against glibc {mislinked.glibc} by mistake; {fixed_in} fixed it. Upgrade bitsandbytes, or use a torch "
            f"build for CUDA {mislinked.older_torch_cuda} or older with this release."
        )
        commands = [f'pip install -U "bitsandbytes>={fixed_in}"']
    else:
        fix = (
            f"This glibc ({platform.libc_version or unknown_version(facts)}) is older than the build needs. Use a bitsandbytes build made "
            "for older systems, build from source on this machine, or move to a newer OS."
        )
        commands = []
    return [
        Hit(
            title=f"{versioned(facts, 'glibc', platform.libc_version)} lacks {', '.join(missing_all)} (needed by {lib})",
            explanation=f"{lib} needs {', '.join(missing_all)} from libc.so.6, but this system's glibc is "
            f'{platform.libc_version or "older than that"}: dlopen fails with "version `{missing_all[0]}\' not found".',
            evidence=[
                ev("glibc", platform.libc_version, "platform.libc_version"),
                ev("needs", ", ".join(missing_all), "native.version_needs"),
                *_loader_evidence(facts),
            ],
            remediation=Remediation(fix, commands),
        )
    ]
