"""BNB204 bitsandbytes-too-old-for-platform: passes when the installed bitsandbytes release supports this OS and architecture."""

from __future__ import annotations

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM
from bnbdoctor.knowledge.versions import at_least
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, versioned

#: What a release without a library for the OS shows there. Windows has no libcuda.so, so the legacy
#: loader also reports "No GPU detected"; on Linux (aarch64 and other non-x86 arches) no CUDA library
#: of the release fits, so it loads the CPU one ("compiled without GPU support").
_PLATFORM_FAMILIES: dict[str, tuple[str, ...]] = {
    "windows": ("windows_path_not_iterable", "windows_linux_so_loaded", "no_gpu_detected_cpu_fallback"),
    "macos": ("macos_apple_silicon_no_native_lib",),
}


@rule(
    Severity.ERROR,
    "The installed bitsandbytes release supports this OS and architecture",
    needs=("python", "platform"),
    covers=(
        "windows_path_not_iterable",
        "windows_linux_so_loaded",
        "macos_apple_silicon_no_native_lib",
        "no_gpu_detected_cpu_fallback",
        "compiled_without_gpu_support",
    ),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723"),
    refutes=("release-supports-platform",),
)
def too_old_for_platform(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` and `platform` facts. It is skipped when bitsandbytes is not installed or its version is
    unknown. It is also skipped when bnbdoctor has no entry for the OS and architecture, e.g. macOS on Intel or Linux on
    ppc64le; no prebuilt binaries exist there, so the only route is a source build. It passes when the install was built
    on the machine (an egg, a `linux_*` wheel, an install from a path or URL) and holds a compiled library: the release
    shipped no binaries for the platform, but this build is not one of them.

    Otherwise it compares the installed version with the first release that bnbdoctor records for the platform, and
    reports an error when the installed one is older:

    | platform | first release |
    |---|---|
    | Windows x86_64 | {{ platforms.WINDOWS_WHEELS.first_text }} (first official Windows wheels) |
    | Linux aarch64 | {{ platforms.LINUX_AARCH64_WHEELS.first_text }} (`manylinux_2_24_aarch64`) |
    | macOS arm64 | {{ platforms.MACOS_WHEELS.first_text }} (`macosx_14_0_arm64`) |
    | Windows arm64 | {{ platforms.WINDOWS_ARM64_WHEELS.first_text }} (`win_arm64`) |

    When the install contains only Linux `.so` files on another OS, the finding says so. Linux x86_64 has had prebuilt
    binaries from the first releases on, so the rule passes there whatever the version.

    ## Why it matters

    Up to {{ platforms.LINUX_ONLY_WHEEL.last_text }}, bitsandbytes was a `py3-none-any` wheel that contained only Linux x86-64 ELF libraries. It installs
    anywhere, but the loader then fails:

    - Windows, {{ platforms.WINDOWS_PATH_NOT_ITERABLE.first_text }}–{{ platforms.WINDOWS_PATH_NOT_ITERABLE.last_text }}: the legacy setup searches for Linux `.so` files and crashes with `argument of type
      'WindowsPath' is not iterable`. It also prints Linux advice (`LD_LIBRARY_PATH`, `find / -name ...`) that does not
      apply on Windows.
    - Windows loading the ELF file: `OSError: [WinError 193] %1 is not a valid Win32 application`.
    - macOS: `dlopen(...libbitsandbytes_cpu.so ...)` fails with "not a mach-o file".
    - Older legacy loaders on Windows find no `libcuda.so`, conclude there is no GPU, and load the CPU-only library
      (`WARNING: No GPU detected! ... Proceeding to load CPU-only library...`).

    In every case bitsandbytes ends up without a usable native library, and quantized models fail; transformers often
    reports its misleading "requires Accelerate ... and the latest version of bitsandbytes" ImportError.

    ## How to fix

    Upgrade to a release that ships binaries for the platform (use the version from the finding):

    ```bash
    pip install -U "bitsandbytes>={{ platforms.WINDOWS_WHEELS.first_text }}"
    python -m bitsandbytes
    ```

    On Windows you can also run the workload under WSL2. On Intel Macs there is no prebuilt package: use a CUDA machine
    or a non-bitsandbytes quantization method (MLX, llama.cpp/GGUF).
    """
    bnb, platform = bnb_of(facts), facts.platform
    assert platform is not None
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    if (platform.os, platform.arch) == ("linux", "x86_64"):
        return None  # Linux x86_64 has had prebuilt binaries from the start
    first = FIRST_RELEASE_FOR_PLATFORM.get((platform.os, platform.arch))
    if first is None:
        return Skip(f"no prebuilt bitsandbytes for {platform.os}/{platform.arch}; build from source")
    if at_least(bnb.version, first):
        return None
    if bnb.native_libraries and built_locally(bnb):
        return None  # a source build for this machine, not the release's (absent) binaries
    label = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}.get(platform.os, platform.os)
    linux_only = [f for f in bnb.native_libraries if f.endswith(".so")]
    symptom = {
        "windows": "\"argument of type 'WindowsPath' is not iterable\" or '[WinError 193] %1 is not a valid "
        "Win32 application'",
        "macos": "'not a mach-o file' from dlopen",
        "linux": "'wrong ELF class' or 'cannot open shared object file'",
    }.get(platform.os, "a failed library load")
    spec = f">={first}"  # bnbdoctor.remedy narrows it to the releases that keep this torch
    fix = f"Upgrade bitsandbytes to a release that supports {label} {platform.arch}."
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} has no {label} {platform.arch} support (first release: {first})",
        explanation=f"Releases before {first} ship no native library for {label} {platform.arch}"
        + (
            f"; this install holds only Linux .so files ({len(linux_only)} of them), which cannot load here"
            if linux_only and platform.os != "linux"
            else ""
        )
        + f". The loader then fails ({symptom}) and bitsandbytes runs CPU-only or not at all.",
        evidence=[
            ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
            ev("platform", f"{platform.os} {platform.arch}", "platform.arch"),
        ],
        remediation=Remediation(fix, [f'pip install -U "bitsandbytes{spec}"']),
        covers=list(_PLATFORM_FAMILIES.get(platform.os, ("compiled_without_gpu_support",))),
    )
