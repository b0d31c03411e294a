"""BNB312 linux-library-on-windows: passes when a Windows install of bitsandbytes holds Windows DLLs, not Linux .so files."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.platforms import LINUX_ONLY_WHEEL, WINDOWS_WHEELS
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, versioned


@rule(
    Severity.ERROR,
    "A Windows install of bitsandbytes holds Windows DLLs, not Linux .so files",
    needs=("python", "platform"),
    covers=("windows_linux_so_loaded", "windows_path_not_iterable"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723",),
    requires=("release-supports-platform",),
    refutes=("library-readable",),
)
def linux_so_on_windows(facts: Facts) -> Hit | Skip | None:
    r"""## What it detects

    The rule reads the `python` and `platform` facts and applies to Windows only. It fires when the bitsandbytes package
    folder holds `libbitsandbytes_*.so` files and no `.dll` at all, which means a Linux build was installed on Windows.
    The finding counts the `.so` files, lists the first few, and offers an upgrade command. The version range in that
    command also fits the installed torch.

    It does not look at the files' contents. [BNB313](BNB313.md) handles a selected library that is unreadable or built
    for another platform, and stays silent on Windows when the files are Linux ones, so that one cause gives one finding
    from this group. [BNB204](BNB204.md) reports the same install from the version side: the release predates Windows
    support.

    ## Why it matters

    Up to {{ platforms.LINUX_ONLY_WHEEL.last_text }}, bitsandbytes was published as a single `py3-none-any` wheel that contains only Linux x86-64 ELF
    libraries. Because the tag says "any platform", pip installs it on Windows without complaint. Windows support
    (`win_amd64` wheels with DLLs) arrived in {{ platforms.WINDOWS_WHEELS.first_text }}. On Windows such an install fails in one of two ways, depending on
    how far the legacy setup gets:

    ```text
    OSError: [WinError 193] %1 is not a valid Win32 application
    ```

    is `LoadLibrary` rejecting an ELF file. The legacy setup may fail even earlier, while searching for a Linux
    `libcudart.so` on a Windows machine:

    ```text
    CUDA SETUP: Loading binary C:\…\site-packages\bitsandbytes\libbitsandbytes_cuda118.so...
    argument of type 'WindowsPath' is not iterable
    ```

    The setup's printed advice (`export LD_LIBRARY_PATH`, `find / -name …`) is Linux advice and does not apply.
    Community-built Windows wheels filled the gap for a while. The official releases from {{ platforms.WINDOWS_WHEELS.first_text }} on replace them.

    ## Example notes

    The upper bound `<{{ releases.TORCH_MINIMUM_BY_RELEASE.1.series }}` comes from torch 2.0.1+cu118: {{ releases.TORCH_MINIMUM_BY_RELEASE.1.series }} and later need torch {{ releases.TORCH_MINIMUM_BY_RELEASE.1.torch }} or newer.

    ## How to fix

    Confirm what is installed:

    ```bat
    pip show -f bitsandbytes | findstr /R "Version libbitsandbytes_"
    ```

    - Upgrade to a release with Windows DLLs, within the range the finding prints for your torch, then restart the
      Python process:

      ```bat
      pip install -U "bitsandbytes>={{ platforms.WINDOWS_WHEELS.first_text }}"
      ```

    - If a tool pins an old bitsandbytes (some web UIs did), raise the pin to {{ platforms.WINDOWS_WHEELS.first_text }} or newer, or uninstall the
      community wheel it brought.
    - Or run the workload under WSL2 with the Linux wheels and the Windows NVIDIA driver.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation
    """
    bnb, platform = bnb_of(facts), facts.platform
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    if not (bnb and bnb.installed and bnb.native_libraries):
        return None
    so = [f for f in bnb.native_libraries if f.endswith(".so")]
    if not so or any(f.endswith(".dll") for f in bnb.native_libraries):
        return None
    spec = f">={WINDOWS_WHEELS.first_text}"
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} on Windows holds only Linux libraries ({len(so)} .so files)",
        explanation=f"Releases up to {LINUX_ONLY_WHEEL.last_text} were a py3-none-any wheel containing Linux ELF "
        "files. On Windows, loading "
        "one fails with '[WinError 193] %1 is not a valid Win32 application', and the legacy setup trips over "
        "Windows paths (\"argument of type 'WindowsPath' is not iterable\").",
        evidence=[
            ev(
                "native libraries",
                ", ".join(so[:4]) + (" …" if len(so) > 4 else ""),
                "python.bitsandbytes.native_libraries",
            )
        ],
        remediation=Remediation(
            f"Install a release with Windows DLLs ({WINDOWS_WHEELS.first_text}+), or run under WSL2.",
            [f'pip install -U "bitsandbytes{spec}"'],
        ),
    )
