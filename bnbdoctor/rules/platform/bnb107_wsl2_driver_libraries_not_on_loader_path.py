"""BNB107 wsl2-driver-libraries-not-on-loader-path: passes when under WSL2, /usr/lib/wsl/lib exists and is on the loader path."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import ev

WSL_LIB = "/usr/lib/wsl/lib"


@rule(
    Severity.ERROR,
    "Under WSL2, /usr/lib/wsl/lib exists and is on the loader path",
    needs=("platform",),
    covers=("wsl2_libcuda_not_found", "no_gpu_detected_cpu_fallback"),
    references=(
        "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/337",
    ),
    log_gate=LogGate(
        "the log does not show libcuda.so failing to load", signatures=(S.LIBCUDA_NOT_FOUND, S.NO_GPU_DETECTED)
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

    - Legacy loaders ({{ loader.NO_GPU_DETECTED_WARNING.first_text }}–{{ loader.NO_GPU_DETECTED_WARNING.last_text }}) `dlopen("libcuda.so")` themselves and report `CUDA SETUP: WARNING! libcuda.so not
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
