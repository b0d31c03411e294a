"""BNB105 gpu-arch-not-in-bnb-binary: passes when the bitsandbytes library for torch's CUDA version ships kernels for every visible GPU."""

from __future__ import annotations

from bnbdoctor.derive import selection_input
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.gpus import QUANTIZATION_MIN
from bnbdoctor.knowledge.releases import kernel_runs_on, nearest_recorded_wheel
from bnbdoctor.knowledge.selection import override_reaching, torch_cuda_reaching
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, predicted_selection, torch_of, versioned, visible_gpus
from bnbdoctor.rules.gpu._shared import _group, _group_label, newest_release_with_kernels


def _no_reachable_build(facts: Facts, cc: tuple[int, int]) -> str:
    """BNB105's fix when no override or torch build makes the installed release load a library for ``cc``."""
    bnb, torch = bnb_of(facts), torch_of(facts)
    newer = newest_release_with_kernels(
        cc, facts.platform.os if facts.platform else "linux", torch.cuda if torch else None
    )
    return (
        f"No library that {versioned(facts, 'bitsandbytes', bnb.version if bnb else None)} would select on this machine "
        "has code for this GPU (neither an override nor another torch build reaches one): upgrade bitsandbytes"
        + (f" ({newer} ships a build for torch's CUDA major with it)" if newer else "")
        + ", or hide this GPU with CUDA_VISIBLE_DEVICES."
    )


@rule(
    Severity.ERROR,
    "The bitsandbytes library for torch's CUDA version ships kernels for every visible GPU",
    needs=("gpu", "python", "platform"),
    covers=("no_kernel_image_available", "invalid_device_function"),
    references=(BNB_DOCS_INSTALL,),
    requires=("gpus-have-kernels", "library-readable", "torch-runs-on-gpus"),
)
def arch_not_in_binary(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu`, `python` and `platform` facts. It first predicts which native library the installed
    bitsandbytes will load. The prediction follows that release's own selection logic: `torch.version.cuda`,
    `BNB_CUDA_VERSION`, and the `libbitsandbytes_*` files actually present. It is skipped when:

    - no CUDA library would be selected (CPU, ROCm or XPU torch, no usable GPU, unknown bitsandbytes version); or
    - bnbdoctor has no architecture record for that file. The records come from the real PyPI wheels: the same minor
      release if recorded (0.45.0 uses 0.45.5's), else the newest recorded release before it.

    For each visible GPU with compute capability {{ gpus.QUANTIZATION_MIN.text }} or newer (older ones are [BNB103](BNB103.md)'s; identical GPUs
    together, one finding naming them all), it reports an error when the library holds neither of these:

    - SASS for the same major architecture with a minor version not above the GPU's (sm_80 code runs on sm_86, not the
      other way round);
    - PTX for an architecture at or below the GPU's, which the driver can JIT-compile.

    The finding lists the architectures in the library and, when there are some, other libraries in the same wheel that
    would run on the GPU.

    ## Why it matters

    bitsandbytes chooses its library by CUDA version only, never by GPU. So a supported GPU can still get a library
    without code for it. Every kernel launch then fails with `Error no kernel image is available for execution on the
    device at line N in file .../ops.cu`, or `invalid device function`. Real cases from the wheels:

    - 0.46.1 `cuda128`/`cuda129` start at sm_75, and 0.47.0–0.49.2 `cuda128`/`cuda129` start at sm_70. Pascal (6.x) with
      a cu128 torch has no kernels, while the `cuda118`–`cuda126` libraries of the same wheels include sm_60.
    - 0.50.2 `cuda130`/`cuda132` start at sm_75, so Pascal and Volta need a CUDA 12 torch.
    - 0.41.1/0.42.0 contain no PTX at all, so GPUs newer than their newest SASS (sm_90) are not covered.

    A source build for other targets gives the same symptom (`invalid device function`), as does a library built against
    a different CUDA runtime than the one loaded.

    ## How to fix

    Install a torch build whose CUDA version maps to a library with the GPU's architecture. The finding lists some
    candidates (at most four). For the V100 above, bitsandbytes 0.46.1's `cuda126` library contains sm_70, so a cu126
    torch works:

    ```bash
    pip install --force-reinstall "torch==2.7.1" --index-url https://download.pytorch.org/whl/cu126
    python -m bitsandbytes
    ```

    Alternatives:

    - From {{ loader.OVERRIDE_NOCUBLASLT_BUG.below_text }}, `BNB_CUDA_VERSION=126` makes bitsandbytes load `libbitsandbytes_cuda126` regardless of torch. The
      matching `libcudart` must then be found by the loader.
    - Build from source for the exact architecture, e.g. `cmake -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=61 -S . &&
      make && pip install .` (ROCm: `-DBNB_ROCM_ARCH=gfx1100`).

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation (targets per PyPI build)
    - https://huggingface.co/docs/bitsandbytes/errors ("No kernel image available")
    - https://docs.nvidia.com/deploy/cuda-compatibility/
    """
    selection = predicted_selection(facts)
    bnb = bnb_of(facts)
    assert facts.platform is not None
    if selection is None or selection.backend != "cuda" or not selection.loaded_file:
        return Skip("no CUDA library of bitsandbytes is selected")
    wheel = nearest_recorded_wheel(bnb.version if bnb else None, facts.platform.os)
    library = wheel.libraries.get(selection.loaded_file) if wheel else None
    if library is None or not (library.sass or library.ptx):
        return Skip(f"no architecture record for {selection.loaded_file} in bitsandbytes {bnb.version if bnb else '?'}")
    hits = []
    for group in _group(visible_gpus(facts)):  # identical GPUs, one finding naming them all
        device = group[0]
        cc = device.cc
        if cc is None or cc < QUANTIZATION_MIN.cc or kernel_runs_on(library, cc):
            continue
        archs = ", ".join(f"sm_{a}" for a in library.sass) + (
            f"; PTX {', '.join(f'compute_{a}' for a in library.ptx)}" if library.ptx else ""
        )
        torch_major = (major_minor(torch_of(facts).cuda) or (0, 0))[0]  # type: ignore[union-attr]
        alternatives = sorted(
            (
                lib
                for lib in wheel.libraries.values()  # type: ignore[union-attr]
                if lib.backend == "cuda" and lib.cuda_toolkit and kernel_runs_on(lib, cc)
            ),
            key=lambda lib: major_minor(lib.cuda_toolkit) or (0, 0),
            reverse=True,
        )
        # Only what the release's own selection would load: an override value or torch build that reaches the file.
        inputs = selection_input(facts)
        alternatives = [
            lib for lib in alternatives if inputs and torch_cuda_reaching(inputs, lib.file, lib.cuda_toolkit or "")
        ]
        same_major = [
            (lib, reached)
            for lib in alternatives
            if (major_minor(lib.cuda_toolkit) or (0, 0))[0] == torch_major
            and inputs
            and (reached := override_reaching(inputs, lib.file))
        ]
        hits.append(
            Hit(
                title=f"{selection.loaded_file} has no kernels for {_group_label(group)}",
                explanation=f"{versioned(facts, 'bitsandbytes', bnb.version if bnb else None)} loads "
                f"{selection.loaded_file} for torch's CUDA "
                f"{torch_of(facts).cuda}, which contains code for {archs} only (recorded from the real "  # type: ignore[union-attr]
                f"{wheel.version} wheel). Every kernel launch on sm_{cc[0]}{cc[1]} fails with 'no kernel image is "  # type: ignore[union-attr]
                "available for execution on the device'.",
                evidence=[
                    ev("GPU", f"{_group_label(group)}, sm_{cc[0]}{cc[1]}", f"gpu.devices[{device.index}]"),
                    ev("library", selection.loaded_file, "python.bitsandbytes.native_libraries"),
                    ev("architectures in library", archs),
                ],
                remediation=Remediation(
                    (
                        f"Point bitsandbytes at {same_major[0][0].file} (CUDA {same_major[0][0].cuda_toolkit}, same "
                        "major as torch, so torch's CUDA runtime satisfies it), or install a torch build for that CUDA "
                        "version."
                        if same_major
                        else (
                            "Install a torch build for a CUDA version whose bitsandbytes library has this architecture"
                            f" (e.g. CUDA {alternatives[0].cuda_toolkit}: {alternatives[0].file})."
                        )
                        if alternatives
                        else _no_reachable_build(facts, cc)
                    ),
                    [f"export {same_major[0][1][0]}={same_major[0][1][1]}"] if same_major else [],
                ),
                # Only GPUs of QUANTIZATION_MIN and newer reach here (BNB103 speaks for Maxwell and Kepler).
                covers=["no_kernel_image_available", "invalid_device_function"],
            )
        )
    return hits
