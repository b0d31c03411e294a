"""Rules about the Python side: torch and bitsandbytes present, builds and versions that fit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bnbdoctor.derive import built_locally, conda_env, gpu_sightings
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Check, Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, torch_index_for
from bnbdoctor.knowledge.imports import (
    SCIPY_IMPORT,
    TORCH_WITH_TRITON_WITHOUT_OPS,
    TRITON_OPS_IMPORT,
    TRITON_WITHOUT_OPS,
)
from bnbdoctor.knowledge.loader import (
    COMPILED_WITHOUT_GPU_WARNING,
    CPU_FALLBACK_ERA,
    LEGACY_CUDA_SETUP,
    NONE_LIBRARY_ATTRIBUTE_ERRORS,
)
from bnbdoctor.knowledge.platforms import jetson_index
from bnbdoctor.knowledge.ranges import VersionRange, minor
from bnbdoctor.knowledge.releases import (
    FIRST_RELEASE_FOR_PLATFORM,
    known_requirements,
    legacy_cuda_setup,
)
from bnbdoctor.knowledge.transformers import misleading_importerror
from bnbdoctor.knowledge.versions import (
    at_least,
    major_minor,
    parse_version,
    release_tuple,
)
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    TORCH_BUILD_CHECK,
    TORCH_GET_STARTED,
    bnb_of,
    ev,
    predicted_selection,
    torch_of,
    versioned,
    wheel_upgrade_blocked,
)
from bnbdoctor.rules.log_evidence import seen


def _log_shows_cpu_torch(facts: Facts) -> bool:
    """A log shows a CPU-only torch when it prints a ``+cpu`` torch version."""
    torch = torch_of(facts)
    return bool(torch and torch.version and torch.version.endswith("+cpu"))


def _python_line(facts: Facts) -> str:
    python = facts.python
    assert python is not None
    return f"{python.executable} (Python {python.version})"


@rule(
    "BNB201",
    "torch-missing",
    Severity.ERROR,
    "PyTorch is installed in the examined interpreter",
    needs=("python",),
    covers=(),
    references=(TORCH_GET_STARTED,),
    log_gate=LogGate(
        "a log shows torch missing only with \"No module named 'torch'\"", signatures=("torch_not_installed",)
    ),
)
def torch_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts: the interpreter bnbdoctor examines, chosen by `--python`, an active virtual
    environment or conda environment, or `PATH`. It fires when PyTorch is not installed in that interpreter. bnbdoctor
    finds this out by reading installed metadata; it never imports torch.

    The suggested command takes the highest CUDA version the NVIDIA driver supports and picks the newest PyTorch wheel
    index at or below it (preferring the same CUDA major). If there is no usable driver, it suggests a plain `pip
    install torch`.

    ## Why it matters

    bitsandbytes is a PyTorch extension. It imports torch when it is imported, and it asks torch for the CUDA version it
    should load a library for. Without torch, `import bitsandbytes` stops at that first import, and so does any
    transformers or PEFT code that loads a model in 8 or 4 bits.

    A missing torch is often a sign that bnbdoctor is looking at a different interpreter from the one the failing
    program uses, for example a system Python instead of the project's virtual environment.

    ## How to fix

    First make sure bnbdoctor examines the interpreter you actually run:

    ```bash
    python -c "import sys; print(sys.executable)"
    bnbdoctor --python /path/to/that/python
    ```

    If torch really is missing there, install a CUDA build that your driver can run (PyTorch's install selector gives
    the exact command), then bitsandbytes:

    ```bash
    pip install torch --index-url https://download.pytorch.org/whl/cu124
    pip install -U bitsandbytes
    ```

    Current bitsandbytes releases need a recent torch (0.50 requires PyTorch 2.4 or newer); see [BNB206](BNB206.md).

    ## Further reading

    - https://pytorch.org/get-started/previous-versions
    - https://huggingface.co/docs/bitsandbytes/v0.50.0/installation (system requirements)
    """
    torch = torch_of(facts)
    if torch is None or torch.installed:
        return None
    gpu_index = torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None
    command = f"pip install torch --index-url {gpu_index}" if gpu_index else "pip install torch"
    return Hit(
        title="PyTorch is not installed in the examined Python",
        explanation="bitsandbytes is a PyTorch extension: it cannot be imported without torch. If torch is "
        "installed elsewhere, bnbdoctor examined the wrong interpreter (choose it with --python).",
        evidence=[ev("interpreter", _python_line(facts), "python.executable")],
        remediation=Remediation(
            "Install PyTorch for your platform (see pytorch.org), or point bnbdoctor at the "
            "interpreter you use: `bnbdoctor --python /path/to/python`.",
            [command],
        ),
    )


def _cpu_torch_covers(facts: Facts) -> list[str]:
    """What a CPU-only torch makes the installed releases print, as catalog ids (an unknown version, as a log
    often has, may print any of them)."""
    bnb, python = bnb_of(facts), facts.python
    version = bnb.version if bnb and bnb.installed else None
    covers = ["torch_cpu_flavor_on_gpu_host"]
    if version is None or COMPILED_WITHOUT_GPU_WARNING.contains(version):
        covers.append("compiled_without_gpu_support")
    if version is None or NONE_LIBRARY_ATTRIBUTE_ERRORS.contains(version):
        covers.append("native_lib_none_attribute_errors")
    if version is None or CPU_FALLBACK_ERA.contains(version):
        covers.append("torch_version_cuda_none")
    transformers = python.packages.get("transformers") if python else None
    if (transformers is None and facts.log is not None) or misleading_importerror(transformers, version):
        covers.append("transformers_importerror_requires_accelerate_bnb")
    return covers


_SYMPTOMS = {
    "torch_version_cuda_none": "'NoneType' object has no attribute 'split'",
    "compiled_without_gpu_support": "'compiled without GPU support'",
    "native_lib_none_attribute_errors": "'NoneType' object has no attribute 'c…'",
    "transformers_importerror_requires_accelerate_bnb": "transformers' misleading 'requires Accelerate and the latest "
    "version of bitsandbytes'",
}


def _symptoms(covers: list[str]) -> str:
    """How the installed releases show it: the messages of the catalog ids a finding covers."""
    shown = [_SYMPTOMS[c] for c in covers if c in _SYMPTOMS]
    if not shown:
        return " (this release says nothing: quantized layers run on the CPU or fail at the first GPU-only call)."
    return f" ({', '.join(shown)})."


def _keep_torch(base: str, local: str | None) -> tuple[str, list[str]]:
    """The advice that keeps a resolver from swapping the GPU torch back, and its commands."""
    pin = f"torch=={base}+{local}" if base and local else (f"torch=={base}" if base else "torch")
    text = (
        " Then install bitsandbytes without letting the resolver touch torch: `pip install --no-deps -U "
        f"bitsandbytes`, or keep a constraint (`{pin}` in constraints.txt, `pip install -c constraints.txt …`; uv: "
        "the same file with `uv pip install -c`, or pin torch's index in `[tool.uv.sources]`); installers that "
        "run `pip install bitsandbytes` unpinned bring PyPI's CPU wheel back."
    )
    return text, ["pip install --no-deps -U bitsandbytes"]


@rule(
    "BNB202",
    "torch-cpu-build-with-nvidia-gpu",
    Severity.ERROR,
    "torch is a CUDA/ROCm build when the machine has an NVIDIA or AMD GPU",
    needs=("python",),
    covers=(
        "torch_cpu_flavor_on_gpu_host",
        "torch_version_cuda_none",
        "compiled_without_gpu_support",
        "transformers_importerror_requires_accelerate_bnb",
        "native_lib_none_attribute_errors",
    ),
    references=(
        TORCH_GET_STARTED,
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1202",
        "https://github.com/unslothai/unsloth/issues/4848",
        "https://github.com/hiyouga/LlamaFactory/pull/10622",
        "https://docs.astral.sh/uv/pip/compatibility/#local-version-identifiers",
    ),
    log_gate=LogGate(
        "the log does not show that torch is a CPU-only build",
        signatures=("torch_cuda_none",),
        shows=_log_shows_cpu_torch,
    ),
    refutes=("torch-matches-gpu",),
)
def torch_cpu_build(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when all three hold:

    - torch is installed;
    - torch is a CPU-only build: `torch.version.cuda`, `torch.version.hip` and the XPU version are all unset (a `+cpu`
      wheel, PyPI's aarch64 wheel, or a CPU build from conda);
    - the machine has a GPU such a build could have used. bnbdoctor looks at every trace the facts have, not NVML
      alone: a GPU NVML reports, a Jetson's `/etc/nv_tegra_release` (its integrated GPU is invisible to NVML),
      `/dev/nvidiactl` (NVIDIA's kernel driver), `/dev/kfd` (AMD's ROCm driver) and, under WSL2, `/dev/dxg`
      (a GPU of any vendor that Windows shares: without NVML the finding is a warning, since it may not be NVIDIA's).
      A Mac does not count: macOS torch wheels have no CUDA build, and they do use the Apple GPU (MPS).

    The suggested command reinstalls the same torch version from the newest PyTorch CUDA index that the driver supports
    (on a Jetson, from the Jetson AI Lab index for its JetPack and CUDA), then installs bitsandbytes without its
    dependencies, so that the resolver cannot swap torch back.

    ## Why it matters

    With a CPU build, `torch.cuda.is_available()` is False even though the GPU works. bitsandbytes therefore loads its
    CPU library (or none), and every 8-bit and 4-bit GPU feature fails. The messages rarely name the real cause, and
    which ones appear depends on the release (the finding lists only those of the installed versions):

    - 0.43–0.45 read `torch.version.cuda` to build the library name, and with `None` they log `Could not load
      bitsandbytes native library: 'NoneType' object has no attribute 'split'`.
    - Up to 0.46 the CPU library warns `The installed version of bitsandbytes was compiled without GPU support. 8-bit
      optimizers, 8-bit multiplication, and GPU quantization are unavailable.`. The package was not mis-built; the CPU
      library was simply chosen.
    - Up to 0.45 the first native call then fails, for example `AttributeError: 'NoneType' object has no attribute
      'cadam32bit_grad_fp32'` or `... 'cquantize_blockwise_fp16_nf4'`.
    - transformers 4.32–4.35 and 4.38–4.40 (4.45–4.52 with a bitsandbytes older than 0.43.1) check for a GPU inside
      their bitsandbytes check and say something misleading: ``ImportError: Using `bitsandbytes` 8-bit quantization
      requires Accelerate: `pip install accelerate` and the latest version of bitsandbytes ...``.

    The CPU wheel usually arrives by accident: PyPI's default index serves CPU-only torch on Windows (and
    `pip install torch` on aarch64 Linux), and an installer, a requirements file or a resolver (pip, uv) that installs
    bitsandbytes or another package after torch without pinning it replaces the CUDA build.

    ## How to fix

    Confirm the build, then reinstall torch from a CUDA index your driver supports (`nvidia-smi` shows the highest CUDA
    version), and install bitsandbytes so that the resolver keeps that torch:

    ```bash
    python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    pip install --force-reinstall "torch==2.5.1" --index-url https://download.pytorch.org/whl/cu124
    pip install --no-deps -U bitsandbytes
    ```

    Keep the version number and choose the index from PyTorch's previous-versions page. Or pin torch with a constraint
    (`torch==2.5.1+cu124` in `constraints.txt`, then `pip install -c constraints.txt ...`, or `uv pip install -c`), so
    that a later install cannot bring the CPU wheel back. On a Jetson, install the torch built for its JetPack (NVIDIA's
    or the Jetson AI Lab index, e.g. `https://pypi.jetson-ai-lab.io/jp6/cu126`); on an AMD GPU, a ROCm build of torch.
    In Jupyter or Colab, restart the kernel afterwards. Packages installed into a running kernel are not picked up.

    ## Further reading

    - https://pytorch.org/get-started/previous-versions
    - https://huggingface.co/docs/transformers/v4.49.0/en/quantization/bitsandbytes
    """
    torch = torch_of(facts)
    if not (torch and torch.installed) or torch.build != "cpu":
        return None
    sightings = [s for s in gpu_sightings(facts) if s.vendor != "apple"]
    if not sightings:
        return None
    gpu = sightings[0]
    base = (torch.version or "").split("+")[0]
    evidence = [
        ev("torch", f"{torch.version} (torch.version.cuda = None)", "python.torch.cuda"),
        ev(f"GPU ({gpu.source})", gpu.label, gpu.fact),
    ]
    covers = _cpu_torch_covers(facts)
    title = f"torch {torch.version} is a CPU-only build, but this machine has {gpu.label}"
    explanation = (
        "torch.version.cuda is None, so torch.cuda.is_available() is False and bitsandbytes loads its CPU library: "
        "8-bit/4-bit GPU operations are unavailable"
    )
    if gpu.vendor == "unknown":  # WSL2's /dev/dxg: a GPU Windows shares, of any vendor
        return Hit(
            title=f"torch {torch.version} is a CPU-only build, and WSL2 shares a GPU with this Linux",
            explanation="/dev/dxg shows that Windows shares a GPU with WSL2, but NVML does not answer, so bnbdoctor "
            "cannot tell whether it is an NVIDIA GPU. If it is, torch's CPU build cannot use it: "
            "torch.cuda.is_available() is False and bitsandbytes loads its CPU library" + _symptoms(covers),
            evidence=evidence,
            remediation=Remediation(
                "If the GPU is an NVIDIA one, make its driver visible (see BNB107) and install a CUDA build of torch."
                + _keep_torch(base, None)[0],
                [TORCH_BUILD_CHECK],
            ),
            severity=Severity.WARNING,
            covers=covers,
        )
    if gpu.vendor == "amd":
        return Hit(
            title=title,
            explanation=explanation + _symptoms(covers) + " This machine's GPU needs a ROCm build of torch.",
            evidence=evidence,
            remediation=Remediation(
                "Install a ROCm build of the same torch version (pytorch.org, ROCm), then a bitsandbytes release "
                "with ROCm support." + _keep_torch(base, None)[0],
                [TORCH_BUILD_CHECK],
            ),
            covers=covers,
        )
    if gpu.source == "/etc/nv_tegra_release":
        platform = facts.platform
        assert platform is not None and platform.jetson_release
        l4t = re.search(r"\bR(\d+)", platform.jetson_release)
        index = jetson_index(int(l4t.group(1)) if l4t else None, _toolkit_cuda(facts))
        keep, keep_commands = _keep_torch(base, None)
        reinstall = [f"pip install --force-reinstall torch --index-url {index}"] if index else []
        return Hit(
            title=title,
            explanation=explanation + _symptoms(covers) + " PyPI's aarch64 torch wheels are CPU-only (or built for "
            "server ARM): a Jetson needs the torch built for its JetPack.",
            evidence=[*evidence, ev("CUDA toolkit", _toolkit_cuda_text(facts), "cuda_toolkit")],
            remediation=Remediation(
                "Install the torch built for this JetPack (NVIDIA's Jetson wheels or the Jetson AI Lab index"
                + (f" {index}" if index else "")
                + ")."
                + keep,
                [*reinstall, *keep_commands, TORCH_BUILD_CHECK],
            ),
            covers=covers,
        )
    index = torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None
    local = index.rsplit("/", 1)[-1] if index else None
    keep, keep_commands = _keep_torch(base, local)
    commands = [f'pip install --force-reinstall "torch=={base}" --index-url {index}'] if index and base else []
    if facts.gpu and gpu.source == "NVML":
        evidence.append(ev("driver supports CUDA", facts.gpu.driver_cuda_version, "gpu.driver_cuda_version"))
    return Hit(
        title=title,
        explanation=explanation + _symptoms(covers) + " An installer or resolver that installed a package after torch "
        "without pinning it is the usual way a CPU wheel replaces the CUDA build.",
        evidence=evidence,
        remediation=Remediation(
            "Install a CUDA build of the same torch version"
            + (f" from {index} (the newest CUDA your driver supports)" if index else "")
            + "."
            + keep,
            [*commands, *keep_commands],
        ),
        covers=covers,
    )


def _toolkit_cuda(facts: Facts) -> tuple[int, int] | None:
    """The CUDA version of the toolkit JetPack installed (nvcc, else the first toolkit folder)."""
    toolkit = facts.cuda_toolkit
    if toolkit is None:
        return None
    for text in [toolkit.nvcc_version, *(t.version for t in toolkit.toolkits)]:
        found = major_minor(text)
        if found is not None:
            return found
    return None


def _toolkit_cuda_text(facts: Facts) -> str:
    found = _toolkit_cuda(facts)
    return f"{found[0]}.{found[1]}" if found else "not found"


@rule(
    "BNB203",
    "bitsandbytes-missing",
    Severity.ERROR,
    "bitsandbytes is installed in the examined interpreter",
    needs=("python",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate(
        "a log shows bitsandbytes missing only with \"No module named 'bitsandbytes'\"",
        signatures=("bnb_not_installed",),
    ),
)
def bnb_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when no bitsandbytes distribution or package folder is found in the
    interpreter bnbdoctor examines, whether chosen with `--python`, by the active virtual environment or conda
    environment, or from `PATH`. bnbdoctor reads installed metadata and files without importing bitsandbytes.

    ## Why it matters

    In that interpreter, `import bitsandbytes` raises `ModuleNotFoundError`, and so does every library that loads models
    in 8 or 4 bits through it (transformers, PEFT, accelerate). When bitsandbytes *is* installed somewhere, the usual
    cause is a second interpreter: the program runs in one environment, and `pip install` went to another (a different
    virtual environment, conda env, user site, or notebook kernel).

    Until it is installed, the checks that need its version ([BNB204](BNB204.md), [BNB206](BNB206.md)) are reported as
    skipped.

    ## How to fix

    Install bitsandbytes with the same interpreter that runs your code. Calling pip through that interpreter avoids
    installing into the wrong environment:

    ```bash
    /path/to/python -m pip install -U bitsandbytes
    /path/to/python -m bitsandbytes
    ```

    If it is already installed elsewhere, point bnbdoctor at the interpreter you actually use:

    ```bash
    bnbdoctor --python /path/to/python
    ```

    In Jupyter, install from within the kernel (`%pip install -U bitsandbytes`) and restart the kernel.
    """
    bnb = bnb_of(facts)
    if bnb is None or bnb.installed:
        return None
    python = facts.python
    assert python is not None
    return Hit(
        title="bitsandbytes is not installed in the examined Python",
        explanation="`import bitsandbytes` fails with ModuleNotFoundError in this interpreter. If you installed "
        "it elsewhere, bnbdoctor examined the wrong interpreter (choose it with --python).",
        evidence=[ev("interpreter", _python_line(facts), "python.executable")],
        remediation=Remediation(
            "Install bitsandbytes into this interpreter.", [f"{python.executable} -m pip install -U bitsandbytes"]
        ),
    )


@rule(
    "BNB204",
    "bitsandbytes-too-old-for-platform",
    Severity.ERROR,
    "The installed bitsandbytes release supports this OS and architecture",
    needs=("python", "platform"),
    covers=(
        "windows_path_not_iterable",
        "windows_linux_so_loaded",
        "macos_apple_silicon_no_native_lib",
        "no_gpu_detected_cpu_fallback",
        "compiled_without_gpu_support",
    ),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723"),
    refutes=("release-supports-platform",),
)
def too_old_for_platform(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` and `platform` facts. It is skipped when bitsandbytes is not installed or its version is
    unknown. It is also skipped when bnbdoctor has no entry for the OS and architecture, e.g. macOS on Intel or Linux on
    ppc64le; no prebuilt binaries exist there, so the only route is a source build. It passes when the install was built
    on the machine (an egg, a `linux_*` wheel, an install from a path or URL) and holds a compiled library: the release
    shipped no binaries for the platform, but this build is not one of them.

    Otherwise it compares the installed version with the first release that bnbdoctor records for the platform, and
    reports an error when the installed one is older:

    | platform | first release |
    |---|---|
    | Linux x86_64 | 0.41.0 |
    | Windows x86_64 | 0.43.0 (first official Windows wheels) |
    | Linux aarch64 | 0.46.0 (`manylinux_2_24_aarch64`) |
    | macOS arm64 | 0.49.0 (`macosx_14_0_arm64`) |
    | Windows arm64 | 0.50.0 (`win_arm64`) |

    When the install contains only Linux `.so` files on another OS, the finding says so. The Linux x86_64 row is a floor
    that bnbdoctor sets, not the first release with Linux binaries: older Linux releases also had them, so on Linux this
    finding means "older than bnbdoctor supports".

    ## Why it matters

    Up to 0.42, bitsandbytes was a `py3-none-any` wheel that contained only Linux x86-64 ELF libraries. It installs
    anywhere, but the loader then fails:

    - Windows, 0.38–0.42: the legacy setup searches for Linux `.so` files and crashes with `argument of type
      'WindowsPath' is not iterable`. It also prints Linux advice (`LD_LIBRARY_PATH`, `find / -name ...`) that does not
      apply on Windows.
    - Windows loading the ELF file: `OSError: [WinError 193] %1 is not a valid Win32 application`.
    - macOS: `dlopen(...libbitsandbytes_cpu.so ...)` fails with "not a mach-o file".
    - Older legacy loaders on Windows find no `libcuda.so`, conclude there is no GPU, and load the CPU-only library
      (`WARNING: No GPU detected! ... Proceeding to load CPU-only library...`).

    In every case bitsandbytes ends up without a usable native library, and quantized models fail; transformers often
    reports its misleading "requires Accelerate ... and the latest version of bitsandbytes" ImportError.

    ## How to fix

    Upgrade to a release that ships binaries for the platform (use the version from the finding):

    ```bash
    pip install -U "bitsandbytes>=0.43.0"
    python -m bitsandbytes
    ```

    On Windows you can also run the workload under WSL2. On Intel Macs there is no prebuilt package: use a CUDA machine
    or a non-bitsandbytes quantization method (MLX, llama.cpp/GGUF).
    """
    bnb, platform = bnb_of(facts), facts.platform
    assert platform is not None
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    if (platform.os, platform.arch) == ("linux", "x86_64"):
        return None  # Linux x86_64 has had prebuilt binaries from the start
    first = FIRST_RELEASE_FOR_PLATFORM.get((platform.os, platform.arch))
    if first is None:
        return Skip(f"no prebuilt bitsandbytes for {platform.os}/{platform.arch}; build from source")
    if at_least(bnb.version, first):
        return None
    if bnb.native_libraries and built_locally(bnb):
        return None  # a source build for this machine, not the release's (absent) binaries
    label = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}.get(platform.os, platform.os)
    linux_only = [f for f in bnb.native_libraries if f.endswith(".so")]
    symptom = {
        "windows": "\"argument of type 'WindowsPath' is not iterable\" or '[WinError 193] %1 is not a valid "
        "Win32 application'",
        "macos": "'not a mach-o file' from dlopen",
        "linux": "'wrong ELF class' or 'cannot open shared object file'",
    }.get(platform.os, "a failed library load")
    spec = f">={first}"  # bnbdoctor.remedy narrows it to the releases that keep this torch
    fix = f"Upgrade bitsandbytes to a release that supports {label} {platform.arch}."
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} has no {label} {platform.arch} support (first release: {first})",
        explanation=f"Releases before {first} ship no native library for {label} {platform.arch}"
        + (
            f"; this install holds only Linux .so files ({len(linux_only)} of them), which cannot load here"
            if linux_only and platform.os != "linux"
            else ""
        )
        + f". The loader then fails ({symptom}) and bitsandbytes runs CPU-only or not at all.",
        evidence=[
            ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
            ev("platform", f"{platform.os} {platform.arch}", "platform.arch"),
        ],
        remediation=Remediation(fix, [f'pip install -U "bitsandbytes{spec}"']),
        covers=list(_PLATFORM_FAMILIES.get(platform.os, ("compiled_without_gpu_support",))),
    )


#: What a release without a library for the OS shows there. Windows has no libcuda.so, so the legacy
#: loader also reports "No GPU detected"; on Linux (aarch64 and other non-x86 arches) no CUDA library
#: of the release fits, so it loads the CPU one ("compiled without GPU support").
_PLATFORM_FAMILIES: dict[str, tuple[str, ...]] = {
    "windows": ("windows_path_not_iterable", "windows_linux_so_loaded", "no_gpu_detected_cpu_fallback"),
    "macos": ("macos_apple_silicon_no_native_lib",),
}


def _legacy_families(facts: Facts) -> list[str]:
    """The legacy-setup families this machine or log shows, or that the setup itself causes here."""
    # The scan's own messages: every CUDA machine running the legacy setup gets them, because pip's
    # torch keeps libcudart inside site-packages (never searched) and path-like variables hold
    # pieces that do not exist.
    ids = ["libcudart_not_found_legacy_cuda_setup", "nonexistent_path_warnings_noise"]
    toolkits = facts.cuda_toolkit.toolkits if facts.cuda_toolkit else []
    runtimes = [t for t in toolkits if t.has_cudart]
    torch = torch_of(facts)
    # "CUDA Setup failed" wraps a failed load: claimed when a load failure is predicted or shown.
    selection = predicted_selection(facts)
    if seen(facts, "cuda_setup_failed") or (selection is not None and selection.outcome != "loads"):
        ids.append("cuda_setup_failed_despite_gpu_available")
    # Several runtimes on the searched paths make the scan "flip a coin".
    if seen(facts, "duplicate_cuda_runtimes") or len(runtimes) > 1:
        ids.append("duplicate_cuda_runtimes_found")
    # A conda interpreter with a runtime from outside the environment: the scan may pick that one.
    conda = conda_env(facts)
    if seen(facts, "cuda_runtime_symbol_missing") or (conda and any(t.source != "CONDA_PREFIX" for t in runtimes)):
        ids.append("conda_env_vs_system_cuda_mixup")
    # A CUDA 10 runtime (torch's or one the scan can find) is refused for LLM.int8().
    old = [major_minor(v) for v in [torch.cuda if torch else None, *(t.version for t in runtimes)]]
    if seen(facts, "cuda_older_than_11") or any(v is not None and v[0] < OLDEST_CUDA_MAJOR for v in old):
        ids.append("cuda_lt_11_unsupported")
    return ids


@rule(
    "BNB205",
    "legacy-cuda-setup",
    Severity.WARNING,
    f"bitsandbytes is newer than the legacy CUDA setup ({LEGACY_CUDA_SETUP.below_text}+)",
    needs=("python",),
    covers=(
        "libcudart_not_found_legacy_cuda_setup",
        "nonexistent_path_warnings_noise",
        "duplicate_cuda_runtimes_found",
        "conda_env_vs_system_cuda_mixup",
        "cuda_setup_failed_despite_gpu_available",
        "cuda_lt_11_unsupported",
    ),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1041", BNB_DOCS_INSTALL),
    requires=("one-install",),  # a stale cuda_setup/ left by an older install is BNB215's
)
def legacy_setup(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. It fires when bitsandbytes is installed and either its package contains the
    `bitsandbytes/cuda_setup/` folder, or its version is older than 0.43.1. Either one means the release uses the legacy
    `CUDASetup` loader. The finding is a warning: the legacy loader works on many machines, but it is behind a whole
    family of confusing failures.

    The finding names only the catalog families this machine (or log) can have. The scan's own messages
    (`libcudart.so not found`, non-existent directories) come from the legacy setup itself wherever it runs, so they
    are always named. The others are named when the facts show them: `CUDA Setup failed despite GPU being available`
    when the library is predicted not to load (or the log shows it); duplicate runtimes when more than one CUDA runtime
    is on disk; the conda/system mix-up when a conda interpreter sees a runtime from outside its environment; "CUDA
    lower than 11" when torch's or a found runtime's CUDA is older than 11.

    ## Why it matters

    Up to 0.43.0, importing bitsandbytes runs `cuda_setup/main.py`. It searches for a CUDA runtime (`libcudart.so*`) in
    `$CONDA_PREFIX/lib`, then `LD_LIBRARY_PATH`, then every other environment variable whose value contains `/`, then
    `/usr/local/cuda/lib64`. Before 0.41 the runtime it found decided which library was loaded. From 0.41 the version
    comes from `torch.version.cuda`, and the search only feeds messages. Its output is what most old bug reports are
    made of:

    - `CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...`.
      pip-installed torch keeps its runtime inside site-packages, where the search never looks.
    - `The following directories listed in your path were found to be non-existent: {...}`. This is noise caused by URLs
      and other path-like variables, not the failure.
    - `Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] files: {...}.. We'll flip a coin and
      try one of these, in order to fail forward.`. Often these are one library reached through symlinks.
    - A CUDA 10 runtime found on the system path: `CUDA SETUP: CUDA version lower than 11 are currently not supported
      for LLM.int8()`, then `Defaulting to libbitsandbytes_cpu.so...`.
    - Whenever the expected library is missing while CUDA works, the import fails with `CUDA Setup failed despite GPU
      being available. Please run the following command to get more information: python -m bitsandbytes`. This is a
      wrapper; the real cause is earlier in the log.

    0.43.1 (PR #1041) removed this setup from the import path. The libcudart search only survives in `python -m
    bitsandbytes`, and the library is chosen from torch's CUDA version alone.

    ## How to fix

    Upgrade; then restart the Python process or notebook kernel:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```

    If you must stay on a legacy release:

    - Put the directory holding the `libcudart.so` that matches `torch.version.cuda` first in `LD_LIBRARY_PATH` (`find /
      -name 'libcudart.so*' 2>/dev/null`), and drop CUDA 10 and other CUDA versions from it.
    - In conda environments, keep torch and bitsandbytes from the same ecosystem (pip torch with PyPI bitsandbytes), or
      install a matching `cudatoolkit`.
    - Use a CUDA 11 or newer torch build.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/errors
    """
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed) or not (bnb.legacy_cuda_setup or legacy_cuda_setup(bnb.version)):
        return None
    if facts.platform and facts.platform.os == "macos":
        return Skip("the legacy CUDA setup only matters where CUDA does")
    if torch is not None and torch.installed and torch.build != "cuda":
        return Skip("torch is not a CUDA build")
    spec = f">={LEGACY_CUDA_SETUP.below_text}"
    blocked = wheel_upgrade_blocked(facts)
    if blocked:
        fix = Remediation(f"Upgrading is the fix, but {blocked}.", [])
    else:
        fix = Remediation(
            "Upgrade bitsandbytes; the current loader follows torch and needs no LD_LIBRARY_PATH tweaks.",
            [f'pip install -U "bitsandbytes{spec}"'],
        )
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} uses the legacy CUDA setup",
        explanation=f"Releases up to {LEGACY_CUDA_SETUP.last_text} take the CUDA version from torch but also scan "
        "every path-like "
        "environment variable for libcudart: the scan prints misleading warnings (non-existent directories, "
        "'duplicate' runtimes, 'libcudart.so not found'), its advice points at the wrong CUDA, and any load "
        f"problem surfaces as 'CUDA Setup failed despite GPU being available'. {LEGACY_CUDA_SETUP.below_text} "
        "rewrote the setup to follow torch only (PR #1041).",
        evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],
        remediation=fix,
        covers=_legacy_families(facts),
    )


@rule(
    "BNB206",
    "python-or-torch-below-bnb-requirement",
    Severity.ERROR,
    "Python and torch satisfy the installed bitsandbytes' requirements",
    needs=("python",),
    references=(BNB_DOCS_INSTALL,),
)
def requirements(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `python` facts. It is skipped when bitsandbytes is not installed or its version is unknown. It
    reads two requirements from the installed bitsandbytes metadata: `Requires-Python`, and the `torch` entry of
    `Requires-Dist`. If the metadata carries neither, it falls back to a built-in table: 0.49.x needs Python `>=3.10`
    and torch `>=2.3,<3`, 0.50 and later need Python `>=3.10` and torch `>=2.4,<3`.

    It then checks the examined interpreter's Python version and the installed torch version against them. Local build
    tags such as `+cu121` are ignored, and pre-releases count. It reports one error per requirement that is not met. A
    requirement it cannot parse, or a torch that is not installed (see [BNB201](BNB201.md)), is not checked.

    ## Why it matters

    What bitsandbytes requires, by release (from its package metadata):

    | bitsandbytes | Python | torch |
    |---|---|---|
    | 0.45.1 – 0.45.5 | >= 3.8 | >= 2.0, < 3 |
    | 0.46, 0.47 | >= 3.9 | >= 2.2, < 3 |
    | 0.48 | >= 3.9 | >= 2.3, < 3 |
    | 0.49 | >= 3.10 | >= 2.3, < 3 |
    | 0.50 | >= 3.10 | >= 2.4, < 3 |

    A normal `pip install` enforces these. A mismatch gets in through other routes: `--no-deps`,
    `--ignore-requires-python`, mixing conda and pip, copying site-packages between environments, or downgrading torch
    after installing bitsandbytes. Newer releases use torch APIs that older torch lacks (0.46 moved to `torch.library`
    custom operators), so the failure shows up at import or at the first quantized operation. The error text does not
    mention the version.

    ## How to fix

    Either bring Python/torch up to the requirement, or install a bitsandbytes release that supports what you have:

    ```bash
    pip install "torch>=2.4,<3" --index-url https://download.pytorch.org/whl/cu124
    # or keep torch 2.2 and use the last release that accepts it
    pip install "bitsandbytes<0.48"
    ```

    For an old Python: 3.9 works with bitsandbytes up to 0.48.x, and 3.8 with up to 0.45.5. Check the result with `pip
    check` and `python -m bitsandbytes`.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/v0.50.0/installation (Python >= 3.10, PyTorch >= 2.4)
    - https://huggingface.co/docs/bitsandbytes/v0.48.1/installation (Python >= 3.9, PyTorch >= 2.3)
    """
    python, bnb, torch = facts.python, bnb_of(facts), torch_of(facts)
    assert python is not None
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    requires_python, requires_torch = bnb.requires_python, bnb.requires_torch
    release = release_tuple(bnb.version)
    known = known_requirements(release) if requires_python is None and requires_torch is None and release else None
    if known is not None:
        requires_python, requires_torch = known.python, known.torch
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    hits = []
    for label, spec_text, installed, fact in (
        ("Python", requires_python, python.version, "python.version"),
        ("torch", requires_torch, torch.version if torch and torch.installed else None, "python.torch.version"),
    ):
        if not spec_text or not installed:
            continue
        try:
            spec = SpecifierSet(spec_text)
        except InvalidSpecifier:
            continue
        version = parse_version(installed)
        if version is None or spec.contains(version, prereleases=True):
            continue
        pre = version.is_prerelease or version.is_devrelease
        hits.append(
            Hit(
                title=f"{versioned(facts, 'bitsandbytes', bnb.version)} requires {label} {spec_text}, found {installed}",
                explanation=f"bitsandbytes' files can be installed while {label} does not meet its requirement "
                "(pip --ignore-requires-python or --no-deps, conda, or a later downgrade of torch); the release then "
                "fails at import or at the first operation in ways that do not name the version."
                + (
                    f" {installed} is a pre-release, which pip orders before {version.base_version} (a vendor build "
                    "such as NVIDIA's containers ship): the next `pip install` that resolves bitsandbytes' "
                    f"requirements replaces this {label} with PyPI's."
                    if pre
                    else ""
                ),
                evidence=[ev(label, installed, fact), ev("required", spec_text, "python.bitsandbytes")],
                remediation=Remediation(
                    f"Install a bitsandbytes release that supports {label} {installed}"
                    + (" (keep the vendor build)" if pre else f", or a {label} that satisfies {spec_text}")
                    + ".",
                    ['pip install "bitsandbytes"'] if label == "torch" else [],
                ),
            )
        )
    return hits


@dataclass(frozen=True)
class ImportBreakage:
    """A way ``import bitsandbytes`` fails because of another package: one row, one rule."""

    id: str
    name: str
    summary: str
    covers: tuple[str, ...]
    references: tuple[str, ...]
    releases: VersionRange  # the bitsandbytes releases that import the module
    packages: tuple[str, ...]  # the other package as facts.python.packages names it (the first one found)
    breaks: Callable[[str | None], bool]  # given its version (None: not installed), does the import fail?
    title: str  # follows "bitsandbytes X.Y.Z "; {other} is the other package's version
    explanation: str
    shown: str  # the other package's evidence value; {other} is its version
    fix: str
    commands: tuple[str, ...]
    doc: str  # the rule's documentation prose (see bnbdoctor.ruledocs.pages)
    severity: Severity = Severity.ERROR
    log_gate: LogGate | None = None


_TRITON_OPS_DOC = """## What it detects

The rule needs the `python` facts. It fires when all of these hold:

- bitsandbytes is installed and its version is known to be {{ imports.TRITON_OPS_IMPORT.first_text }} or newer and
  older than {{ imports.TRITON_OPS_IMPORT.below_text }};
- `triton` (or `pytorch-triton-rocm`) is installed in the same interpreter;
- that triton is version {{ imports.TRITON_WITHOUT_OPS.first_text }} or newer.

An unknown bitsandbytes version does not fire.

## Why it matters

Older bitsandbytes releases contain optional Triton kernels (`bitsandbytes/triton/`) that are imported whenever
triton is installed. They import `triton.ops.matmul_perf_model`. Triton {{ imports.TRITON_WITHOUT_OPS.first_text }},
the version that torch {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }} installs, removed `triton.ops`. So
`import bitsandbytes` itself fails, and with it anything that imports it (transformers quantizers, PEFT, unsloth):

```
    from triton.ops.matmul_perf_model import early_config_prune, estimate_matmul_time
ModuleNotFoundError: No module named 'triton.ops'
```

bitsandbytes fixed this by carrying its own copy of the performance model (PR #1413). The first release without
the `triton.ops` import is {{ imports.TRITON_OPS_IMPORT.below_text }} (tags {{ imports.TRITON_OPS_IMPORT.last_text }}
and
{{ imports.TRITON_OPS_IMPORT.below_text }} in the bitsandbytes repository); users report {{
imports.TRITON_OPS_REPORTED_WORKING }} and later working.

## How to fix

Upgrade bitsandbytes:

```bash
pip install -U "bitsandbytes>={{ imports.TRITON_OPS_IMPORT.below_text }}"
python -c "import bitsandbytes"
```

If you cannot upgrade, the alternative is to stay on torch < {{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }}
with triton < {{ imports.TRITON_WITHOUT_OPS.first_text }} (for example
`pip install "triton<{{ imports.TRITON_WITHOUT_OPS.first_text }}"` together with an older torch build). Note that torch
{{ imports.TORCH_WITH_TRITON_WITHOUT_OPS.first_text }} itself requires triton
{{ imports.TRITON_WITHOUT_OPS.first_text }}.
"""

_SCIPY_DOC = """## What it detects

The rule needs the `python` facts. It fires when the installed bitsandbytes is {{ imports.SCIPY_IMPORT.first_text }}
or newer but older than {{ imports.SCIPY_IMPORT.below_text }}, and no `scipy` distribution is installed in the same
interpreter. Other versions, and an unknown version, do not fire.

## Why it matters

{{ imports.SCIPY_IMPORT.first_text }} added the NF4 4-bit data type and began importing `scipy`
(`from scipy.stats import norm` in `bitsandbytes/functional.py`) at import time. However,
{{ imports.SCIPY_IMPORT.first_text }}–{{ imports.SCIPY_IMPORT.last_text }} do not list scipy as a dependency
(`pip show bitsandbytes` shows an empty `Requires:`). In slim Docker images and fresh virtual environments scipy is
therefore absent, and importing bitsandbytes, or transformers' bitsandbytes integration, fails:

```
    from . import cuda_setup, utils, research
ModuleNotFoundError: No module named 'scipy'
```

{{ imports.SCIPY_IMPORT.below_text }} declares scipy in `install_requires`, so pip installs it automatically.

## How to fix

Install scipy into the same interpreter, or upgrade bitsandbytes (which also removes the legacy loader, see
[BNB205](BNB205.md)):

```bash
pip install scipy
# or
pip install -U bitsandbytes
```
"""


IMPORT_BREAKAGES = (
    ImportBreakage(
        "BNB207",
        "triton-ops-removed",
        "bitsandbytes does not import triton.ops from a triton that removed it",
        covers=("triton_ops_module_missing",),
        references=(
            "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1492",
            "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1413",
        ),
        releases=TRITON_OPS_IMPORT,
        packages=("triton", "pytorch-triton-rocm"),
        breaks=TRITON_WITHOUT_OPS.contains,
        title="imports triton.ops, which triton {other} removed",
        explanation=f"bitsandbytes {minor(TRITON_OPS_IMPORT.first_text)} to {TRITON_OPS_IMPORT.last_text} import "
        f"triton.ops.matmul_perf_model at import time; triton {TRITON_WITHOUT_OPS.first_text} (shipped with torch "
        f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}) removed triton.ops, so `import bitsandbytes` fails with "
        "\"ModuleNotFoundError: No module named 'triton.ops'\".",
        shown="{other}",
        fix=f"Upgrade bitsandbytes to {TRITON_OPS_IMPORT.below_text} or newer (PR #1413 removed the import), or pin "
        f"triton below {TRITON_WITHOUT_OPS.first_text} together with torch below "
        f"{TORCH_WITH_TRITON_WITHOUT_OPS.first_text}.",
        commands=(f'pip install -U "bitsandbytes{TRITON_OPS_IMPORT.after().pip_spec()}"',),
        doc=_TRITON_OPS_DOC,
    ),
    ImportBreakage(
        "BNB208",
        "scipy-missing-for-old-bnb",
        "scipy is installed when the bitsandbytes release imports it",
        covers=("scipy_missing",),
        references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/426",),
        releases=SCIPY_IMPORT,
        packages=("scipy",),
        breaks=lambda version: not version,
        title="needs scipy, which is not installed",
        explanation=f"{SCIPY_IMPORT.first_text}-{SCIPY_IMPORT.last_text} import scipy (for the NF4 data type) "
        "without declaring it as a dependency, so `import bitsandbytes` fails with \"No module named 'scipy'\".",
        shown="not installed",
        fix="Install scipy, or upgrade bitsandbytes.",
        commands=("pip install scipy",),
        doc=_SCIPY_DOC,
        log_gate=LogGate(
            "a log shows scipy missing only with \"No module named 'scipy'\"", signatures=("scipy_missing",)
        ),
    ),
)


def import_breakage_check(row: ImportBreakage) -> Check:
    """The check of one IMPORT_BREAKAGES row: the installed release imports the module, and the other
    package is in the state that breaks the import."""

    def check(facts: Facts) -> Hit | None:
        bnb, python = bnb_of(facts), facts.python
        assert python is not None
        release = release_tuple(bnb.version) if bnb and bnb.installed else None
        other = next((version for version in map(python.packages.get, row.packages) if version), None)
        if bnb is None or not row.releases.contains(release) or not row.breaks(other):
            return None
        label = row.packages[0]
        return Hit(
            title=f"{versioned(facts, 'bitsandbytes', bnb.version)} {row.title.format(other=other)}",
            explanation=row.explanation,
            evidence=[
                ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
                ev(label, row.shown.format(other=other), f"python.packages.{label}"),
            ],
            remediation=Remediation(row.fix, list(row.commands)),
        )

    check.__name__ = check.__qualname__ = row.name.replace("-", "_")
    check.__doc__ = row.doc
    return check


for _row in IMPORT_BREAKAGES:
    rule(
        _row.id,
        _row.name,
        _row.severity,
        _row.summary,
        needs=("python",),
        covers=_row.covers,
        references=_row.references,
        log_gate=_row.log_gate,
    )(import_breakage_check(_row))
