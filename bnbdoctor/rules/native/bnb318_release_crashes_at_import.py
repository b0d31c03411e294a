"""BNB318 release-crashes-at-import: passes when the installed release has no known import crash on this machine."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.loader import IMPORT_CRASHES, ROCM_IN_PYPI_WHEEL, ROCM_TORCH_WITHOUT_CUDA_VERSION, import_crash
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, predicted_selection, torch_of


@rule(
    Severity.ERROR,
    "The installed bitsandbytes release has no known import crash on this machine",
    needs=("python",),
    covers=tuple(sorted({family for crash in IMPORT_CRASHES for family in crash.catalog})),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/CHANGELOG.md",),
)
def release_crashes_at_import(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. It fires when the library choice predicted for the installed release on this
    machine (see [BNB301](BNB301.md)) is one of the release bugs that make bitsandbytes' own loader fail before it
    looks for a library. Each was found by running the releases' own code on simulated machines
    (`tools/oracle_bnb.py`, the table `tests/data/oracle/bnb_loader.json`), not by reading it:

    - {{ loader.UNPACK_WITHOUT_GPU.releases.first_text }} only, whenever torch sees no GPU (a CPU build of torch, or no
      driver): `evaluate_cuda_setup` returns four values where its caller unpacks five, so `import bitsandbytes`
      raises `ValueError: too many values to unpack (expected 4)`.
      {{ loader.UNPACK_WITHOUT_GPU.releases.below_text }} fixed it.
    - {{ loader.ROCM_TORCH_CUDA_NONE.first_text }}–{{ loader.ROCM_TORCH_CUDA_NONE.last_text }} with a ROCm build of
      torch that sees a GPU: these releases build the library name from `torch.version.cuda`, which is None there.
      Up to {{ loader.LEGACY_CUDA_SETUP.last_text }} `import bitsandbytes` raises
      `AttributeError: 'NoneType' object has no attribute 'split'`; from {{ loader.CPU_FALLBACK_ERA.first_text }} the
      same error is logged ("Could not load bitsandbytes native library") and the first native call fails.

    {{ gpus.INT8_NAMEERROR.first_text }}'s `NameError: name 'cuda_setup' is not defined` below compute capability 7.5 is the same kind of bug;
    [BNB104](BNB104.md) names it with the GPU it concerns.

    ## Why it matters

    Nothing on the machine is wrong: the release itself cannot run here, and no path, variable or reinstall of the
    same version helps. Users meet the error at `import bitsandbytes` (or at the first 8-bit/4-bit call), usually
    inside transformers or an app, with a message that does not say the release is at fault.

    ## How to fix

    Install a release without the bug: a later bitsandbytes for the first case; for ROCm, a release whose PyPI
    wheel ships ROCm libraries ({{ loader.ROCM_IN_PYPI_WHEEL.first_text }}+):

    ```bash
    pip install -U "bitsandbytes>={{ loader.UNPACK_WITHOUT_GPU.releases.below_text }}"
    pip install -U "bitsandbytes>={{ loader.ROCM_IN_PYPI_WHEEL.first_text }}"   # ROCm torch
    ```
    """
    selection = predicted_selection(facts)
    bnb, torch = bnb_of(facts), torch_of(facts)
    if selection is None or bnb is None or not bnb.installed:
        return Skip("bitsandbytes is not installed or its version is unknown")
    crash = import_crash(selection.message)
    if crash is None or crash.reported_by is not None:
        return None
    rocm = crash is ROCM_TORCH_WITHOUT_CUDA_VERSION
    spec = ROCM_IN_PYPI_WHEEL.pip_spec() if rocm else crash.releases.after().pip_spec()
    at_import = selection.outcome == "import_error"
    return Hit(
        title=f"bitsandbytes {bnb.version} {'crashes at import' if at_import else 'cannot load its library'} "
        f"on this machine ({crash.when})",
        explanation=f"bitsandbytes {crash.releases.first_text}"
        + (f"–{crash.releases.last_text}" if crash.releases.last_text != crash.releases.first_text else "")
        + f" fails here before it looks for a library, with `{crash.message}`"
        + ("" if at_import else " logged at import, then every native call fails")
        + ". It is a bug of the release, not of this machine.",
        evidence=[
            ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
            ev("torch", torch.version if torch else None, "python.torch.version"),
            ev(
                "torch's CUDA / ROCm",
                (torch.cuda or torch.hip or "none (a CPU build)") if torch else None,
                "python.torch.cuda",
            ),
            ev("the release says", crash.message, "native.selection.message"),
        ],
        remediation=Remediation(
            "Install a bitsandbytes release without this bug" + (" that ships ROCm libraries." if rocm else "."),
            [f'pip install -U "bitsandbytes{spec}"'],
        ),
        covers=list(crash.catalog),
    )
