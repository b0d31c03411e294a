"""Rules about the platform: WSL2's driver folder and Jetson boards."""

from __future__ import annotations

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev

WSL_LIB = "/usr/lib/wsl/lib"


@rule(
    "BNB107",
    "wsl2-driver-libraries-not-on-loader-path",
    Severity.ERROR,
    "Under WSL2, /usr/lib/wsl/lib exists and is on the loader path",
    needs=("platform",),
    covers=("wsl2_libcuda_not_found", "no_gpu_detected_cpu_fallback"),
    references=(
        "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/337",
    ),
    log_gate=LogGate(
        "the log does not show libcuda.so failing to load", signatures=("libcuda_not_found", "no_gpu_detected")
    ),
    refutes=("driver-exposed",),
)
def wsl_lib_path(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `platform` facts and is skipped unless the machine runs under WSL2. It fires in two cases:

    - `/usr/lib/wsl/lib` does not exist. Under WSL2, the Windows NVIDIA driver exposes its Linux-side libraries
      (`libcuda.so`, `libnvidia-ml.so`, `nvidia-smi`) there.
    - The folder exists, but the dynamic loader will not search it: it is neither in `LD_LIBRARY_PATH` nor listed in a
      file under `/etc/ld.so.conf` / `/etc/ld.so.conf.d/`.

    It passes when the folder exists and is on the loader path.

    ## Why it matters

    WSL2 has no Linux NVIDIA driver. CUDA programs reach the Windows driver through the stub libraries in
    `/usr/lib/wsl/lib`. If the loader cannot find them, CUDA cannot start: `torch.cuda.is_available()` is False and
    bitsandbytes falls back to its CPU library.

    - Legacy loaders (0.37–0.41) `dlopen("libcuda.so")` themselves and report `CUDA SETUP: WARNING! libcuda.so not
      found!` and then `WARNING: No GPU detected! ... Proceeding to load CPU-only library...`.
    - The plain loader error is `libcuda.so: cannot open shared object file: No such file or directory`. This can happen
      even when `ldconfig` lists `libcuda.so.1`, because the unversioned name is then missing from the cache.
    - Every later 8-bit or 4-bit operation fails the way [BNB101](BNB101.md) describes.

    ## How to fix

    If the folder exists, put it on the loader path (add the `export` line to `~/.bashrc` to keep it), then check that
    the loader finds `libcuda`:

    ```bash
    ls /usr/lib/wsl/lib
    export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH
    ldconfig -p | grep libcuda
    cat /etc/ld.so.conf.d/ld.wsl.conf
    ```

    WSL normally registers the folder in `/etc/ld.so.conf.d/ld.wsl.conf`. If that file was removed, restore it with the
    line `/usr/lib/wsl/lib` and run `sudo ldconfig`.

    If the folder is missing, install or update the NVIDIA driver **on Windows** (WSL support is part of it), update WSL
    from a Windows terminal, and restart it. `wsl --shutdown` stops every running WSL distribution, so save work first:

    ```bash
    wsl.exe --update
    wsl.exe --shutdown
    ```

    Never install a Linux NVIDIA driver inside WSL2. It would replace the stubs that talk to the Windows driver.
    """
    platform = facts.platform
    assert platform is not None
    if platform.wsl != 2:
        return Skip("not running under WSL2")
    ld_path = facts.env.get("LD_LIBRARY_PATH", "")
    evidence = [
        ev("kernel", platform.kernel, "platform.kernel"),
        ev("LD_LIBRARY_PATH", ld_path or "(unset)", "env.LD_LIBRARY_PATH"),
    ]
    if platform.wsl_lib_dir is None:
        return Hit(
            title=f"WSL2 without {WSL_LIB}: the Windows NVIDIA driver is not exposed",
            explanation=f"Under WSL2 the GPU driver (libcuda.so, libnvidia-ml.so) is provided by the Windows "
            f"driver in {WSL_LIB}. It is missing, so CUDA cannot start: torch sees no GPU and bitsandbytes "
            "falls back to its CPU library ('libcuda.so: cannot open shared object file').",
            evidence=[*evidence, ev(WSL_LIB, "missing", "platform.wsl_lib_dir")],
            remediation=Remediation(
                "Install or update the NVIDIA driver on Windows (WSL support ships with it), run `wsl --update` "
                "in Windows, then restart WSL (`wsl --shutdown` in Windows stops every running distribution). "
                "Do not install a Linux NVIDIA driver inside WSL.",
                ["wsl.exe --update"],
            ),
        )
    if platform.wsl_lib_on_loader_path:
        return None
    return Hit(
        title=f"WSL2: {WSL_LIB} is not on the loader path",
        explanation=f"The Windows driver's libraries are in {WSL_LIB}, but neither LD_LIBRARY_PATH nor "
        "/etc/ld.so.conf.d lists it, so dlopen('libcuda.so') fails and bitsandbytes concludes there is no GPU.",
        evidence=[*evidence, ev(WSL_LIB, "present, not on the loader path", "platform.wsl_lib_on_loader_path")],
        remediation=Remediation(
            f"Add {WSL_LIB} to the loader path (persist it in your shell profile), or restore WSL's "
            "/etc/ld.so.conf.d/ld.wsl.conf and run ldconfig.",
            [f"export LD_LIBRARY_PATH={WSL_LIB}:$LD_LIBRARY_PATH", "ldconfig -p | grep libcuda"],
        ),
    )


@rule(
    "BNB108",
    "jetson-pypi-wheel",
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

    bitsandbytes has published `manylinux_2_24_aarch64` wheels since 0.46.0 (releases up to 0.42 shipped no aarch64
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
