"""Rules about GPU architectures: minimums, int8 tensor cores, kernels shipped, mixed boxes."""

from __future__ import annotations

from bnbdoctor.derive import selection_input
from bnbdoctor.facts import Facts, GpuDevice
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.gpus import (
    CC_CHOOSES_LIBRARY,
    GTX16_NAME_CHECK,
    INT8_MATMUL_MIN,
    INT8_NAMEERROR,
    INT8_WITHOUT_FALLBACK,
    KEPLER,
    MAXWELL,
    MAXWELL_MIN,
    QUANTIZATION_MIN,
    pre_pascal_family,
)
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.releases import (
    NO_TENSOR_CORE_NAMES,
    WheelLibrary,
    kernel_runs_on,
    nearest_recorded_wheel,
    recorded_wheels,
)
from bnbdoctor.knowledge.selection import override_reaching, torch_cuda_reaching
from bnbdoctor.knowledge.torch_wheels import TorchBuild, arch_runs_on, builds_for, recorded_list
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    TORCH_GET_STARTED,
    bnb_of,
    ev,
    index_list,
    predicted_selection,
    torch_of,
    versioned,
    visible_gpus,
)


def newest_release_with_kernels(cc: tuple[int, int], os_name: str, torch_cuda: str | None) -> str | None:
    """The newest recorded wheel that ships a library for torch's CUDA major that runs on ``cc``."""
    runtime = major_minor(torch_cuda)
    best = None
    for wheel in recorded_wheels():
        if wheel.os != os_name:
            continue
        for lib in wheel.libraries.values():
            if lib.backend != "cuda" or not lib.cuda_toolkit:
                continue
            if runtime and major_minor(lib.cuda_toolkit)[0] != runtime[0]:  # type: ignore[index]
                continue
            if kernel_runs_on(lib, cc):
                if best is None or release_tuple(wheel.version) > release_tuple(best):  # type: ignore[operator]
                    best = wheel.version
                break
    return best


def _group(devices: list[GpuDevice]) -> list[list[GpuDevice]]:
    """Identical GPUs (same name and capability) reported once."""
    groups: dict[tuple[str, tuple[int, int] | None], list[GpuDevice]] = {}
    for device in devices:
        groups.setdefault((device.name, device.cc), []).append(device)
    return list(groups.values())


def _group_label(devices: list[GpuDevice]) -> str:
    first = devices[0]
    indices = index_list([d.index for d in devices])
    return f"GPU{'s' if len(devices) > 1 else ''} {indices} ({first.name}, compute capability {first.cc_text})"


def _installed_library(facts: Facts) -> WheelLibrary | None:
    """The recorded architecture data of the library the installed release will load."""
    selection = predicted_selection(facts)
    bnb = bnb_of(facts)
    if selection is None or selection.backend != "cuda" or not selection.loaded_file or facts.platform is None:
        return None
    wheel = nearest_recorded_wheel(bnb.version if bnb else None, facts.platform.os)
    return wheel.libraries.get(selection.loaded_file) if wheel else None


@rule(
    "BNB103",
    "gpu-below-minimum-compute-capability",
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
    GPU whose compute capability is known and below 6.0, the Pascal minimum stated by current bitsandbytes
    documentation. The GPU is named as Kepler (3.x), Maxwell (5.x) or "pre-Pascal".

    The suggested fix comes from bnbdoctor's records of real PyPI wheels: it looks for the newest release, for this
    operating system and torch's CUDA major version, that ships a CUDA library whose SASS or PTX still runs on the GPU.
    If there is one, the finding suggests pinning it. If not, it says that no recorded release has kernels for the GPU.

    The check looks only at the GPU. It does not look at the installed bitsandbytes version, so it also fires when the
    installed release still ships kernels for a Maxwell card (for example 0.47.0).

    ## Why it matters

    A CUDA library contains machine code (SASS) for a list of architectures and, sometimes, PTX that the driver can
    compile for newer ones. A GPU older than everything in the list cannot run any kernel. The first call fails with
    `Error no kernel image is available for execution on the device at line 479 in file ...ops.cu`.

    - Kepler (3.x): the docs say that `bitsandbytes >= 0.39.1 no longer includes Kepler binaries in pip installations`.
      Old logs show the loader giving up: `CUDA SETUP: Required library version not found:
      libbitsandbytes_cuda101_nocublaslt.so. Maybe you need to compile it from source?` followed by `CUDA SETUP:
      Defaulting to libbitsandbytes_cpu.so...`.
    - Maxwell (5.0/5.2): supported but deprecated in the 0.45–0.47 docs. From 0.48.0 the docs say that Maxwell support
      *is not included in PyPI distributions* and must be built from source. The real wheels agree: the 0.47.0 CUDA
      11.8–12.6 libraries still contain sm_50, the 0.48.2 ones start at sm_60.

    ## Example notes

    With a Maxwell card and torch cu124, the fix line instead reads `bitsandbytes 0.47.0 is the newest release whose
    prebuilt kernels still run on Maxwell (best effort, unmaintained)` and offers `pip install "bitsandbytes==0.47.0"`.

    ## How to fix

    - Use a GPU with compute capability 6.0 or newer. This is the only supported option.
    - Maxwell, best effort: pin the last release with Maxwell kernels for torch's CUDA major, as the finding suggests:

      ```bash
      pip install "bitsandbytes==0.47.0"
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
    - https://huggingface.co/docs/bitsandbytes/v0.43.0/installation (Kepler binaries dropped in 0.39.1)
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


@rule(
    "BNB104",
    "int8-matmul-slow-path",
    Severity.WARNING,
    f"Every visible GPU has int8 tensor cores for LLM.int8() (cc {INT8_MATMUL_MIN.text}+)",
    needs=("gpu",),
    covers=("slow_int8_matmul_warning_cc_lt_75", "int8_matmul_unsupported_cc_lt_75", "cuda_setup_nameerror_bnb_0_37"),
    references=(
        "https://huggingface.co/docs/bitsandbytes/main/en/reference/nn/linear8bit",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/529",
    ),
    requires=("gpus-have-kernels", "torch-runs-on-gpus"),
)
def int8_slow_path(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu` facts and is skipped when no NVIDIA GPU is visible. It reports one finding for each visible
    GPU that has compute capability 6.0 or newer (older GPUs are [BNB103](BNB103.md)'s) and either:

    - has compute capability below 7.5, so it has no int8 tensor cores (Pascal 6.x, Volta 7.0, Xavier 7.2); or
    - has compute capability 7.5 but its name contains `GTX 1630`, `GTX 1650` or `GTX 1660`, and the installed
      bitsandbytes is older than 0.46. These Turing cards have no tensor cores, and bitsandbytes' `supports_igemmlt()`
      excludes them by name (the function is called up to 0.44.x).

    Only LLM.int8() (`load_in_8bit=True`) is affected, so the finding is a warning.

    ## Why it matters

    LLM.int8() multiplies the int8 part of each layer with cuBLASLt's int8 tensor-core kernels (`igemmlt`), which need
    Turing (7.5) or newer. On older GPUs:

    - 0.37 to 0.44 load a `_nocublaslt` library and use a slower 8-bit matmul. From 0.45.0 the Python side no longer
      branches on compute capability, but the GPU still has no int8 tensor cores. The legacy loader says so: `WARNING:
      Compute capability < 7.5 detected! Only slow 8-bit matmul is supported for your GPU!`. This is a warning, not the
      failure. If something else breaks, the cause is elsewhere in the log.
    - 0.36 and older have no slow path. They abort in the matmul with `ERROR: Your GPU does not support Int8 Matmul!`
      and an `igemmlt` assertion (`Assertion 'false' failed`).
    - 0.36.0 and 0.37.0 can crash on import on these GPUs with `NameError: name 'cuda_setup' is not defined`. The bug is
      in the warning code for capability < 7.5.

    4-bit quantization (NF4/FP4) and the 8-bit optimizers do not use these kernels. They work from compute capability
    6.0.

    ## How to fix

    - Prefer 4-bit quantization on these GPUs. With transformers:

      ```python
      from transformers import BitsAndBytesConfig

      config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
      ```

    - If you need 8-bit, expect it to be slower. On bitsandbytes 0.37.0 or older, upgrade first, for the slow path and
      the `NameError` fix:

      ```bash
      pip install -U bitsandbytes
      ```

    - For fast LLM.int8(), use a Turing (RTX 20xx, T4) or newer GPU.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/main/en/installation (LLM.int8() needs compute capability 7.5+)
    - https://huggingface.co/docs/transformers/v4.49.0/en/quantization/bitsandbytes
    """
    if not visible_gpus(facts):
        return Skip("no visible NVIDIA GPU")
    bnb = bnb_of(facts)
    release = release_tuple(bnb.version) if bnb and bnb.installed else None
    old_name_check = GTX16_NAME_CHECK.contains(release)  # supports_igemmlt() is used up to 0.44.x
    hits = []
    for group in _group(visible_gpus(facts)):
        device = group[0]
        cc = device.cc
        if cc is None or cc < QUANTIZATION_MIN.cc:
            continue  # BNB103 already speaks for this GPU
        no_tensor_cores = old_name_check and any(tag in device.name for tag in NO_TENSOR_CORE_NAMES)
        if cc >= INT8_MATMUL_MIN.cc and not no_tensor_cores:
            continue
        why = (
            f"{device.name} has compute capability {device.cc_text} but no tensor cores, and this "
            "bitsandbytes release excludes it from the int8 matmul by name"
            if no_tensor_cores
            else f"compute capability {device.cc_text} has no int8 tensor cores ({INT8_MATMUL_MIN.architecture}, "
            f"{INT8_MATMUL_MIN.text}, is the first)"
        )
        evidence = [
            ev("GPU", _group_label(group), f"gpu.devices[{device.index}].name"),
            ev("compute capability", device.cc_text, f"gpu.devices[{device.index}].compute_capability"),
        ]
        fixed = INT8_NAMEERROR.after().pip_spec()
        if INT8_WITHOUT_FALLBACK.contains(release):
            hits.append(
                Hit(
                    title=f"{_group_label(group)}: {versioned(facts, 'bitsandbytes', bnb.version)} cannot run LLM.int8() here",  # type: ignore[union-attr]
                    explanation=f"LLM.int8() needs int8 tensor cores; {why}. Releases before "
                    f"{minor(INT8_WITHOUT_FALLBACK.below_text)} have no fallback and "
                    "fail with 'ERROR: Your GPU does not support Int8 Matmul!'.",
                    evidence=[*evidence, ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],  # type: ignore[union-attr]
                    remediation=Remediation(
                        f"Upgrade bitsandbytes ({minor(INT8_WITHOUT_FALLBACK.below_text)}+ has a "
                        "slower path for these GPUs), or use 4-bit quantization.",
                        [f'pip install -U "bitsandbytes{fixed}"'],
                    ),
                    severity=Severity.ERROR,
                    covers=["int8_matmul_unsupported_cc_lt_75"],
                )
            )
            continue
        if INT8_NAMEERROR.contains(release):
            hits.append(
                Hit(
                    title=f"{versioned(facts, 'bitsandbytes', bnb.version)} crashes at import on compute capability {device.cc_text}",  # type: ignore[union-attr]
                    explanation=f"{INT8_NAMEERROR.first_text} raises \"NameError: name 'cuda_setup' is not defined\" "
                    f"while setting up the slow int8 path for GPUs below {INT8_MATMUL_MIN.text}.",
                    evidence=[*evidence, ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],  # type: ignore[union-attr]
                    remediation=Remediation("Upgrade bitsandbytes.", [f'pip install -U "bitsandbytes{fixed}"']),
                    severity=Severity.ERROR,
                    covers=["cuda_setup_nameerror_bnb_0_37"],
                )
            )
            continue
        hits.append(
            Hit(
                title=f"{_group_label(group)}: LLM.int8() runs on the slow path",
                explanation=f"LLM.int8() (load_in_8bit) uses cuBLASLt int8 tensor-core kernels; {why}. bitsandbytes "
                f"falls back to a slower 8-bit matmul (releases before {minor(INT8_WITHOUT_FALLBACK.below_text)} failed "
                "outright with 'Your GPU does not support Int8 Matmul!'). 4-bit (NF4/FP4) and 8-bit optimizers are "
                "unaffected.",
                evidence=evidence,
                remediation=Remediation(
                    "Prefer 4-bit quantization (load_in_4bit=True, bnb_4bit_quant_type='nf4') on "
                    "this GPU, or accept slower 8-bit inference; use a "
                    f"{INT8_MATMUL_MIN.architecture} or newer GPU for fast LLM.int8()."
                ),
                covers=["slow_int8_matmul_warning_cc_lt_75"],
            )
        )
    return hits


@rule(
    "BNB105",
    "gpu-arch-not-in-bnb-binary",
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

    For each visible GPU with compute capability 6.0 or newer (older ones are [BNB103](BNB103.md)'s; identical GPUs
    together, one finding naming them all), it reports an error when the library holds neither of these:

    - SASS for the same major architecture with a minor version not above the GPU's (sm_80 code runs on 8.6, not the
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

    - From 0.44, `BNB_CUDA_VERSION=126` makes bitsandbytes load `libbitsandbytes_cuda126` regardless of torch. The
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
    "BNB106",
    "mixed-gpu-generations",
    Severity.WARNING,
    "All visible GPUs fall on the same side of bitsandbytes' capability thresholds",
    needs=("gpu",),
    covers=("mixed_gpu_wrong_compute_capability", "cublaslt_ran_into_error"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/448",),
)
def mixed_gpus(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `gpu` facts. It is skipped when fewer than two visible GPUs have a known compute capability, and
    for bitsandbytes 0.45 and newer, whose library choice no longer depends on the GPUs (BNB104 and BNB105 judge each
    GPU there). It passes when all of them have the same capability, or when all fall in the same one of three tiers:

    - below 6.0: unsupported by current bitsandbytes;
    - 6.0 to 7.4: supported, but without int8 tensor cores;
    - 7.5 and newer: fast LLM.int8().

    When the visible GPUs span more than one tier, it reports one warning. The warning names the GPU with the highest
    capability and the GPUs in lower tiers, and suggests a `CUDA_VISIBLE_DEVICES` that keeps only the GPUs in the top
    tier. Indices are NVML's, which is `nvidia-smi`'s PCI bus order.

    ## Why it matters

    bitsandbytes reduces all visible GPUs to one number, the **highest** compute capability. Up to 0.44.x that number
    picks the library for the whole process: the cuBLASLt build when it is 7.5 or more, the `_nocublaslt` build
    otherwise. Work that then runs on a GPU from another generation uses code chosen for a different one:

    - old loaders reporting the wrong card, e.g. `CUDA SETUP: Highest compute capability among GPUs detected: 6.1` on a
      box with an A6000, then `Error named symbol not found at line 528 in file .../ops.cu`;
    - int8 matmul on the weaker card: `cuBLAS API failed with status 15` followed by `Exception: cublasLt ran into an
      error!` (status 15 is `CUBLAS_STATUS_NOT_SUPPORTED`).

    From 0.45.0 the `_nocublaslt` variant is gone and the library depends only on torch's CUDA version. The risk that
    remains is placement. With `device_map="auto"`, accelerate spreads layers over every visible GPU, so the older card
    runs them slowly ([BNB104](BNB104.md)) or not at all ([BNB105](BNB105.md)).

    ## Example notes

    The finding's explanation (one library chosen for the whole process) describes releases up to 0.44.x. With 0.50.2,
    as here, what remains is the placement and int8 speed difference described above.

    ## How to fix

    Hide the older GPUs from CUDA. The suggested indices are `nvidia-smi`'s. CUDA numbers the fastest GPU 0 by default,
    so set `CUDA_DEVICE_ORDER` to make CUDA use the same PCI bus order:

    ```bash
    nvidia-smi -L
    export CUDA_DEVICE_ORDER=PCI_BUS_ID
    export CUDA_VISIBLE_DEVICES=0
    ```

    Or keep the quantized model on one card: `device_map={"": 0}` in `from_pretrained`. On releases before 0.45 also
    upgrade bitsandbytes (`pip install -U bitsandbytes`).

    ## Further reading

    - https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html
      (`CUDA_VISIBLE_DEVICES`)
    - https://stackoverflow.com/questions/13781738/how-does-cuda-assign-device-ids-to-gpus (CUDA numbers the fastest GPU
      0 by default)
    """
    gpus = [d for d in visible_gpus(facts) if d.cc]
    if len(gpus) < 2:
        return Skip("fewer than two visible GPUs")
    bnb = bnb_of(facts)
    release = release_tuple(bnb.version) if bnb and bnb.installed else None
    if release is not None and not CC_CHOOSES_LIBRARY.contains(release):
        return Skip(
            f"from {minor(CC_CHOOSES_LIBRARY.below_text)} the library choice no longer depends on compute "
            "capability (BNB104/BNB105 judge each GPU)"
        )
    if len({d.cc for d in gpus}) < 2:
        return None

    def tier(device: GpuDevice) -> int:
        cc = device.cc
        assert cc is not None
        return 0 if cc < QUANTIZATION_MIN.cc else 1 if cc < INT8_MATMUL_MIN.cc else 2

    if len({tier(d) for d in gpus}) < 2:
        return None
    best = max(gpus, key=lambda d: d.cc)  # type: ignore[arg-type,return-value]
    weak = [d for d in gpus if tier(d) < tier(best)]
    keep = ",".join(str(d.index) for d in gpus if tier(d) == tier(best))
    names = ", ".join(sorted({d.name for d in weak}))
    return Hit(
        title=f"Mixed GPU generations: {versioned(facts, 'bitsandbytes', bnb.version if bnb else None)} chooses its library for cc "
        f"{best.cc_text}; {names} {'lags' if len(weak) == 1 else 'lag'} behind",
        explanation=f"Releases before {minor(CC_CHOOSES_LIBRARY.below_text)} pick one native library for the whole "
        "process from the highest compute "
        f"capability among visible GPUs ({best.cc_text}, {best.name}): the cuBLASLt build instead of the "
        "_nocublaslt one. Work placed on the older GPU(s) then runs code chosen for the newer one: int8 matmul "
        "errors ('cublasLt ran into an error') or missing kernels; device_map='auto' spreads layers across them.",
        evidence=[
            ev(f"GPU {d.index}", f"{d.name}, compute capability {d.cc_text}", f"gpu.devices[{d.index}]") for d in gpus
        ],
        remediation=Remediation(
            f"Upgrade bitsandbytes ({minor(CC_CHOOSES_LIBRARY.below_text)}+ no longer chooses by the highest GPU), "
            "or hide the older GPU(s) from "
            "CUDA. The indices below are nvidia-smi's (PCI bus order), so set CUDA_DEVICE_ORDER too.",
            ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", f"export CUDA_VISIBLE_DEVICES={keep}"],
        ),
    )


def _torch_arch_text(sass: list[int] | tuple[int, ...], ptx: list[int] | tuple[int, ...]) -> str:
    """``sm_70 sm_75 ... compute_120``: how torch.cuda.get_arch_list() prints a list."""
    return " ".join([f"sm_{a}" for a in sass] + [f"compute_{a}" for a in ptx]) or "none"


def _torch_fix(candidates: list[TorchBuild], installed: tuple[int, ...] | None, facts: Facts) -> TorchBuild | None:
    """The build to suggest: one the driver can run (the same CUDA major: CUDA's minor-version compatibility), the
    installed release line if it has one, else the newest release; within a release the newest CUDA the driver's
    major allows (the oldest when the driver is unknown)."""
    driver = major_minor(facts.gpu.driver_cuda_version) if facts.gpu else None
    pool = [b for b in candidates if driver is None or (major_minor(b.cuda) or (0, 0))[0] <= driver[0]] or candidates
    pool = [b for b in pool if installed and b.minor == installed[:2]] or pool
    if not pool:
        return None
    newest = max(b.minor for b in pool)
    pool = [b for b in pool if b.minor == newest]
    key = lambda b: major_minor(b.cuda) or (0, 0)  # noqa: E731
    return max(pool, key=key) if driver else min(pool, key=key)


@rule(
    "BNB120",
    "torch-build-lacks-gpu-arch",
    Severity.ERROR,
    "The installed torch has kernels for every visible GPU",
    needs=("gpu", "python"),
    covers=("torch_build_lacks_gpu_arch",),
    references=(
        TORCH_GET_STARTED,
        "https://github.com/pytorch/pytorch/issues/150733",
        "https://github.com/pytorch/pytorch/issues/157517",
        "https://github.com/pytorch/pytorch/issues/172352",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1715",
    ),
    confirm=('python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"',),
    log_gate=LogGate(
        "the log shows neither torch's incompatible-GPU warning nor 'no kernel image is available'",
        signatures=("torch_gpu_incompatible", "no_kernel_image"),
    ),
    refutes=("torch-runs-on-gpus",),
)
def torch_lacks_arch(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `gpu` and `python` facts and is skipped when no visible NVIDIA GPU has a known compute capability
    or torch is not a CUDA build. It takes the GPU architectures the installed torch was compiled for from, in order:

    1. the `torch_arch` facts: the fatbin headers of `torch/lib/libtorch_cuda.so`, read without importing torch (only
       the ELF section headers and the 64-byte header of each fatbin entry, never the ~1 GB of device code); from a log,
       the list torch prints in its own warning;
    2. bnbdoctor's table of PyTorch's Linux x86-64 wheels (`bnbdoctor/knowledge/torch_wheels.py`), when the library
       cannot be read (Windows, a file that is not there). A torch release the table does not record is judged by the
       newest earlier recorded row of its CUDA flavor, and that finding is a warning.

    It reports one error for each visible GPU (identical GPUs together) that no entry of the list can run: SASS for the
    same major architecture with a minor version not above the GPU's, or PTX for an architecture at or below it.

    ## Why it matters

    Every CUDA op of torch then fails with `CUDA error: no kernel image is available for execution on the device`, and
    `import torch` warns `NVIDIA GeForce GTX 1080 with CUDA capability sm_61 is not compatible with the current PyTorch
    installation. The current PyTorch install supports CUDA capabilities sm_75 sm_80 ...`. bitsandbytes is only the
    first library to hit it: its own kernels are beside the point, so bnbdoctor lists bitsandbytes' architecture
    findings ([BNB103](BNB103.md), [BNB105](BNB105.md)) under this one.

    PyTorch's arch lists change with the CUDA flavor of the wheel:

    - cu118 to cu126: sm_50 to sm_90 (cu118 adds sm_37); no Blackwell (sm_100, sm_120) and no PTX to JIT from;
    - cu128 and cu129 drop Maxwell and Pascal (2.7's cu128 also drops Volta, restored in 2.8 by pytorch#157517), and add
      sm_100 and sm_120;
    - cu130 starts at Turing (sm_75): CUDA 13 cannot build for Volta.

    ## How to fix

    Install a torch wheel whose list includes the GPU. The finding names a published (torch, CUDA) pair that the driver
    can run: cu126 for Maxwell, Pascal and Volta; cu128 or newer for Blackwell (RTX 50xx, sm_120). For a GTX 1080 with
    torch 2.8.0+cu128:

    ```bash
    pip install --force-reinstall "torch==2.8.0" --index-url https://download.pytorch.org/whl/cu126
    python -c "import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())"
    ```

    Then run `bnbdoctor` again: bitsandbytes picks its library by torch's CUDA version, so its own findings may change.
    A GPU no published wheel covers needs torch built from source with `TORCH_CUDA_ARCH_LIST` set for it.

    ## Further reading

    - https://github.com/pytorch/pytorch/blob/main/RELEASE.md (PyTorch CUDA support matrix)
    - https://dev-discuss.pytorch.org/t/cuda-toolkit-version-and-architecture-support-update-maxwell-and-pascal-architecture-support-removed-in-cuda-12-8-and-12-9-builds/3128
    - https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility
    """
    gpus = [d for d in visible_gpus(facts) if d.cc]
    if not gpus:
        return Skip("no visible NVIDIA GPU with a known compute capability")
    torch = torch_of(facts)
    if torch is None or not torch.installed or torch.build != "cuda":
        return Skip("torch is not a CUDA build")
    arch = facts.torch_arch
    exact = True
    table_source: str | None = None
    if arch is not None and (arch.sass or arch.ptx):
        sass, ptx = tuple(arch.sass), tuple(arch.ptx)
        if arch.source == "log":
            origin = "as torch's own warning in the log lists them"
            origin_fact = "torch_arch.sass"
        else:
            shared = f"{arch.sharing} of {arch.containers}" if arch.sharing != arch.containers else str(arch.containers)
            origin = f"read from the fatbin headers of {arch.library}: {shared} fatbin containers"
            origin_fact = "torch_arch.sass"
    else:
        windows = facts.platform is not None and facts.platform.os == "windows"
        recorded = None if windows else recorded_list(torch.version, torch.cuda)
        why = arch.error if arch is not None and arch.error else None
        if recorded is None:
            unread = why or "torch's library was not read"
            return Skip(
                f"{unread}, and {versioned(facts, 'torch', torch.version)} (CUDA {torch.cuda}) is not in bnbdoctor's "
                "table of PyTorch's Linux wheels"
            )
        build, exact = recorded.build, recorded.exact
        sass, ptx = build.sass, build.ptx
        origin = (
            f"bnbdoctor's table of PyTorch's Linux wheels, torch {build.release} {build.flavor}"
            if exact
            else f"assumed from the newest earlier recorded {build.flavor} build, torch {build.release}"
        ) + (f"; the library itself was not read: {why}" if why else "")
        origin_fact = None
        table_source = build.source
    installed = release_tuple(torch.version)
    hits = []
    for group in _group(gpus):
        device = group[0]
        cc = device.cc
        assert cc is not None
        if arch_runs_on(sass, ptx, cc):
            continue
        listed = _torch_arch_text(sass, ptx)
        fix = _torch_fix(builds_for(cc), installed, facts)
        if fix is not None:
            remediation = Remediation(
                f"Install torch {fix.release} for CUDA {fix.cuda} ({fix.flavor}), whose wheels include "
                f"{_torch_arch_text(fix.sass, fix.ptx)}; then run bnbdoctor again (bitsandbytes follows torch's CUDA).",
                [fix.install_command(), 'python -c "import torch; print(torch.cuda.get_arch_list())"'],
            )
        else:
            remediation = Remediation(
                f"No published PyTorch wheel bnbdoctor knows of has kernels for sm_{cc[0]}{cc[1]}: build torch from "
                f"source with TORCH_CUDA_ARCH_LIST={cc[0]}.{cc[1]}, or use a newer GPU.",
                [],
            )
        hits.append(
            Hit(
                title=f"{versioned(facts, 'torch', torch.version)} has no kernels for {_group_label(group)}",
                explanation=f"This torch was compiled for {listed} ({origin}). None of these runs on "
                f"sm_{cc[0]}{cc[1]}: SASS runs only on the same major architecture with an equal or higher minor (on a "
                "Jetson only its own), PTX only on GPUs at or above its architecture. Every CUDA op of torch fails with 'no kernel image is "
                "available for execution on the device', before bitsandbytes' own kernels matter."
                + ("" if exact else " The list is assumed: bnbdoctor's table does not record this torch release."),
                evidence=[
                    ev("GPU", _group_label(group), f"gpu.devices[{device.index}]"),
                    ev("torch", f"{torch.version} (CUDA {torch.cuda})", "python.torch.version"),
                    ev("torch kernels", listed, origin_fact),
                    *([ev("recorded from", table_source)] if table_source else []),
                ],
                remediation=remediation,
                severity=None if exact else Severity.WARNING,
                covers=["torch_build_lacks_gpu_arch"],
            )
        )
    return hits
