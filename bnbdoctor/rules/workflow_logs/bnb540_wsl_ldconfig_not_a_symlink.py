"""BNB540 wsl-ldconfig-not-a-symlink: passes when the log shows no WSL2 ldconfig 'is not a symbolic link' message."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.WSL_LDCONFIG_NOT_SYMLINK,),
    title="WSL2's 'libcuda.so.1 is not a symbolic link' from ldconfig is harmless",
    explanation="WSL2 mounts its driver libraries in /usr/lib/wsl/lib as regular files with the same SONAME "
    "instead of symbolic links; ldconfig warns on every run, but the loader still finds libcuda.so.1. It is not "
    "the cause of a bitsandbytes failure: look at the other findings.",
    fix="Nothing to fix for bitsandbytes.",
    limit=1,
)


@rule(
    Severity.INFO,
    "The log shows no WSL2 ldconfig 'is not a symbolic link' message",
    needs=("log",),
    covers=("wsl_ldconfig_libcuda_not_symlink_noise",),
    references=("https://github.com/microsoft/WSL/issues/5663", "https://github.com/microsoft/WSL/issues/5548"),
)
def wsl_ldconfig_noise(facts: Facts) -> Hit | None:
    """## What it detects

    The rule recognises `ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link` (also from
    `/sbin/ldconfig.real`, for any driver library in `/usr/lib/wsl/lib`), printed on WSL2 by every `apt` or `ldconfig`
    run, and reports it as harmless so that it is never taken for the cause of a failure.

    ## Why it matters

    WSL2 mounts `libcuda.so`, `libcuda.so.1` and `libcuda.so.1.1` as regular files with the same SONAME instead of
    symbolic links. `ldconfig` warns, but the loader finds `libcuda.so.1` normally: the message has nothing to do with
    a bitsandbytes failure. Users who see it next to a real error often chase it instead.

    ## How to fix

    Nothing to fix for bitsandbytes: look at the other findings for the real error. (The warning can be silenced by
    replacing the files with symbolic links, which WSL undoes on restart.)
    """
    return FINDING.hit(facts)
