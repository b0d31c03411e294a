"""Rules about the platform: WSL2's driver folder and Jetson boards."""

from __future__ import annotations

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
    references=("https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
                "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/337"),
    log_gate=LogGate("the log does not show libcuda.so failing to load", signatures=("libcuda_not_found", "no_gpu_detected")),
)
def wsl_lib_path(facts: Facts) -> Hit | Skip | None:
    platform = facts.platform
    assert platform is not None
    if platform.wsl != 2:
        return Skip("not running under WSL2")
    ld_path = facts.env.get("LD_LIBRARY_PATH", "")
    evidence = [ev("kernel", platform.kernel, "platform.kernel"),
                ev("LD_LIBRARY_PATH", ld_path or "(unset)", "env.LD_LIBRARY_PATH")]
    if platform.wsl_lib_dir is None:
        return Hit(
            title=f"WSL2 without {WSL_LIB}: the Windows NVIDIA driver is not exposed",
            explanation=f"Under WSL2 the GPU driver (libcuda.so, libnvidia-ml.so) is provided by the Windows "
            f"driver in {WSL_LIB}. It is missing, so CUDA cannot start: torch sees no GPU and bitsandbytes "
            "falls back to its CPU library ('libcuda.so: cannot open shared object file').",
            evidence=evidence + [ev(WSL_LIB, "missing", "platform.wsl_lib_dir")],
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
        evidence=evidence + [ev(WSL_LIB, "present, not on the loader path", "platform.wsl_lib_on_loader_path")],
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
    platform, bnb = facts.platform, bnb_of(facts)
    assert platform is not None
    if not platform.jetson_release:
        return Skip("not a Jetson (no /etc/nv_tegra_release)")
    if not (bnb and bnb.installed and bnb.native_libraries):
        return None
    if bnb.wheel_tag and "manylinux" not in bnb.wheel_tag:
        return None  # built on the device or a Jetson wheel (linux_aarch64), not PyPI's sbsa build
    return Hit(
        title="Jetson (L4T) with bitsandbytes' PyPI aarch64 binaries",
        explanation="The aarch64 wheels on PyPI are built for server ARM (sbsa) with the standard CUDA toolkit, "
        "not for Jetson's L4T/JetPack CUDA stack; the first kernel fails with 'Error named symbol not found "
        "at line … in file /src/csrc/ops.cu'.",
        evidence=[ev("L4T release", platform.jetson_release, "platform.jetson_release"),
                  ev("bitsandbytes", f"{bnb.version} at {bnb.location}", "python.bitsandbytes.location"),
                  ev("wheel tag", bnb.wheel_tag or "unknown (assumed PyPI)", "python.bitsandbytes.wheel_tag")],
        remediation=Remediation(
            "Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda) or install a wheel built for "
            "JetPack (the Jetson AI Lab index); do not use the PyPI aarch64 wheel on L4T.",
        ),
    )
