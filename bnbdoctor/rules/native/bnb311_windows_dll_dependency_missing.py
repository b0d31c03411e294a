"""BNB311 windows-dll-dependency-missing: passes when every DLL the selected bitsandbytes build imports is found by Windows."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.platforms import PYTHON_DLL_PATH_SEARCH_DROPPED
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev
from bnbdoctor.rules.native._shared import _folder, _library_name, _loader_evidence, _native

_NOT_SEARCHED = "PATH (not searched"


@rule(
    Severity.ERROR,
    "Every DLL the selected bitsandbytes build imports is found by Windows",
    needs=("native", "platform"),
    covers=("windows_dll_could_not_find_module",),
    references=(
        "https://docs.python.org/3/library/os.html#os.add_dll_directory",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/639",
    ),
    requires=("library-readable",),
)
def windows_dlls(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `native` and `platform` facts and applies to Windows only. bnbdoctor reads the import table of
    the DLL bitsandbytes will load and resolves every imported DLL the way Windows does for Python's `ctypes` loading a
    full path. The search, in order:

    - DLLs already loaded: those in torch's `lib` folder and its `nvidia-*` wheels;
    - the DLL's own folder and the application folder (the interpreter's folder);
    - `System32`;
    - folders added with `os.add_dll_directory`: torch's `lib` folder, and `Library\bin` in conda environments.

    `api-ms-win-*` API sets and core system DLLs count as present. `PATH` is not searched, but a copy found there is
    recorded, because it explains a common surprise.

    The rule reports every import that nothing resolves. The fix depends on the kind:

    - CUDA DLLs found only on `PATH`: add that folder with `os.add_dll_directory()`;
    - `MSVCP140.dll` or `VCRUNTIME140*.dll`: install the Microsoft Visual C++ Redistributable;
    - other CUDA DLLs: install a CUDA build of torch, which ships them.

    ## Why it matters

    Since Python 3.8, the dependencies of extension modules and of DLLs loaded with `ctypes` are resolved only from the
    application folder, the DLL's own folder, `System32` and folders registered with `os.add_dll_directory()`. The
    `PATH` variable and the current directory no longer count. bitsandbytes never registers a folder itself, so its CUDA
    library finds `cudart64_12.dll`, `cublas64_12.dll` and friends only because torch has already loaded them or
    registered their folder. A CUDA toolkit that is merely on `PATH` does not help.

    When an import is missing, Windows does not say which one:

    ```text
    FileNotFoundError: Could not find module '…\bitsandbytes\libbitsandbytes_cuda121.dll' (or one of its dependencies). Try using the full path with constructor syntax.
    ```

    The file named in the message exists; one of its dependencies does not. This was the classic failure of the
    unofficial Windows builds before {{ platforms.WINDOWS_WHEELS.first_minor }}. It still happens when `BNB_CUDA_VERSION` picks a build of another CUDA major
    than torch's, when the CUDA DLLs live only in a toolkit folder on `PATH`, and on machines without the Visual C++
    runtime. For reference, the 0.50.2 CUDA 13 DLLs import `cublas64_13.dll` and `cublasLt64_13.dll` but no `cudart`
    DLL.

    ## Example notes

    python.org's Python ships `vcruntime140.dll` and `vcruntime140_1.dll` in its installation folder, which bnbdoctor
    does not search when the interpreter is a virtual environment's. On such a machine `MSVCP140.dll` is the one that is
    really missing; the Redistributable supplies all three. When a missing DLL exists in a folder on `PATH`, for example
    a CUDA toolkit's `bin` folder, the evidence shows `on PATH at …`, and the fix asks for that folder to be added with
    `os.add_dll_directory()`.

    ## How to fix

    Check what torch brings and what bitsandbytes wants:

    ```bat
    python -c "import torch; print(torch.__version__, torch.version.cuda)"
    python -c "import os, torch; d = os.path.join(os.path.dirname(torch.__file__), 'lib'); print([f for f in os.listdir(d) if f.startswith(('cudart', 'cublas'))])"
    pip show -f bitsandbytes | findstr libbitsandbytes_
    ```

    - CUDA DLLs missing: install a CUDA build of torch whose CUDA major matches a bitsandbytes build (`pip install torch
      --index-url https://download.pytorch.org/whl/cu128`, for example), then reinstall bitsandbytes.
    - The DLLs exist in a CUDA toolkit folder: register it before the import, in your own code:

      ```python
      import os

      os.add_dll_directory(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v13.0\bin")
      import bitsandbytes
      ```

    - `MSVCP140.dll` / `VCRUNTIME140_1.dll` missing: install the latest Microsoft Visual C++ Redistributable (x64).
    - Unofficial wheels from before {{ platforms.WINDOWS_WHEELS.first_minor }} (`libbitsandbytes_cuda116.dll` and similar): uninstall them and install the
      official release from PyPI.

    ## Further reading

    - https://learn.microsoft.com/windows/win32/dlls/dynamic-link-library-search-order
    - https://github.com/python/cpython/issues/80266 (why Python 3.8 stopped using `PATH` for DLL dependencies)
    """
    native, platform = _native(facts), facts.platform
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    missing = [d for d in native.dependencies if d.resolved is None]
    if not missing:
        return None
    on_path = [d for d in missing if any(c.via.startswith(_NOT_SEARCHED) for c in d.candidates)]
    vc = [d.name for d in missing if d.kind == "cxx_runtime"]
    cuda = [d.name for d in missing if d.kind == "cuda"]
    parts, commands = [], []
    if on_path:
        parts.append(
            f"{', '.join(d.name for d in on_path)} exist on PATH ({_folder(on_path[0].candidates[0].path)}), "
            f"but Python {PYTHON_DLL_PATH_SEARCH_DROPPED}+ does not search PATH for a DLL's dependencies: "
            "add the folder with "
            "os.add_dll_directory() before importing bitsandbytes, or use a torch CUDA build that ships them."
        )
    if vc:
        parts.append("Install the Microsoft Visual C++ Redistributable (x64) for " + ", ".join(vc) + ".")
        commands.append("winget install --id Microsoft.VCRedist.2015+.x64")
    if cuda and not on_path:
        parts.append(
            "Install a CUDA build of torch (it ships " + ", ".join(cuda) + " in torch\\lib) or the matching "
            "CUDA toolkit."
        )
    return Hit(
        title=f"{_library_name(native)} imports {', '.join(d.name for d in missing)}, which Windows cannot find",
        explanation="Windows loads a DLL's imports from already-loaded DLLs, the DLL's own folder, the application "
        "folder, System32 and folders added with os.add_dll_directory. Without them Python raises "
        f"\"Could not find module '…{_library_name(native)}' (or one of its dependencies)\".",
        evidence=[
            ev(
                d.name,
                "not found" + (f"; on PATH at {d.candidates[0].path}" if d.candidates else ""),
                "native.dependencies",
            )
            for d in missing
        ]
        + _loader_evidence(facts),
        remediation=Remediation(" ".join(parts) or "Install the missing DLLs.", commands),
    )
