"""BNB108 jetson-pypi-wheel: passes when not a Jetson board running the PyPI aarch64 wheel."""

from __future__ import annotations

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev


@rule(
    Severity.ERROR,
    "Not a Jetson board running the PyPI aarch64 wheel",
    needs=("platform", "python"),
    covers=("jetson_l4t_aarch64_wheel_mismatch", "named_symbol_not_found"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941", BNB_DOCS_INSTALL),
)
def jetson_wheel(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `platform` and `python` facts. It is skipped when the machine is not a Jetson, i.e. when
    `/etc/nv_tegra_release` is absent. On a Jetson it passes if bitsandbytes is not installed, or if the installed
    package ships no `libbitsandbytes_*` native library. Otherwise it reports an error.

    It also passes when the install shows that it was not PyPI's wheel: an egg or egg-info (`python setup.py install` /
    `develop` on the board), a wheel whose tag is `linux_aarch64` (built on the device, or from the Jetson AI Lab
    index; PyPI only carries `manylinux` wheels), an install from a path or URL (pip's `direct_url.json`), or a package
    folder without metadata (a source checkout). A PyPI wheel copied in by hand leaves none of these traces, so a
    dist-info without a `WHEEL` file is still taken for PyPI's.

    ## Why it matters

    bitsandbytes has published `manylinux_2_24_aarch64` wheels since {{ platforms.LINUX_AARCH64_WHEELS.first_text }} (releases up to {{ platforms.LINUX_ONLY_WHEEL.last_text }} shipped no aarch64
    binaries at all). These wheels are built on aarch64-sbsa machines (server ARM with the standard CUDA toolkit).
    Jetson boards run L4T/JetPack, which has its own CUDA stack, and the bitsandbytes documentation says the sbsa wheels
    are not compatible with it.

    `pip install` and `import bitsandbytes` succeed. The first CUDA operation then fails:

    ```
    RuntimeError: Error named symbol not found at line 233 in file /src/csrc/ops.cu
    ```

    This is not a missing-architecture problem: sm_80 code built on the device runs on the Orin's sm_87 (PR #1939). The
    mismatch lies in the CUDA libraries and toolchain. On other machines the same `named symbol not found` text usually
    means that the library, the CUDA runtime and the driver do not belong together, for example a duplicate or wrong
    `libcudart`.

    ## How to fix

    Replace the PyPI binaries with a build made for JetPack. Either build on the device against JetPack's CUDA (sm_87
    for the Orin family, sm_72 for Xavier):

    ```bash
    pip uninstall -y bitsandbytes
    git clone https://github.com/bitsandbytes-foundation/bitsandbytes.git && cd bitsandbytes
    cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=87 -S . && make -j4
    pip install .
    python -m bitsandbytes
    ```

    or install the prebuilt package from the Jetson AI Lab index (`https://pypi.jetson-ai-lab.io/`, e.g. the `jp6/cu126`
    channel). That is a third-party build, not one published by bitsandbytes.
    """
    platform, bnb = facts.platform, bnb_of(facts)
    assert platform is not None
    if not platform.jetson_release:
        return Skip("not a Jetson (no /etc/nv_tegra_release)")
    if not (bnb and bnb.installed and bnb.native_libraries):
        return None
    if built_locally(bnb):
        return None  # built on the device or a Jetson wheel, not PyPI's sbsa build
    return Hit(
        title="Jetson (L4T) with bitsandbytes' PyPI aarch64 binaries",
        explanation="The aarch64 wheels on PyPI are built for server ARM (sbsa) with the standard CUDA toolkit, "
        "not for Jetson's L4T/JetPack CUDA stack; the first kernel fails with 'Error named symbol not found "
        "at line … in file /src/csrc/ops.cu'.",
        evidence=[
            ev("L4T release", platform.jetson_release, "platform.jetson_release"),
            ev("bitsandbytes", f"{bnb.version} at {bnb.location}", "python.bitsandbytes.location"),
            ev("wheel tag", bnb.wheel_tag or "unknown (assumed PyPI)", "python.bitsandbytes.wheel_tag"),
        ],
        remediation=Remediation(
            "Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda) or install a wheel built for "
            "JetPack (the Jetson AI Lab index); do not use the PyPI aarch64 wheel on L4T.",
        ),
    )
