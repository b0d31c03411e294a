"""BNB510 log-macos-no-native-library: passes when the log shows no macOS loader rejecting a bitsandbytes library."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.platforms import MACOS_WHEELS
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL

FINDING = log.LogFinding(
    (S.MACOS_NOT_MACHO,),
    title="macOS cannot load this bitsandbytes library (not a Mach-O file for this Mac)",
    explanation=f"Releases before {minor(MACOS_WHEELS.first_text)} ship Linux ELF libraries only, so dlopen on a "
    "Mac fails ('not a mach-o "
    "file'), bitsandbytes falls back, and every quantized operation fails; transformers then reports a "
    "misleading ImportError. Macs have no CUDA: the CUDA kernels behind load_in_8bit/load_in_4bit never run "
    "there.",
    fix="Do not use load_in_8bit/load_in_4bit with these releases on macOS. bitsandbytes "
    f"{minor(MACOS_WHEELS.first_text)}+ publishes an Apple "
    "Silicon build (CPU/MPS backends, check its documentation for what is supported); for quantized inference "
    "on a Mac use MLX or llama.cpp (GGUF), or move to a CUDA machine.",
    commands=(
        "pip show bitsandbytes",
        "uname -m",
    ),
)


@rule(
    Severity.ERROR,
    "The log shows no macOS loader rejecting a bitsandbytes library",
    needs=("log",),
    covers=("macos_apple_silicon_no_native_lib",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1378", BNB_DOCS_INSTALL),
    stands_in_for=("BNB204", "BNB313"),
    confirm=("pip show bitsandbytes", "uname -m"),
)
def macos(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires when macOS's loader rejects a bitsandbytes library: `not a mach-o file`, or `mach-o file, but is an
    incompatible architecture`, or `dlopen(…/libbitsandbytes_cpu.so, 0x0006): tried: …` with the reason cut off (a Linux
    `.so` on a Mac). It is the log twin of [BNB204](BNB204.md) and [BNB313](BNB313.md).

    ## Why it matters

    Releases before {{ platforms.MACOS_WHEELS.first_minor }} ship Linux ELF libraries only, so `dlopen` fails on a Mac, bitsandbytes falls back, and every
    quantized operation fails (transformers then reports a misleading ImportError). Macs have no CUDA: the CUDA kernels
    behind `load_in_8bit`/`load_in_4bit` never run there.

    ## How to fix

    - Do not use `load_in_8bit`/`load_in_4bit` with these releases on macOS.
    - bitsandbytes {{ platforms.MACOS_WHEELS.first_minor }}+ publishes an Apple Silicon build (CPU/MPS backends); check its documentation for what is
      supported.
    - For quantized inference on a Mac use MLX or llama.cpp (GGUF), or move to a CUDA machine.
    """
    return FINDING.hit(facts)
