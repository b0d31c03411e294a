"""BNB210 transformers-bnb-check-needs-cuda: passes when the installed transformers accepts bitsandbytes without CUDA, or torch sees a CUDA device."""

from __future__ import annotations

from bnbdoctor.derive import cuda_expected, gpu_sightings
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM
from bnbdoctor.knowledge.transformers import BNB_CHECK_WITHOUT_CUDA, BNB_MULTI_BACKEND, misleading_importerror
from bnbdoctor.knowledge.versions import at_least
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK, bnb_of, ev, torch_of

TRANSFORMERS_BNB_DOCS = "https://huggingface.co/docs/transformers/main/en/quantization/bitsandbytes"


@rule(
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
        signatures=(S.TRANSFORMERS_BNB_IMPORTERROR,),
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
    | {{ transformers.IMPORTERROR_IN_MODELING_UTILS.releases.first_text }}–{{ transformers.IMPORTERROR_IN_MODELING_UTILS.releases.last_text }} | any bitsandbytes | `Using load_in_8bit=True requires Accelerate … and the latest version of bitsandbytes` |
    | {{ transformers.IMPORTERROR_IN_QUANTIZERS.releases.first_text }}–{{ transformers.IMPORTERROR_IN_QUANTIZERS.releases.last_text }} | any bitsandbytes | `Using bitsandbytes 8-bit quantization requires Accelerate … and the latest version of bitsandbytes` |
    | {{ transformers.IMPORTERROR_FOR_OLD_BNB.releases.first_text }}–{{ transformers.IMPORTERROR_FOR_OLD_BNB.releases.last_text }} | bitsandbytes older than {{ transformers.IMPORTERROR_FOR_OLD_BNB.bnb_below }} | `… requires the latest version of bitsandbytes: pip install -U bitsandbytes` |

    Read in the released wheels: {{ transformers.IMPORTERROR_IN_MODELING_UTILS.releases.first_text }} added `torch.cuda.is_available()` to `is_bitsandbytes_available()`; {{ transformers.GPU_CHECKED_FIRST_IN_MODELING_UTILS.first_text }}–{{ transformers.GPU_CHECKED_FIRST_IN_MODELING_UTILS.last_text }} and
    {{ transformers.GPU_CHECKED_FIRST_IN_QUANTIZERS.first_text }}–{{ transformers.GPU_CHECKED_FIRST_IN_QUANTIZERS.last_text }} check for a GPU first and raise `No GPU found` instead; {{ transformers.BNB_AVAILABLE_WITHOUT_CUDA.first_text }} needs CUDA only for a bitsandbytes older than
    {{ transformers.IMPORTERROR_FOR_OLD_BNB.bnb_below }}; {{ transformers.IMPORTERROR_FOR_OLD_BNB.releases.below_text }} names the cause. It holds on any machine, a Mac or a CPU-only laptop included, not only beside an NVIDIA
    GPU. Each release's own check, run on such machines by `tools/oracle_transformers.py`, agrees.

    ## Why it matters

    Both packages are installed, so the message sends users to reinstall accelerate and bitsandbytes, which changes
    nothing. On a Mac with a bitsandbytes that supports it ({{ platforms.MACOS_WHEELS.first_minor }}+), transformers refuses it for the same reason.

    ## How to fix

    - If the machine should use an NVIDIA GPU, install a CUDA build of torch first (`torch.cuda.is_available()` must be
      True).
    - To run bitsandbytes without CUDA (its CPU backend, or Apple silicon from {{ platforms.MACOS_WHEELS.first_minor }}), upgrade transformers to {{ transformers.BNB_CHECK_WITHOUT_CUDA.first_text }} or
      newer and bitsandbytes to {{ transformers.BNB_MULTI_BACKEND.first_text }} or newer (the first that declares its CPU backend to transformers;
      transformers {{ transformers.FROZENSET_DISCARD_BUG.first_text }}–{{ transformers.CPU_DISCARDED.last_text }} still refuse a machine with only a CPU):

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    pip install -U "transformers{{ transformers.BNB_CHECK_WITHOUT_CUDA.pip_spec }}" bitsandbytes
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
    # Without CUDA the gate loads only a bitsandbytes that declares its other backends (BNB_MULTI_BACKEND).
    needed_bnb = None if BNB_MULTI_BACKEND.contains(bnb.version) else BNB_MULTI_BACKEND.first_text
    upgrade = f'pip install -U "transformers{BNB_CHECK_WITHOUT_CUDA.pip_spec()}"' + (
        ' "bitsandbytes>=' + needed_bnb + '"' if needed_bnb else ""
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
            + (f" and bitsandbytes to {needed_bnb} or newer" if needed_bnb else "")
            + ".",
            [TORCH_BUILD_CHECK, upgrade],
        ),
    )
