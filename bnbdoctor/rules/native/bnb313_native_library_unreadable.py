"""BNB313 native-library-unreadable: passes when the selected bitsandbytes library is a readable binary for this platform."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM
from bnbdoctor.knowledge.versions import release_tuple
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev
from bnbdoctor.rules.native._shared import _loader_evidence, _native, format_problem


@rule(
    Severity.ERROR,
    "The selected bitsandbytes library is a readable binary for this platform",
    needs=("native", "platform"),
    covers=("macos_apple_silicon_no_native_lib",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate(
        "a log does not show the library's file format", shows=lambda facts: bool(facts.native and facts.native.format)
    ),
    requires=("release-supports-platform",),
    refutes=("library-readable",),
)
def unreadable(facts: Facts) -> Hit | None:
    """## What it detects

    The rule reads the `native` and `platform` facts. It looks at the one file bitsandbytes will load, after checking
    that the file exists. It reports the file when:

    - it cannot be read, or its header cannot be parsed (truncated download, damaged install, a placeholder);
    - its format is not the platform's: not ELF on Linux, not Mach-O on macOS;
    - it is an ELF file for another architecture, e.g. `EM_X86_64` on an `aarch64` machine.

    On Windows, a folder of Linux `.so` files is left to [BNB312](BNB312.md). When the real load check ran, its message
    is added as evidence.

    ## Why it matters

    The dynamic loader checks the file header before anything else, and a mismatch stops it with a terse message:
    `invalid ELF header`, `file too short`, `wrong ELF class: ELFCLASS32`, or on macOS `not a mach-o file`. bitsandbytes
    turns that into one of its generic load errors, or falls back, depending on the release, and the cause is easy to
    misread as a CUDA problem.

    The usual ways to get there:

    - **Apple silicon with {{ platforms.LINUX_ONLY_WHEEL.last_text }} or older**: those releases shipped only Linux x86-64 `.so` files, installable everywhere
      through a `py3-none-any` wheel. On a Mac, `dlopen` rejects them, bitsandbytes falls back, and every quantized
      operation fails. transformers then reports a misleading error about Accelerate or bitsandbytes not being
      installed. macOS arm64 wheels exist from {{ platforms.MACOS_WHEELS.first_text }}.
    - **aarch64 Linux with {{ platforms.LINUX_ONLY_WHEEL.last_text }} or older** (Graviton, Grace, Ampere servers): the same x86-64 files. aarch64 wheels
      exist from {{ platforms.LINUX_AARCH64_WHEELS.first_text }}.
    - **A damaged file**: an interrupted download, a copy from another machine, a virtual environment moved between
      architectures, a filesystem quota hit during install.

    ## Example notes

    On this machine [BNB204](BNB204.md) also reports that 0.42.0 predates macOS support. Reinstalling the same version
    brings back the same Linux files, so the fix that works here is the upgrade below. An `aarch64` Linux machine with
    0.42.0 gets the same finding as `built for EM_X86_64, this machine is aarch64`.

    ## How to fix

    Look at the file:

    ```bash
    file /path/to/site-packages/bitsandbytes/libbitsandbytes_*
    uname -m
    ```

    - Built for another platform: install a release that has wheels for it. That is {{ platforms.LINUX_AARCH64_WHEELS.first_text }}+ for aarch64 Linux and
      {{ platforms.MACOS_WHEELS.first_text }}+ for Apple silicon (for example `pip install -U "bitsandbytes>={{ platforms.MACOS_WHEELS.first_minor }}"`). On a Mac with an older stack, do
      not request 8-bit or 4-bit loading; use a Mac-native alternative instead.
    - Damaged or truncated: reinstall the same version without the cache:

      ```bash
      pip install --force-reinstall --no-deps --no-cache-dir "bitsandbytes==<version>"
      ```

    - A virtual environment copied from another machine: recreate it on this one.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1378 (no macOS release for 0.44)
    """
    native, platform, bnb = _native(facts), facts.platform, bnb_of(facts)
    assert platform is not None
    if not native.library or not native.selection or not native.selection.exists:
        return None
    problem = format_problem(native, platform.os, platform.arch)
    if problem is None:
        return None
    if platform.os == "windows" and native.format == "ELF":
        return None  # Linux files on Windows: BNB312
    version = bnb.version if bnb else ""
    first = FIRST_RELEASE_FOR_PLATFORM.get((platform.os, platform.arch))
    wrong_platform = native.error is None
    if wrong_platform and first and not (release_tuple(version) or (0,)) >= (release_tuple(first) or (0,)):
        spec = f">={first}"
        fix = Remediation(
            f"This release has no build for {platform.os} {platform.arch}; install {first} or newer.",
            [f'pip install -U "bitsandbytes{spec}"'],
        )
    elif wrong_platform:
        fix = Remediation(
            "Reinstall bitsandbytes from the wheel for this platform (a copied site-packages or a "
            "wheel for another machine holds foreign binaries).",
            [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [],
        )
    else:
        fix = Remediation(
            "Reinstall bitsandbytes: the file is damaged or truncated.",
            [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [],
        )
    return Hit(
        title=f"{native.library} cannot be loaded: {problem}",
        explanation="The file bitsandbytes will load is damaged, truncated, or built for another platform; the "
        "loader rejects it ('invalid ELF header', 'file too short', 'wrong ELF class', 'not a mach-o file').",
        evidence=[
            ev("file", native.library, "native.library"),
            ev("problem", problem, "native.error"),
            *_loader_evidence(facts),
        ],
        remediation=fix,
        # The catalog's family is a Linux library on a Mac; a damaged file, or one for another CPU on
        # Linux, is a failure the catalog has no entry for.
        covers=["macos_apple_silicon_no_native_lib"] if platform.os == "macos" and wrong_platform else [],
    )
