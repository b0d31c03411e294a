"""BNB103 gpu-below-minimum-compute-capability: passes when every visible GPU has the compute capability 4/8-bit quantization needs."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.gpus import KEPLER, MAXWELL, MAXWELL_MIN, QUANTIZATION_MIN, pre_pascal_family
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.releases import WheelLibrary, kernel_runs_on, nearest_recorded_wheel
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, predicted_selection, torch_of, versioned, visible_gpus
from bnbdoctor.rules.gpu._shared import _group, _group_label, newest_release_with_kernels


def _installed_library(facts: Facts) -> WheelLibrary | None:
    """The recorded architecture data of the library the installed release will load."""
    selection = predicted_selection(facts)
    bnb = bnb_of(facts)
    if selection is None or selection.backend != "cuda" or not selection.loaded_file or facts.platform is None:
        return None
    wheel = nearest_recorded_wheel(bnb.version if bnb else None, facts.platform.os)
    return wheel.libraries.get(selection.loaded_file) if wheel else None


@rule(
    Severity.ERROR,
    f"Every visible GPU has compute capability {QUANTIZATION_MIN.text} or newer",
    needs=("gpu",),
    covers=("kepler_gpu_unsupported", "maxwell_gpu_dropped", "no_kernel_image_available"),
    references=(
        BNB_DOCS_INSTALL,
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/575",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1755",
    ),
    requires=("torch-runs-on-gpus",),
    refutes=("gpus-have-kernels",),
)
def below_minimum(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu` facts and is skipped when no NVIDIA GPU is visible. It reports one finding for each visible
    GPU whose compute capability is known and below {{ gpus.QUANTIZATION_MIN.text }}, the {{ gpus.QUANTIZATION_MIN.architecture }} minimum stated by current bitsandbytes
    documentation. The GPU is named as Kepler (3.x), Maxwell (5.x) or "pre-Pascal".

    The suggested fix comes from bnbdoctor's records of real PyPI wheels: it looks for the newest release, for this
    operating system and torch's CUDA major version, that ships a CUDA library whose SASS or PTX still runs on the GPU.
    If there is one, the finding suggests pinning it. If not, it says that no recorded release has kernels for the GPU.

    The check looks only at the GPU. It does not look at the installed bitsandbytes version, so it also fires when the
    installed release still ships kernels for a Maxwell card (for example {{ gpus.MAXWELL.last_with }}).

    ## Why it matters

    A CUDA library contains machine code (SASS) for a list of architectures and, sometimes, PTX that the driver can
    compile for newer ones. A GPU older than everything in the list cannot run any kernel. The first call fails with
    `Error no kernel image is available for execution on the device at line 479 in file ...ops.cu`.

    - Kepler (3.x): the docs say that `bitsandbytes >= {{ gpus.KEPLER.removed_in }} no longer includes Kepler binaries in pip installations`.
      Old logs show the loader giving up: `CUDA SETUP: Required library version not found:
      libbitsandbytes_cuda101_nocublaslt.so. Maybe you need to compile it from source?` followed by `CUDA SETUP:
      Defaulting to libbitsandbytes_cpu.so...`.
    - Maxwell (5.0/5.2): supported but deprecated in the {{ gpus.MAXWELL.deprecated_in }}–{{ gpus.MAXWELL.last_with_minor }} docs. From {{ gpus.MAXWELL.removed_in }} the docs say that Maxwell support
      *is not included in PyPI distributions* and must be built from source. The real wheels agree: the {{ gpus.MAXWELL.last_with }} CUDA
      11.8–12.6 libraries still contain sm_50, the 0.48.2 ones start at sm_60.

    ## Example notes

    With a Maxwell card and torch cu124, the fix line instead reads `bitsandbytes {{ gpus.MAXWELL.last_with }} is the newest release whose
    prebuilt kernels still run on Maxwell (best effort, unmaintained)` and offers `pip install "bitsandbytes=={{ gpus.MAXWELL.last_with }}"`.

    ## How to fix

    - Use a GPU with compute capability 6.0 or newer. This is the only supported option.
    - Maxwell, best effort: pin the last release with Maxwell kernels for torch's CUDA major, as the finding suggests:

      ```bash
      pip install "bitsandbytes=={{ gpus.MAXWELL.last_with }}"
      ```

    - Build from source for the card, at your own risk (maintainers no longer test these architectures):

      ```bash
      git clone https://github.com/bitsandbytes-foundation/bitsandbytes.git && cd bitsandbytes
      cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=52 -S . && make
      pip install .
      ```

    - Otherwise, use a quantization method that does not depend on bitsandbytes.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/v0.48.1/installation (Maxwell removed from PyPI builds)
    - https://huggingface.co/docs/bitsandbytes/v0.43.0/installation (Kepler binaries dropped in {{ gpus.KEPLER.removed_in }})
    - https://huggingface.co/docs/bitsandbytes/errors ("No kernel image available")
    - https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1806 (CUDA: drop Maxwell compatibility)
    """
    if not visible_gpus(facts):
        return Skip("no visible NVIDIA GPU")
    hits = []
    os_name = facts.platform.os if facts.platform else "linux"
    torch, bnb = torch_of(facts), bnb_of(facts)
    library = _installed_library(facts)
    for group in _group([d for d in visible_gpus(facts) if d.cc and d.cc < QUANTIZATION_MIN.cc]):
        device = group[0]
        cc = device.cc
        assert cc is not None
        family = pre_pascal_family(cc)
        family_id = "kepler_gpu_unsupported" if cc < MAXWELL_MIN.cc else "maxwell_gpu_dropped"
        evidence = [
            ev("GPU", _group_label(group), f"gpu.devices[{device.index}]"),
            ev("compute capability", device.cc_text, f"gpu.devices[{device.index}].compute_capability"),
        ]
        if library is not None and kernel_runs_on(library, cc):
            hits.append(
                Hit(
                    title=f"{_group_label(group)} {'are' if len(group) > 1 else 'is'} below {QUANTIZATION_MIN.text}: "
                    "supported by this release, not by newer ones",
                    explanation=f"The installed {versioned(facts, 'bitsandbytes', bnb.version if bnb else None)} still "
                    f"ships {family} kernels "
                    f"in {library.file}, but {family} is deprecated: Maxwell left the PyPI wheels in {MAXWELL.removed_in} "
                    f"and current releases support {QUANTIZATION_MIN.architecture} ({QUANTIZATION_MIN.text}) and newer "
                    "only. Upgrading bitsandbytes will break this GPU.",
                    evidence=[*evidence, ev("library", library.file, "python.bitsandbytes.native_libraries")],
                    remediation=Remediation(
                        f"Keep bitsandbytes below {minor(MAXWELL.removed_in)} on this machine "
                        f"(pin it), or move to a {QUANTIZATION_MIN.architecture} or newer GPU.",
                        [],
                    ),
                    severity=Severity.WARNING,
                    covers=[family_id],
                )
            )
            continue
        older = newest_release_with_kernels(cc, os_name, torch.cuda if torch else None)
        if older and (bnb is None or older != bnb.version):
            fix = (
                f"bitsandbytes {older} is the newest release whose prebuilt kernels still run on "
                f"{family} (best effort, unmaintained); otherwise use a {QUANTIZATION_MIN.architecture} "
                f"({QUANTIZATION_MIN.text}) or newer GPU."
            )
            commands = [f'pip install "bitsandbytes=={older}"']
        else:
            fix = (
                f"No bitsandbytes release of the last years ships {family} kernels (Kepler binaries left PyPI "
                f"in {KEPLER.removed_in}, before 4-bit support). Use a GPU with compute capability "
                f"{QUANTIZATION_MIN.text} or newer, build "
                "bitsandbytes from source for this architecture at your own risk, or use a quantization "
                "method that does not need bitsandbytes."
            )
            commands = []
        hits.append(
            Hit(
                title=f"{_group_label(group)} {'are' if len(group) > 1 else 'is'} below bitsandbytes' minimum of "
                f"{QUANTIZATION_MIN.text}",
                explanation="bitsandbytes supports 8-bit optimizers and 4/8-bit quantization from "
                f"{QUANTIZATION_MIN.architecture} ({QUANTIZATION_MIN.text}) on. "
                f"{family} GPUs are not built for: loading a kernel fails with 'no kernel image is available for "
                f"execution on the device' (Kepler left PyPI in {KEPLER.removed_in}, Maxwell in {MAXWELL.removed_in}).",
                evidence=evidence,
                remediation=Remediation(fix, commands),
                covers=[family_id, "no_kernel_image_available"],
            )
        )
    return hits
