"""Rules about the backend torch gives bitsandbytes when it is not CUDA: the CPU library that backend needs
(BNB209), and transformers' bitsandbytes check that needs CUDA (BNB210).

Both take for granted that torch matches the machine's GPU (the premise ``torch-matches-gpu``): on a GPU
machine with a CPU-only torch, BNB202 is the root cause and these follow from it.
"""

from __future__ import annotations

from bnbdoctor.derive import built_locally, cuda_expected, gpu_sightings
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.loader import CPU_FALLBACK_ERA, LEGACY_CUDA_SETUP, NONE_LIBRARY_ATTRIBUTE_ERRORS
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM
from bnbdoctor.knowledge.transformers import BNB_CHECK_WITHOUT_CUDA, misleading_importerror
from bnbdoctor.knowledge.versions import at_least
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, TORCH_BUILD_CHECK, bnb_of, ev, predicted_selection, torch_of

TRANSFORMERS_BNB_DOCS = "https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes"


@rule(
    "BNB209",
    "cpu-library-missing",
    Severity.ERROR,
    "The CPU library is there when bitsandbytes selects its CPU backend",
    needs=("python", "platform"),
    covers=("source_build_native_lib_missing", "native_lib_none_attribute_errors"),
    references=(
        BNB_DOCS_INSTALL,
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941",
    ),
    log_gate=LogGate(
        "the log does not show bitsandbytes' CPU library missing", signatures=("bnb_cpu_library_not_found",)
    ),
    requires=("torch-matches-gpu",),
)
def cpu_library_missing(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` and `platform` facts. It replays the installed release's library choice (see [the
    native chain](../native-chain.md)); when that choice is the CPU backend (torch is a CPU-only build, or it sees no
    GPU) and the package folder holds compiled libraries but no `libbitsandbytes_cpu` file, it reports an error. A
    folder with no library at all is [BNB309](BNB309.md)'s case.

    This is what a build made for one backend looks like: `cmake -DCOMPUTE_BACKEND=cuda` builds only
    `libbitsandbytes_cuda126.so`, which a Jetson or a source checkout then carries alone.

    ## Why it matters

    bitsandbytes picks its library from torch, not from what is in the folder. With the CPU backend selected and the
    CPU library absent, nothing loads:

    - up to 0.43.0 the legacy setup fails to load `libbitsandbytes_cpu.so`;
    - 0.43.1–0.45 log `Could not load bitsandbytes native library: … libbitsandbytes_cpu.so: cannot open shared object
      file` and every native call fails with `'NoneType' object has no attribute 'c…'`;
    - 0.46+ import fine and raise `Failed to load CPU-only bitsandbytes library` at the first native call.

    When the machine has a GPU and torch is a CPU-only build, the CPU backend is the mistake, not the missing file:
    that is [BNB202](BNB202.md), and this finding follows from it.

    ## How to fix

    Build the CPU backend as well, in the checkout the library came from, and reinstall:

    ```bash
    cmake -DCOMPUTE_BACKEND=cpu -S . && make
    pip install .
    ```

    or install a released wheel, which ships the CPU library: `pip install --force-reinstall bitsandbytes`.
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    selection = predicted_selection(facts)
    if selection is None:
        return Skip("the library choice cannot be predicted")
    if selection.backend != "cpu" or selection.exists or not bnb.native_libraries:
        return None
    local = built_locally(bnb)
    if LEGACY_CUDA_SETUP.contains(bnb.version):
        effect = "The legacy CUDA setup fails to load it, and bitsandbytes cannot be used."
    elif CPU_FALLBACK_ERA.contains(bnb.version):
        effect = (
            "bitsandbytes logs 'Could not load bitsandbytes native library' and every native call fails with "
            "\"'NoneType' object has no attribute 'c…'\"."
        )
    else:
        effect = (
            "bitsandbytes imports, then raises 'Failed to load CPU-only bitsandbytes library' at the first native call."
        )
    return Hit(
        title=f"bitsandbytes {bnb.version} selects its CPU library, and this install has none",
        explanation=f"{selection.reason[0].upper()}{selection.reason[1:]}, so bitsandbytes asks for "
        f"{selection.expected_file}; the package holds only {', '.join(bnb.native_libraries)}"
        + (f" ({local})" if local else "")
        + ". "
        + effect,
        evidence=[
            ev("selected", f"{selection.expected_file} (missing)", "native.selection.expected_file"),
            ev("shipped", ", ".join(bnb.native_libraries), "python.bitsandbytes.native_libraries"),
            ev("why the CPU backend", selection.reason, "native.selection.reason"),
        ],
        remediation=Remediation(
            "Build the CPU backend too (cmake -DCOMPUTE_BACKEND=cpu in the source checkout, then reinstall it), or "
            "install a released wheel, which ships the CPU library.",
            [] if local else ["pip install --force-reinstall bitsandbytes"],
        ),
        covers=["source_build_native_lib_missing"]
        + (["native_lib_none_attribute_errors"] if NONE_LIBRARY_ATTRIBUTE_ERRORS.contains(bnb.version) else []),
    )


@rule(
    "BNB210",
    "transformers-bnb-check-needs-cuda",
    Severity.ERROR,
    "The installed transformers accepts bitsandbytes without CUDA, or torch sees a CUDA device",
    needs=("python",),
    covers=("transformers_importerror_requires_accelerate_bnb",),
    references=(
        "https://github.com/huggingface/transformers/pull/24995",
        "https://github.com/huggingface/transformers/pull/30533",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1306",
        TRANSFORMERS_BNB_DOCS,
    ),
    log_gate=LogGate(
        "a log shows what torch.cuda.is_available() returned only with transformers' ImportError",
        signatures=("transformers_bnb_importerror",),
    ),
    requires=("torch-matches-gpu",),
)
def transformers_needs_cuda(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts and predicts, from versions alone, the ImportError that
    [BNB521](BNB521.md) recognises in a log. It fires when transformers, torch and bitsandbytes are installed, torch
    will not see a CUDA device (`torch.cuda.is_available()` is False: a CPU-only or macOS build, or no GPU CUDA can
    use), and the installed transformers is one that then raises a misleading ImportError:

    | transformers | condition | message |
    |---|---|---|
    | 4.32–4.35 | any bitsandbytes | `Using load_in_8bit=True requires Accelerate … and the latest version of bitsandbytes` |
    | 4.38–4.40 | any bitsandbytes | `Using bitsandbytes 8-bit quantization requires Accelerate … and the latest version of bitsandbytes` |
    | 4.45–4.52 | bitsandbytes older than 0.43.1 | `… requires the latest version of bitsandbytes: pip install -U bitsandbytes` |

    Read in the released wheels: 4.32 added `torch.cuda.is_available()` to `is_bitsandbytes_available()`; 4.36–4.37 and
    4.41–4.44 check for a GPU first and raise `No GPU found` instead; 4.45 needs CUDA only for a bitsandbytes older than
    0.43.1; 4.53 names the cause. It holds on any machine, a Mac or a CPU-only laptop included, not only beside an NVIDIA
    GPU.

    ## Why it matters

    Both packages are installed, so the message sends users to reinstall accelerate and bitsandbytes, which changes
    nothing. On a Mac with a bitsandbytes that supports it (0.49+), transformers refuses it for the same reason.

    ## How to fix

    - If the machine should use an NVIDIA GPU, install a CUDA build of torch first (`torch.cuda.is_available()` must be
      True).
    - To run bitsandbytes without CUDA (its CPU backend, or Apple silicon from 0.49), upgrade transformers to 4.45 or
      newer and bitsandbytes past 0.43.1, which no longer needs CUDA at import:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    pip install -U "transformers>=4.45" bitsandbytes
    ```
    """
    python, bnb, torch = facts.python, bnb_of(facts), torch_of(facts)
    assert python is not None
    transformers = python.packages.get("transformers")
    if not transformers:
        return Skip("transformers is not installed")
    if not (bnb and bnb.installed and torch and torch.installed):
        return Skip("torch or bitsandbytes is not installed")
    entry = misleading_importerror(transformers, bnb.version)
    if entry is None or cuda_expected(facts):
        return None
    platform = facts.platform
    mac = bool(platform and platform.os == "macos")
    gpus = [s.label for s in gpu_sightings(facts)]
    why = (
        f"torch {torch.version} has no CUDA build"
        if torch.build == "cpu"
        else f"torch {torch.version} ({torch.build}) sees no CUDA device"
    )
    mac_first = FIRST_RELEASE_FOR_PLATFORM[("macos", "aarch64")]
    supported_mac = mac and at_least(bnb.version, mac_first)
    only_old = f" with a bitsandbytes older than {entry.bnb_below}" if entry.bnb_below else ""
    upgrade = f'pip install -U "transformers{BNB_CHECK_WITHOUT_CUDA.pip_spec()}"' + (
        ' "bitsandbytes>=' + entry.bnb_below + '"' if entry.bnb_below else ""
    )
    return Hit(
        title=f"transformers {transformers} will refuse bitsandbytes here with a misleading ImportError",
        explanation=f"torch.cuda.is_available() is False on this machine ({why}"
        + (f"; the GPU it has is {gpus[0]}" if gpus else "")
        + f"). transformers {transformers}'s bitsandbytes check also requires CUDA{only_old}, so "
        "from_pretrained(..., quantization_config=BitsAndBytesConfig(...)) raises "
        f"`ImportError: {entry.message}…` although both packages are installed."
        + (
            f" bitsandbytes {bnb.version} does support this Mac: transformers is what refuses it."
            if supported_mac
            else ""
        ),
        evidence=[
            ev("transformers", transformers, "python.packages.transformers"),
            ev("torch", f"{torch.version} ({torch.build} build)", "python.torch.version"),
            ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
            ev("raised by", entry.site, None),
        ],
        remediation=Remediation(
            "Reinstalling accelerate or bitsandbytes changes nothing. "
            + ("" if mac else "If this machine should use an NVIDIA GPU, install a CUDA build of torch first. ")
            + f"To use bitsandbytes without CUDA, upgrade transformers to {BNB_CHECK_WITHOUT_CUDA.first_text} or newer"
            + (f" and bitsandbytes to {entry.bnb_below} or newer" if entry.bnb_below else "")
            + ".",
            [TORCH_BUILD_CHECK, upgrade],
        ),
    )
