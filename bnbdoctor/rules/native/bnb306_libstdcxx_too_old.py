"""BNB306 libstdcxx-too-old: passes when the libstdc++ / libgcc_s the loader picks define every version bitsandbytes needs."""

from __future__ import annotations

from bnbdoctor.derive import conda_env
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev
from bnbdoctor.rules.native._shared import (
    RUNTIME_NAMESPACES,
    _abi_hits,
    _folder,
    _library_name,
    _loader_evidence,
    _native,
)

#: Where BNB306 puts a conda-forge C++ runtime for an interpreter that is not a conda env.
RUNTIME_ENV = "$HOME/.local/share/bnbdoctor/cxx-runtime"


@rule(
    Severity.ERROR,
    "The libstdc++ / libgcc_s the loader picks define every version bitsandbytes needs",
    needs=("native",),
    covers=("cxxabi_not_found", "glibcxx_not_found"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/957",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1663",
        "https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html",
    ),
    requires=("library-readable",),
)
def libstdcxx(facts: Facts) -> list[Hit]:
    """## What it detects

    The rule reads the `native` facts. The selected bitsandbytes library lists, in its `.gnu.version_r` section, the
    symbol versions it needs from `libstdc++.so.6` and `libgcc_s.so.1` (`GLIBCXX_3.4.22`, `CXXABI_1.3.9`, `GCC_3.0`, …).
    bnbdoctor reads the `.gnu.version_d` section of the copy the loader will pick and compares the names exactly, as the
    loader does. The rule reports one finding per runtime library that lacks a needed `GLIBCXX_`, `CXXABI_` or `GCC_`
    version.

    It also checks every other copy of that library it knows of (other search results, conda environments, toolkit
    folders) and names those that would satisfy the need. The fix depends on what it found:

    - another copy defines everything: put its folder first on the loader path;
    - the winner is the conda environment's own C++ runtime, which bnbdoctor treats as already loaded by the
      interpreter: update it in the environment, or preload the newer copy;
    - no copy is new enough: install a newer `libstdc++` (conda-forge), move to a newer OS, or build bitsandbytes
      locally.

    ## Why it matters

    A C++ library compiled with a newer GCC needs symbol versions that an older `libstdc++` does not define. `dlopen`
    then fails before any bitsandbytes code runs:

    ```text
    OSError: /lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by …/bitsandbytes/libbitsandbytes_cuda117.so)
    ```

    What the PyPI libraries need (highest version per namespace):

    | release (wheels inspected) | CUDA libraries | other builds |
    |---|---|---|
    | 0.41.1, 0.42.0 | `GLIBCXX_3.4.21`, `CXXABI_1.3.9` (GCC 5 or newer) | CPU: `GLIBCXX_3.4.21` |
    | 0.43.3 – 0.49.2 | `GLIBCXX_3.4.22`, `CXXABI_1.3.9` | CPU the same; 0.48.2 XPU and 0.49.2 ROCm: `GLIBCXX_3.4.29` |
    | 0.50.2 | `GLIBCXX_3.4.11`, `CXXABI_1.3.9` | XPU: `CXXABI_1.3.13` |

    The two common victims:

    - **CentOS/RHEL 7**: the system `libstdc++` comes from GCC 4.8 and stops at `GLIBCXX_3.4.19` and `CXXABI_1.3.7`.
      Enabling a newer `devtoolset` compiler does not help, because it does not replace the runtime library. These
      systems also cannot install the `manylinux_2_24` wheels of {{ platforms.CURRENT_MANYLINUX.first_minor }}+, so they are stuck on the older releases.
    - **conda environments**: the environment's own `libstdc++.so.6` can be older than both the system's and what
      bitsandbytes needs. It is the copy the process uses, so the error names `$CONDA_PREFIX/lib/libstdc++.so.6` (for
      example ``version `GLIBCXX_3.4.32' not found`` with source builds).

    ## Example notes

    On `conda-old-libstdcxx` (a conda environment whose `libstdc++` stops at `GLIBCXX_3.4.29`, with a bitsandbytes built
    by GCC 12) the winner is the environment's own copy. The finding then names `/lib/x86_64-linux-gnu/libstdc++.so.6`
    under `would satisfy`, and suggests `conda install -c conda-forge "libstdcxx-ng>=12"` or `LD_PRELOAD` of the system
    copy.

    ## How to fix

    See what each copy defines:

    ```bash
    ldconfig -p | grep 'libstdc++.so.6'
    strings /lib64/libstdc++.so.6 | grep -E '^(GLIBCXX|CXXABI)_' | sort -V | tail -n 4
    [ -n "$CONDA_PREFIX" ] && strings "$CONDA_PREFIX/lib/libstdc++.so.6" | grep -E '^GLIBCXX_' | sort -V | tail -n 1
    ```

    - A newer copy exists (the finding names it): put its folder first on `LD_LIBRARY_PATH`, or preload it with
      `LD_PRELOAD=/path/to/libstdc++.so.6` for this program only.
    - The conda environment's copy is the old one: update it inside the environment, e.g. `conda install -c conda-forge
      "libstdcxx-ng>=12"`.
    - The system copy is the only one (CentOS 7): install a newer `libstdc++` with conda and put `$CONDA_PREFIX/lib`
      first on `LD_LIBRARY_PATH`, or move to a supported OS. Building bitsandbytes from source with the local toolchain
      also works.
    - A self-built bitsandbytes: build it with the same compiler generation as the runtime it will meet, or ship that
      runtime with it.

    ## Further reading

    - https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html (which GCC release introduced each `GLIBCXX_`/`CXXABI_`
      version)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/70 (CentOS 7, `CXXABI_1.3.9`)
    - https://github.com/ROCm/legacy-rocm-build/issues/3132 (conda's `libstdc++` shadowing the system copy)
    """
    native = _native(facts)
    hits = []
    for library, missing, need in _abi_hits(facts, RUNTIME_NAMESPACES):
        provider = need.provider or library
        dep = next((d for d in native.dependencies if d.name == library), None)
        conda = dep is not None and dep.via == "C++ runtime already loaded in the conda env"
        have = ", ".join(f"{v}" for k, v in sorted(need.provider_max.items()) if k in RUNTIME_NAMESPACES)
        alternatives = list(need.satisfied_by)
        commands = []
        if alternatives:
            folder = _folder(alternatives[0])
            fix = f"{alternatives[0]} defines every needed version. "
            if conda:
                fix += (
                    "The conda env's own libstdc++ is loaded first, so update it in the env (or preload the newer one)."
                )
                commands = ['conda install -c conda-forge "libstdcxx-ng>=12"', f"export LD_PRELOAD={alternatives[0]}"]
            else:
                fix += "Put its folder first on the loader path."
                commands = [f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH"]
        elif conda_env(facts):
            fix = (
                "No libstdc++ on this machine is new enough. Install a newer one in this conda env "
                "(conda-forge libstdcxx-ng) and put $CONDA_PREFIX/lib first on LD_LIBRARY_PATH, or move to a "
                "newer OS; building bitsandbytes from source with the local compiler also works."
            )
            commands = [
                'conda install -c conda-forge "libstdcxx-ng>=12"',
                "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH",
            ]
        else:
            fix = (
                "No libstdc++ on this machine is new enough. Get a newer one from conda-forge into a folder of its "
                "own (a conda env used only for its libraries; your Python env stays as it is) and put its lib "
                "folder first on LD_LIBRARY_PATH, or move to a newer OS; building bitsandbytes from source with "
                "the local compiler also works."
            )
            commands = [
                f'conda create -y -p {RUNTIME_ENV} -c conda-forge "libstdcxx-ng>=12"',
                f"export LD_LIBRARY_PATH={RUNTIME_ENV}/lib:$LD_LIBRARY_PATH",
            ]
        hits.append(
            Hit(
                title=f"{provider} lacks {', '.join(missing)} (needed by {_library_name(native)})",
                explanation=f"{_library_name(native)} was built with a newer GCC and needs {', '.join(missing)} from "
                f"{library}; the copy the loader picks ({dep.via if dep else 'unknown'}) stops at {have or 'older versions'}"
                + (" — the conda env's older libstdc++ shadows the system one" if conda else "")
                + f'. dlopen fails with "{provider}: version `{missing[0]}\' not found (required by …)".',
                evidence=[
                    ev(library, f"{provider} ({dep.via if dep else 'unknown'})", "native.abi"),
                    ev("defines up to", have or "unknown", "native.abi.provider_max"),
                    ev("needs", ", ".join(need.required), "native.version_needs"),
                ]
                + [ev("would satisfy", a, "native.abi.satisfied_by") for a in alternatives]
                + _loader_evidence(facts),
                remediation=Remediation(fix, commands),
                # CXXABI_ versions are the CXXABI family; GLIBCXX_ (and libgcc_s's GCC_) the GLIBCXX one.
                covers=[
                    *(["cxxabi_not_found"] if any(m.startswith("CXXABI_") for m in missing) else []),
                    *(["glibcxx_not_found"] if any(not m.startswith("CXXABI_") for m in missing) else []),
                ],
            )
        )
    return hits
