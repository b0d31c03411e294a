"""BNB506 log-named-symbol-not-found: passes when the log shows no 'named symbol not found' kernel error."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev
from bnbdoctor.rules.workflow._shared import PYTHON_M_BNB


@rule(
    Severity.ERROR,
    "The log shows no 'named symbol not found' kernel error",
    needs=("log",),
    covers=("named_symbol_not_found", "jetson_l4t_aarch64_wheel_mismatch", "zluda_cuda_bnb_on_amd"),
    references=(
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/382",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941",
    ),
    stands_in_for=("BNB108", "BNB106"),
    confirm=(PYTHON_M_BNB, "nvidia-smi"),
)
def named_symbol(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule fires on `Error named symbol not found at line … in file …ops.cu`. On a Jetson (the log shows `tegra`,
    `Jetson` or `/etc/nv_tegra_release`) it reports the PyPI aarch64 wheel on L4T; where the log names ZLUDA or an AMD
    Radeon GPU (`GPU: RX 7900 XT`) it reports bitsandbytes' CUDA build running through ZLUDA; when the log shows GPUs of different
    generations under the legacy loader it stays silent and [BNB508](BNB508.md) explains the error. It is the log twin
    of [BNB108](BNB108.md) and [BNB106](BNB106.md).

    ## Why it matters

    The CUDA runtime could not resolve a kernel in the loaded library: the library, the runtime it runs against and the
    driver do not belong together. Common causes are a wrong or duplicate `libcudart` picked by the legacy loader, a
    driver problem (CUDA error 803), or a build made for another setup. On Jetson the aarch64 PyPI wheels are built for
    server ARM (sbsa) with the standard toolkit, not for L4T, so their kernel symbols do not resolve (it is not a
    missing architecture).

    ## How to fix

    - Reinstall or upgrade bitsandbytes from PyPI so its library follows torch's CUDA version:

      ```bash
      pip install -U --force-reinstall --no-deps bitsandbytes
      python -m bitsandbytes
      ```

    - Keep only the CUDA runtime matching `torch.version.cuda` on `LD_LIBRARY_PATH`; check the driver with `nvidia-smi`.
    - ZLUDA on an AMD GPU (kohya_ss, OneTrainer, Forge on Windows): bitsandbytes' CUDA kernels do not run through
      it; users there load fp8 or GGUF models instead of NF4 ones (lshqqytiger/stable-diffusion-webui-amdgpu-forge
      #16, lllyasviel/stable-diffusion-webui-forge #1066, lshqqytiger/OneTrainer #8), and bitsandbytes itself runs on
      AMD GPUs under Linux with ROCm.
    - Jetson: build bitsandbytes on the device (`cmake -DCOMPUTE_BACKEND=cuda`) or use a wheel built for JetPack (the
      Jetson AI Lab index).
    """
    if not log.seen(facts, S.NAMED_SYMBOL_NOT_FOUND):
        return None
    if log.seen(facts, S.MIXED_GPU_GENERATIONS) and log.legacy_loader(facts):
        return Skip("GPUs of different generations under the legacy loader explain it (BNB508)")
    lines = log.line_evidence(facts, S.NAMED_SYMBOL_NOT_FOUND, S.BNB_LIBRARY_SELECTED)
    if facts.platform and facts.platform.jetson_release:
        return Hit(
            title="Jetson: the PyPI aarch64 bitsandbytes is not built for L4T/JetPack",
            explanation="The aarch64 wheels on PyPI target server ARM (sbsa) with the standard CUDA toolkit; on a "
            "Jetson's L4T CUDA stack their kernel symbols do not resolve, so the first kernel fails with 'named symbol "
            "not found'. It is not a missing architecture.",
            evidence=[*lines, ev("Jetson", facts.platform.jetson_release, "platform.jetson_release")],
            remediation=Remediation(
                "Build bitsandbytes on the device (cmake -DCOMPUTE_BACKEND=cuda) or install a "
                "wheel built for JetPack (the Jetson AI Lab index); do not use the PyPI aarch64 "
                "wheel on L4T."
            ),
            covers=["jetson_l4t_aarch64_wheel_mismatch", "named_symbol_not_found"],
        )
    if log.seen(facts, S.AMD_GPU_UNDER_CUDA):
        return Hit(
            title="bitsandbytes' CUDA build runs through ZLUDA on an AMD GPU, and its kernels do not resolve there",
            explanation="The log names ZLUDA or an AMD Radeon GPU: the CUDA build of bitsandbytes (a Windows wheel "
            "from PyPI) is running on AMD hardware through ZLUDA's CUDA translation, which does not provide the "
            "kernels bitsandbytes' library needs, so its first 4-bit/8-bit kernel fails with 'named symbol not "
            "found'. Reinstalling it cannot help.",
            evidence=lines + log.line_evidence(facts, S.AMD_GPU_UNDER_CUDA, limit=1),
            remediation=Remediation(
                "Under ZLUDA, use what does not need bitsandbytes' kernels: an fp8 or GGUF model instead of an NF4 "
                "one, and an optimizer other than the 8-bit ones (AdamW instead of AdamW8bit). For bitsandbytes "
                "itself on an AMD GPU, run Linux with a ROCm build of torch and bitsandbytes' ROCm support.",
                [PYTHON_M_BNB],
            ),
            covers=["zluda_cuda_bnb_on_amd", "named_symbol_not_found"],
        )
    return Hit(
        title="The CUDA runtime could not resolve a bitsandbytes kernel ('named symbol not found')",
        explanation="The library bitsandbytes loaded, the CUDA runtime it runs against and the driver do not belong "
        "together: a wrong or duplicate libcudart picked up by the legacy loader, a driver problem (see CUDA error "
        "803), or a build made for another setup. On machines that mix GPU generations, old releases also chose one "
        "library for all GPUs.",
        evidence=lines,
        remediation=Remediation(
            "Reinstall or upgrade bitsandbytes from PyPI so that its library follows torch's CUDA, make sure only one "
            "CUDA runtime (the one matching torch.version.cuda) is on LD_LIBRARY_PATH, and check the driver with "
            "`nvidia-smi`; on a box with mixed GPU generations, expose one GPU with CUDA_VISIBLE_DEVICES.",
            ["pip install -U --force-reinstall --no-deps bitsandbytes", PYTHON_M_BNB],
        ),
        covers=["named_symbol_not_found"],
    )
