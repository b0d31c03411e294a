"""BNB303 cuda-library-not-found: passes when every CUDA library the selected bitsandbytes build needs is found by the loader."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts, ResolvedDependency
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import SUFFIXED_WHEEL_MAJORS
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev
from bnbdoctor.rules.native._shared import (
    _folder,
    _library_path_export,
    _native,
    _not_found_hit,
    _unresolved,
)

#: pip wheels that bring each CUDA library (the same ones torch's CUDA wheels depend on).
_CUDA_WHEELS = {
    "cudart": "nvidia-cuda-runtime",
    "cublas": "nvidia-cublas",
    "cublasLt": "nvidia-cublas",
    "cusparse": "nvidia-cusparse",
    "nvJitLink": "nvidia-nvjitlink",
}


def _wheel_for(name: str) -> str | None:
    """The pip wheel that ships a CUDA library: nvidia-*-cu11/-cu12; CUDA 13's are unsuffixed."""
    match = re.match(r"lib(cudart|cublasLt|cublas|cusparse|nvJitLink)\.so\.(\d+)", name)
    if not match:
        return None
    base = _CUDA_WHEELS[match.group(1)]
    return f"{base}-cu{match.group(2)}" if match.group(2) in SUFFIXED_WHEEL_MAJORS else base


def _missing_library_families(facts: Facts, missing: list[ResolvedDependency]) -> list[str]:
    """A missing runtime is the legacy setup's 'libcudart.so not found' on releases that run it; any other
    CUDA library the chosen binary links (cuBLAS, cuSPARSE, nvJitLink; a runtime on current releases) is
    the "CUDA library for the chosen binary missing" family."""
    bnb = bnb_of(facts)
    legacy = bool(bnb and bnb.installed and (bnb.legacy_cuda_setup or LEGACY_CUDA_SETUP.contains(bnb.version)))
    ids = []
    if any(not d.name.startswith(("libcudart", "cudart")) for d in missing) or not legacy:
        ids.append("cuda_shared_lib_missing_libcusparse")
    if legacy and any(d.name.startswith(("libcudart", "cudart")) for d in missing):
        ids.append("libcudart_not_found_legacy_cuda_setup")
    return ids


@rule(
    Severity.ERROR,
    "Every CUDA library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=("libcudart_not_found_legacy_cuda_setup", "cuda_shared_lib_missing_libcusparse"),
    references=("https://man7.org/linux/man-pages/man8/ld.so.8.html", BNB_DOCS_INSTALL),
    requires=("library-readable", "override-fits-torch"),
)
def cuda_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `platform` facts. It is skipped on Windows, where [BNB311](BNB311.md) checks DLL
    imports. bnbdoctor reads the `DT_NEEDED` entries of the library bitsandbytes will load and resolves each one the way
    the dynamic loader would. The rule reports the CUDA libraries among them (`libcudart`, `libcublas`, `libcublasLt`,
    `libcusparse`, `libnvJitLink`) that no step of the search finds.

    The search, in order: libraries torch has already loaded, `LD_LIBRARY_PATH`, the library's `RUNPATH`,
    `/etc/ld.so.cache` and the default directories (details in [the native chain](../native-chain.md)). For each missing
    library bnbdoctor also looks outside that search: CUDA toolkit folders, torch's `nvidia-*` wheel folders,
    `/opt/rocm/lib`, `/usr/lib/wsl/lib` and `$CONDA_PREFIX/lib`. Whatever it finds there becomes the fix:

    - the file exists in a folder the loader does not search: add that folder to `LD_LIBRARY_PATH`;
    - it exists nowhere: install the matching pip wheels (`nvidia-cuda-runtime-cu11`, `nvidia-cublas-cu12`, …).

    When the real load check ran, the loader's own message is quoted as evidence.

    ## Why it matters

    A bitsandbytes CUDA library is linked against one CUDA major: `libcudart.so.11.0` or `libcudart.so.12`, the matching
    cuBLAS, and up to {{ loader.CUDA_LIBRARY_NEEDS_CUSPARSE.last_text }} also cuSPARSE. It usually works because torch has already loaded libraries with exactly those
    SONAMEs before bitsandbytes is imported. It fails when:

    - bitsandbytes' build belongs to another CUDA major than the libraries on the machine, for example a cu11x library
      on a system with only CUDA 12 (`libcusparse.so.11: cannot open shared object file`);
    - torch is not a CUDA build, or loads no library with that SONAME, and the system has no toolkit on the loader path;
    - a toolkit is installed in a version folder (`/usr/local/cuda-11.8`) that is neither registered with `ldconfig` nor
      on `LD_LIBRARY_PATH`.

    The loader reports the first missing name: `OSError: libcudart.so.11.0: cannot open shared object file: No such file
    or directory`. The legacy setup of {{ loader.LEGACY_LIBCUDART_SEARCH_MESSAGES.first_text }}–{{ loader.LEGACY_LIBCUDART_SEARCH_MESSAGES.last_text }} wrapped this in its own search messages (`libcudart.so not found in any
    environmental path`). That search only fed messages: the file was still resolved by the dynamic loader, which is
    what this rule models.

    ## Example notes

    Here torch 2.0.1+cu118 from download.pytorch.org carries its CUDA libraries under hashed file names, so nothing with
    the SONAME `libcudart.so.11.0` is preloaded, and the CUDA 11.8 toolkit in `/usr/local/cuda-11.8` is on no search
    path.

    ## How to fix

    Ask the loader directly, then compare the major versions it wants with torch's. `ldd` does not know what torch
    preloads, so its `not found` matters only for libraries torch does not load either:

    ```bash
    ldd /path/to/site-packages/bitsandbytes/libbitsandbytes_cudaXYZ.so | grep 'not found'
    python -c "import torch; print(torch.version.cuda)"
    ldconfig -p | grep -E 'libcudart|libcublas'
    ```

    - The library exists in a folder outside the search: add that folder to `LD_LIBRARY_PATH` (in the shell profile or
      job script), or register it with `ldconfig` (a file in `/etc/ld.so.conf.d/`, then `sudo ldconfig`).
    - The major version is wrong for this machine: install torch and bitsandbytes for the CUDA you actually have. A
      current bitsandbytes with a cu12x torch wheel needs no system CUDA at all.
    - Nothing on the machine has it: install the libraries as pip wheels for that major (e.g. `pip install
      nvidia-cusparse-cu11`) and put their `lib` folder on `LD_LIBRARY_PATH`. A CUDA build of torch brings them and
      preloads them itself.
    - Legacy releases (up to {{ loader.LEGACY_CUDA_SETUP.last_text }}): upgrade; their CUDA setup messages do not reflect how the library is really loaded
      ([BNB205](BNB205.md)).

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (search order for `DT_NEEDED` entries)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/60 (`libcublas.so.11: cannot open shared object
      file`)
    """
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("cuda",))
    if not missing:
        return None
    names = ", ".join(d.name for d in missing)
    commands, hints = [], []
    folders = []
    for dep in missing:
        if dep.elsewhere:
            folder = _folder(dep.elsewhere[0])
            if folder not in folders:
                folders.append(folder)
            hints.append(f"{dep.name} exists in {folder}, which is not on the loader path")
    if folders:
        commands.append(_library_path_export(folders))
    wheels = sorted({w for d in missing if not d.elsewhere and (w := _wheel_for(d.name))})
    if wheels:
        commands.append("pip install " + " ".join(wheels))
    fix = (
        ("; ".join(hints) + ". " if hints else "")
        + ("Add that folder to LD_LIBRARY_PATH (persist it in your shell profile). " if folders else "")
        + (
            "The simplest fix is a CUDA build of torch, which brings these libraries and loads them before "
            "bitsandbytes. Installing the wheels alone also needs their lib folders (site-packages/nvidia/*/lib) on "
            "LD_LIBRARY_PATH."
            if wheels
            else ""
        )
    )
    return _not_found_hit(
        facts,
        missing,
        "The library's DT_NEEDED entries are resolved by SONAME: torch's already-loaded copies, then "
        f"{', '.join(s for s in native.search_order[1:])}. None of them has {names}, so loading fails with "
        f"'{missing[0].name}: cannot open shared object file: No such file or directory'.",
        Remediation(fix.strip(), commands),
        searched=(ev("searched", " → ".join(native.search_order), "native.search_order"),),
        covers=_missing_library_families(facts, missing),
    )
