"""BNB202 torch-cpu-build-with-nvidia-gpu: passes when torch is a CUDA/ROCm build when the machine has an NVIDIA or AMD GPU."""

from __future__ import annotations

import re

from bnbdoctor.derive import gpu_sightings
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.loader import COMPILED_WITHOUT_GPU_WARNING, CPU_FALLBACK_ERA, NONE_LIBRARY_ATTRIBUTE_ERRORS
from bnbdoctor.knowledge.platforms import jetson_index
from bnbdoctor.knowledge.transformers import misleading_importerror
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import TORCH_BUILD_CHECK, TORCH_GET_STARTED, bnb_of, ev, torch_of


def _log_shows_cpu_torch(facts: Facts) -> bool:
    """A log shows a CPU-only torch when it prints a ``+cpu`` torch version."""
    torch = torch_of(facts)
    return bool(torch and torch.version and torch.version.endswith("+cpu"))


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
        signatures=(S.TORCH_CUDA_NONE,),
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

    - {{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }} read `torch.version.cuda` to build the library name, and with `None` they log `Could not load
      bitsandbytes native library: 'NoneType' object has no attribute 'split'`.
    - Up to {{ loader.COMPILED_WITHOUT_GPU_WARNING.last_text }} the CPU library warns `The installed version of bitsandbytes was compiled without GPU support. 8-bit
      optimizers, 8-bit multiplication, and GPU quantization are unavailable.`. The package was not mis-built; the CPU
      library was simply chosen.
    - Up to {{ loader.NONE_LIBRARY_ATTRIBUTE_ERRORS.last_text }} the first native call then fails, for example `AttributeError: 'NoneType' object has no attribute
      'cadam32bit_grad_fp32'` or `... 'cquantize_blockwise_fp16_nf4'`.
    - transformers {{ transformers.IMPORTERROR_IN_MODELING_UTILS.releases.first_text }}–{{ transformers.IMPORTERROR_IN_MODELING_UTILS.releases.last_text }} and {{ transformers.IMPORTERROR_IN_QUANTIZERS.releases.first_text }}–{{ transformers.IMPORTERROR_IN_QUANTIZERS.releases.last_text }} ({{ transformers.IMPORTERROR_FOR_OLD_BNB.releases.first_text }}–{{ transformers.IMPORTERROR_FOR_OLD_BNB.releases.last_text }} with a bitsandbytes older than {{ transformers.IMPORTERROR_FOR_OLD_BNB.bnb_below }}) check for a GPU inside
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
