"""BNB509 log-windows-legacy-loader: passes when the log shows no Linux-only bitsandbytes loader failing on Windows."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import WINDOWS_WHEELS
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB, UPGRADE_TO_WINDOWS_WHEELS


# --------------------------------------------------------------------------------- platform and packages
@rule(
    Severity.ERROR,
    "The log shows no Linux-only bitsandbytes loader failing on Windows",
    needs=("log",),
    covers=("windows_path_not_iterable", "windows_linux_so_loaded"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723", BNB_DOCS_INSTALL),
    stands_in_for=("BNB204", "BNB312"),
    confirm=("pip show bitsandbytes", PYTHON_M_BNB),
)
def windows_legacy(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `argument of type 'WindowsPath' is not iterable` and on `[WinError 193] %1 is not a valid Win32
    application` (in any language, e.g. `不是有效的 Win32 应用程序`). It is the log twin of [BNB204](BNB204.md) and
    [BNB312](BNB312.md).

    ## Why it matters

    Before {{ platforms.WINDOWS_WHEELS.first_text }} bitsandbytes had no Windows support: the wheel holds Linux `.so` files and its CUDA setup searches for
    Linux libraries. On Windows it either hands a `WindowsPath` to code expecting a string, or asks `LoadLibrary` to
    load an ELF file. The "Solution" lines it prints (`LD_LIBRARY_PATH`, `find / -name libcudart.so`) are Linux advice
    and do not apply.

    ## How to fix

    Install a release with Windows wheels, or run under WSL2:

    ```bash
    pip install -U "bitsandbytes>={{ platforms.WINDOWS_WHEELS.first_text }}"
    ```
    """
    if not log.seen(facts, S.WINDOWS_PATH_NOT_ITERABLE, S.WINDOWS_LINUX_LIBRARY):
        return None
    crash = log.seen(facts, S.WINDOWS_PATH_NOT_ITERABLE)
    return Hit(
        title=(
            "bitsandbytes' Linux-only loader crashed on a Windows path ('WindowsPath' is not iterable)"
            if crash
            else "Windows refused bitsandbytes' Linux library ([WinError 193])"
        ),
        explanation=f"Before {WINDOWS_WHEELS.first_text} bitsandbytes had no Windows support: the wheel holds Linux "
        ".so files and its CUDA "
        "setup searches for Linux libraries. On Windows "
        + (
            "it hands a WindowsPath to code that expects a string and crashes. "
            if crash
            else "LoadLibrary rejects the ELF file ('%1 is not a valid Win32 application'). "
        )
        + "The 'Solution' lines it prints (LD_LIBRARY_PATH, find / -name libcudart.so) are Linux advice and do not "
        "apply.",
        evidence=log.line_evidence(facts, S.WINDOWS_PATH_NOT_ITERABLE, S.WINDOWS_LINUX_LIBRARY, S.BNB_LIBRARY_SELECTED),
        remediation=Remediation(
            f"Install a release with Windows wheels ({WINDOWS_WHEELS.first_text} or newer), or run under WSL2.",
            [UPGRADE_TO_WINDOWS_WHEELS],
        ),
        covers=(["windows_path_not_iterable"] if crash else [])
        + (["windows_linux_so_loaded"] if log.seen(facts, S.WINDOWS_LINUX_LIBRARY) else []),
    )
