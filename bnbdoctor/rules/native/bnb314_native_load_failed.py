"""BNB314 native-load-failed: passes when the real dynamic loader loads the selected library."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev
from bnbdoctor.rules.native._shared import _library_name, _native, missing_device_stub, static_problem


@rule(
    Severity.ERROR,
    "The real dynamic loader loads the selected library",
    needs=("native", "load"),
    references=("https://docs.python.org/3/library/ctypes.html#loading-shared-libraries",),
    requires=("library-readable",),
)
def load_failed(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `load` facts. After the static analysis, bnbdoctor loads the selected library for
    real in a short-lived subprocess of the examined interpreter (see [the native chain](../native-chain.md)).
    Beforehand, the subprocess loads the libraries torch would already have loaded, and the conda environment's C++
    runtime.

    The rule is skipped when that check did not run: `--no-load`, a recorded machine without a recorded load answer, or
    no existing library selected. It passes when the load succeeded. When the load failed, it reports a finding only if
    the static analysis had found nothing wrong: every dependency resolved, every symbol version present, the file
    readable. If the static analysis already predicted the failure, the finding that names the cause
    ([BNB303](BNB303.md), [BNB306](BNB306.md), [BNB307](BNB307.md), …) quotes the loader's message instead, and this
    rule is listed as not checked ("the load failed; the findings above explain why") — never as passed.

    The evidence is the loader's exact message, plus any preload that failed.

    ## Why it matters

    The static model checks file names, search paths and symbol *version names*. It does not check individual symbols,
    constructors, or libraries that a dependency itself needs. So a library can pass every static check and still be
    refused:

    - a dependency of the right name from a different release lacks a symbol: `undefined symbol: …, version
      libnvJitLink.so.12`;
    - a library built against a different ROCm or CUDA minor than the one installed lacks a device stub;
    - a dependency of a dependency is missing or too old;
    - the library's initialisation crashes or hangs. A hang shows as `did not finish within 15s`, a crash as `the load
      subprocess died`.

    This is the finding to read when everything else is green and bitsandbytes still fails with `Could not load
    bitsandbytes native library` or `bitsandbytes library load error`.

    ## Example notes

    The recorded machines `windows-bnb041` and `macos-bnb042` currently produce this finding too, next to
    [BNB312](BNB312.md) and [BNB313](BNB313.md). There the file has the wrong format, which those rules explain; the
    static check behind this rule does not yet count a format mismatch as a predicted failure.

    ## How to fix

    Start from the library the message names, and see where the loader takes it and its dependencies from:

    ```bash
    LD_DEBUG=libs python -c "import ctypes; ctypes.CDLL('/path/to/libbitsandbytes_cudaXYZ.so')" 2>&1 | grep -E 'trying file|calling init|error'
    ldd -r /path/named/in/the/message.so | grep -E 'not found|undefined'
    ```

    - An `undefined symbol` in a CUDA library: two CUDA releases are mixed. Remove toolkit folders from
      `LD_LIBRARY_PATH` ([BNB304](BNB304.md)), or bring the `nvidia-*` wheels to matching versions (`pip install -U
      torch` reinstalls them as a set).
    - A self-built bitsandbytes: rebuild it against the CUDA or ROCm release that is actually installed.
    - A hang or crash while loading: rerun with `--debug` and attach `bnbdoctor --json` to a bug report. Loading runs
      the library's constructors, which can touch the GPU driver.
    - On Windows the message names only the top DLL; [BNB311](BNB311.md) lists the imports that are missing.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (`LD_DEBUG`)
    - https://github.com/pytorch/pytorch/issues/134929 (`undefined symbol: __nvJitLinkComplete_12_4, version
      libnvJitLink.so.12`)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1550 (a ROCm build that loads its dependencies but
      lacks a device stub symbol)
    """
    native, load = _native(facts), facts.load
    assert load is not None
    if not load.ran:
        return Skip(f"the load check did not run: {load.skipped_reason}")
    if load.ok:
        return None
    if static_problem(facts):
        # it did not load, but the static findings above name the cause and quote this message
        return Skip("the load failed; the findings above explain why")
    if missing_device_stub(facts):
        return Skip("the library lacks a kernel's device stub (BNB317 explains it)")
    return Hit(
        title=f"Loading {_library_name(native)} fails although every dependency was found",
        explanation="The static analysis found all dependencies and symbol versions, but the real loader refused "
        "the library. The loader's message below names the cause (often a symbol missing from a library of the "
        "right name but the wrong release).",
        evidence=[ev("library", load.library, "load.library"), ev("the real loader said", load.error, "load.error")]
        + [ev(f"preload failed: {k}", v, "load.preload_errors") for k, v in load.preload_errors.items()],
        remediation=Remediation(
            "Check the named library's version against torch's CUDA version; reinstalling "
            "bitsandbytes and torch from the same index usually resolves it.",
            [],
        ),
    )
