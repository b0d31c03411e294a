"""BNB578 triton-no-c-compiler: passes when the log shows no Triton failing to find a C compiler."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

FINDING = log.LogFinding(
    (S.TRITON_NO_C_COMPILER,),
    title="Triton needs a C compiler to build its kernels, and this machine has none it can find",
    explanation="Triton compiles a small driver module and each kernel at run time with the machine's C compiler "
    "(gcc or clang on Linux, MSVC on Windows). bitsandbytes uses Triton kernels where it has no native ones "
    "(Intel XPU) and transformers' bitsandbytes integration imports Triton, so a 4-bit load fails here, often "
    "reported as a weight conversion problem. bitsandbytes and the weights are fine.",
    fix="Install a C compiler where the program runs (Debian/Ubuntu: apt-get install build-essential; Windows: Visual "
    "Studio Build Tools with the C++ workload, started from its developer prompt), or point CC at one; in a "
    "container, add it to the image.",
    commands=("gcc --version", 'python -c "import triton; print(triton.__version__)"'),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no Triton failing to find a C compiler",
    needs=("log",),
    covers=("triton_c_compiler_missing",),
    references=(
        "https://github.com/unslothai/unsloth/issues/10018",
        "https://github.com/christian-byrne/img2txt-comfyui-nodes/issues/12",
    ),
)
def triton_no_c_compiler(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on Triton's `RuntimeError: Failed to find C compiler. Please specify via CC environment
    variable.`, raised by `triton/runtime/build.py` when it builds its CUDA driver module (`driver.c`) or a kernel.

    ## Why it matters

    Triton builds native code at run time with the host's C compiler. Where bitsandbytes runs on Triton kernels
    (its XPU backend, which has no native library: unsloth #10018 on an Intel Arc GPU, where the 4-bit conversion
    failed until MSVC Build Tools were installed) or where transformers' bitsandbytes integration imports Triton (a
    ComfyUI container without gcc, img2txt-comfyui-nodes #12), a machine without a compiler fails there, often under
    another message (unsloth reported it as a weight conversion problem).

    ## How to fix

    Install a C compiler where the program runs, or set `CC` to one:

    ```bash
    apt-get install build-essential   # Debian/Ubuntu images
    gcc --version
    ```

    On Windows, Visual Studio Build Tools with the C++ workload, used from its developer prompt (or with its
    environment set), as the unsloth thread found.
    """
    return FINDING.hit(facts)
