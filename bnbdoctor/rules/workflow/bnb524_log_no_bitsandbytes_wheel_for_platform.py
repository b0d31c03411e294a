"""BNB524 log-no-bitsandbytes-wheel-for-platform: passes when the log shows pip finding a bitsandbytes it can install."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import (
    CURRENT_MANYLINUX,
    LINUX_AARCH64_WHEELS,
    LINUX_ONLY_WHEEL,
    MACOS_WHEELS,
    WINDOWS_ARM64_WHEELS,
    WINDOWS_WHEELS,
)
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

PIP_TAGS = "pip debug --verbose"
PLATFORM_CHECK = 'python -c "import platform, sys; print(platform.platform(), platform.machine(), sys.version)"'
#: The platforms current releases ship wheels for, as a person names them.
WHEELS = (
    f"Linux x86-64 with glibc {CURRENT_MANYLINUX.glibc_text} or newer ({CURRENT_MANYLINUX.tag}, from "
    f"{CURRENT_MANYLINUX.first}), Windows x86-64 (from {WINDOWS_WHEELS.first_text}), Linux aarch64 (from "
    f"{LINUX_AARCH64_WHEELS.first_text}), macOS 14+ on Apple Silicon (from {MACOS_WHEELS.first_text}) and Windows "
    f"arm64 (from {WINDOWS_ARM64_WHEELS.first_text})"
)


def _newest_offered(text: str) -> str | None:
    """The last release of pip's closed "(from versions: ...)" list; None when the list is cut or absent."""
    found = re.search(r"\(from versions: ([^)]*)\)", text)
    if not found:
        return None
    versions = [v.strip() for v in found.group(1).split(",") if v.strip()]
    return versions[-1] if versions and versions[-1] != "none" else None


def _platform_note(facts: Facts) -> str:
    platform = facts.platform
    if platform is None:
        return ""
    if platform.os == "macos":
        return (
            f" The log shows macOS: bitsandbytes ships macOS wheels only for Apple Silicon on macOS 14+, from "
            f"{MACOS_WHEELS.first_text} on."
        )
    if platform.os == "linux" and platform.libc_version:
        return f" The log shows glibc {platform.libc_version}; the Linux wheels need {CURRENT_MANYLINUX.glibc_text}."
    return ""


FINDING = log.LogFinding(
    (S.PIP_NO_BNB_WHEEL,),
    title="{title}",
    explanation=f"{{why}} Current releases ship wheels for {WHEELS}.{{platform}}",
    fix="Check what pip accepts here (pip debug --verbose lists its tags) and run on a platform bitsandbytes ships "
    "wheels for, with a Python the release supports; drop bitsandbytes from the requirements if you do not load "
    "models in 4-bit or 8-bit, or build it from source.",
    commands=(PIP_TAGS, PLATFORM_CHECK),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows pip finding a bitsandbytes it can install",
    needs=("log",),
    covers=("bnb_no_wheel_for_platform",),
    references=(
        "https://github.com/zai-org/GLM-4/issues/590",
        "https://github.com/snexus/llm-search/issues/121",
        "https://github.com/lllyasviel/Omost/issues/6",
    ),
    confirm=(PIP_TAGS, PLATFORM_CHECK),
)
def no_wheel_for_platform(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on pip refusing a bitsandbytes requirement: `ERROR: Could not find a version that satisfies the
    requirement bitsandbytes...`, `ERROR: No matching distribution found for bitsandbytes...`, and
    `ERROR: bitsandbytes-<version>-py3-none-<tag>.whl is not a supported wheel on this platform`. When pip lists the
    releases it could install (`from versions: ...`), the finding names the newest.

    ## Why it matters

    Up to {{ platforms.LINUX_ONLY_WHEEL.last_text }} bitsandbytes was one `py3-none-any` wheel that pip installs
    anywhere. Every later release is a set of platform wheels: Linux x86-64 `{{ platforms.CURRENT_MANYLINUX.tag }}`
    (glibc {{ platforms.CURRENT_MANYLINUX.glibc_text }} or newer) and Windows x86-64 from
    {{ platforms.WINDOWS_WHEELS.first_text }}, Linux aarch64 from {{ platforms.LINUX_AARCH64_WHEELS.first_text }},
    macOS 14 on Apple Silicon from {{ platforms.MACOS_WHEELS.first_text }}, Windows arm64 from
    {{ platforms.WINDOWS_ARM64_WHEELS.first_text }}. On a platform none of them fits (macOS on Intel, CentOS 7's
    glibc, an older macOS, another architecture) or a Python outside a release's `Requires-Python`, pip's newest
    installable release stays {{ platforms.LINUX_ONLY_WHEEL.last_text }}, so any requirement for a later one fails,
    and a wheel downloaded for another platform is "not a supported wheel".

    ## How to fix

    See what this pip accepts and what the machine is:

    ```bash
    pip debug --verbose
    python -c "import platform, sys; print(platform.platform(), platform.machine(), sys.version)"
    ```

    Run on a platform bitsandbytes ships wheels for, with a Python the release supports. Where bitsandbytes is an
    optional requirement (only 4-bit or 8-bit loading needs it), drop it from the requirements file; otherwise build
    bitsandbytes from source for the platform.
    """
    matches = log.matches(facts, S.PIP_NO_BNB_WHEEL)
    if not matches:
        return None
    wheel = next((m for m in matches if "is not a supported wheel" in m.text), None)
    newest = next((v for v in (_newest_offered(m.text) for m in matches) if v), None)
    if wheel is not None:
        tag = re.search(r"-py3-none-([\w.]+)\.whl", wheel.text)
        title = f"pip refuses the bitsandbytes wheel for {tag.group(1) if tag else 'another platform'} here"
        why = "The wheel's platform tag is not one this pip accepts (another OS or architecture, or an older glibc)."
    elif newest is not None and LINUX_ONLY_WHEEL.contains(newest):
        title = f"pip offers no bitsandbytes newer than {newest} here: later releases have no wheel for this platform"
        why = (
            f"Releases up to {newest} were one py3-none-any wheel that installs anywhere; every later release ships "
            "platform wheels only, and none fits this machine or this Python."
        )
    else:
        title = "pip finds no bitsandbytes release that matches the requirement for this platform"
        why = (
            f"Releases after {LINUX_ONLY_WHEEL.last_text} ship platform wheels only; pip finds none that fits this "
            "machine, this Python and the requirement."
        )
    return FINDING.hit(facts, title=title, why=why, platform=_platform_note(facts))
