"""BNB517 log-windows-dll-not-loaded: passes when the log shows no bitsandbytes DLL that Windows could not load."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import PYTHON_DLL_PATH_SEARCH_DROPPED, WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, UPGRADE_TO_WINDOWS_WHEELS

FINDING = log.LogFinding(
    (S.WINDOWS_DLL_NOT_LOADED,),
    title="Windows could not load {name} or one of the DLLs it imports",
    explanation="The file is usually there: what fails is a DLL it imports, typically the CUDA runtime or cuBLAS of "
    f"the CUDA version the build was made for. Python {PYTHON_DLL_PATH_SEARCH_DROPPED}+ no longer searches PATH for a "
    f"DLL's dependencies, so a CUDA toolkit on PATH does not help. Releases before {minor(WINDOWS_WHEELS.first_text)} "
    "had no official Windows build; community DLLs each expect one specific CUDA version.",
    fix=f"Install the official Windows wheels (bitsandbytes {WINDOWS_WHEELS.first_text} or newer), which use the CUDA "
    "libraries torch ships. With a community build, install the CUDA runtime it was built for and do not mix it with "
    "another CUDA version.",
    commands=(UPGRADE_TO_WINDOWS_WHEELS,),
    also_quoted=(S.CUDA_RUNTIME_PATH,),
)


@rule(
    Severity.ERROR,
    "The log shows no bitsandbytes DLL that Windows could not load",
    needs=("log",),
    covers=("windows_dll_could_not_find_module",),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/639",
        "https://docs.python.org/3/library/os.html#os.add_dll_directory",
    ),
    stands_in_for=("BNB311",),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def windows_dll(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `Could not find module '…libbitsandbytes_cudaXYZ.dll' (or one of its dependencies). Try using the
    full path with constructor syntax.` (When the missing DLL is `libbitsandbytes_cpu.dll`, nothing was compiled and
    [BNB309](BNB309.md) reports it.) It is the log twin of [BNB311](BNB311.md).

    ## Why it matters

    The DLL itself is usually there: what fails is a DLL it imports, typically the CUDA runtime or cuBLAS of the CUDA
    version it was built for. Python 3.8+ does not search `PATH` for a DLL's dependencies, so a CUDA toolkit on `PATH`
    does not help. Releases before {{ platforms.WINDOWS_WHEELS.first_minor }} had no official Windows build; each community DLL expects one specific CUDA
    version.

    ## How to fix

    Install the official Windows wheels, which use the CUDA libraries torch ships:

    ```bash
    pip install -U "bitsandbytes>={{ platforms.WINDOWS_WHEELS.first_text }}"
    ```

    With a community build, install the CUDA runtime it was built for and do not mix it with another CUDA version.
    """
    first = log.first(facts, S.WINDOWS_DLL_NOT_LOADED)
    if first is None:
        return None
    quoted = first.text.split("'")
    return FINDING.hit(facts, name=quoted[1].replace("/", "\\").rsplit("\\", 1)[-1] if len(quoted) >= 3 else "the DLL")
