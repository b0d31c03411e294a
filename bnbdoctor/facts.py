"""Facts: what the probes found, as plain JSON-serializable records.

Rules read facts and nothing else, and a report carries its facts, so a diagnosis can be replayed
anywhere (``--from``). A section that is ``None`` means its probe failed or did not run; the
reason is in :attr:`Facts.probes`. Bump :data:`SCHEMA_VERSION` on any incompatible change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Version of the facts/report layout. Readers migrate or reject other versions.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class OsInfo:
    """What the operating system says about itself, before any file is read: a host's answer
    (:meth:`bnbdoctor.hosts.base.Host.os_info`, recorded in a fixture's ``machine.json``), which the
    platform probe turns into :class:`PlatformFacts` and the redactor reads the identity from. Not a
    section of :class:`Facts`; it is here, below the hosts and the redactor, so that both can use it."""

    system: str  # "Linux", "Windows" or "Darwin", as platform.system() spells them
    machine: str  # "x86_64", "aarch64", "AMD64", "arm64"
    release: str = ""  # kernel release, Windows build or Darwin release
    version: str = ""  # platform.version(): the Windows build string, the kernel build line
    libc_name: str | None = None  # "glibc", "musl" or None
    libc_version: str | None = None
    mac_version: str | None = None
    hostname: str | None = None
    username: str | None = None
    home: str | None = None


@dataclass
class PlatformFacts:
    """The operating system, as the loader and the wheels see it."""

    os: str  # "linux", "windows", "macos" or the raw platform.system() lowercased
    arch: str  # normalised: "x86_64", "aarch64", "arm64", ...
    kernel: str = ""
    os_version: str | None = None  # Windows build, macOS version
    distro_id: str | None = None  # /etc/os-release ID: "ubuntu", "centos", "debian"
    distro_version: str | None = None  # VERSION_ID: "20.04", "7"
    distro_name: str | None = None  # PRETTY_NAME
    libc: str | None = None  # "glibc", "musl"
    libc_version: str | None = None  # "2.36"
    wsl: int | None = None  # 1 or 2 under WSL, else None
    wsl_lib_dir: str | None = None  # "/usr/lib/wsl/lib" when it exists
    wsl_lib_on_loader_path: bool | None = None  # in LD_LIBRARY_PATH or /etc/ld.so.conf*
    jetson_release: str | None = None  # first line of /etc/nv_tegra_release
    container: str | None = None  # "docker", "podman", ... when detected
    # GPU device nodes in /dev, a GPU's trace that needs no NVML: "dxg" (WSL2's GPU paravirtualization),
    # "kfd" (AMD's ROCm kernel driver), "nvidiactl" (NVIDIA's kernel driver is loaded)
    gpu_device_nodes: list[str] = field(default_factory=list)

    @property
    def is_linux(self) -> bool:
        return self.os == "linux"


@dataclass
class GpuDevice:
    """One NVIDIA GPU. ``visible`` is False when CUDA_VISIBLE_DEVICES hides it."""

    index: int
    name: str
    compute_capability: list[int] | None = None  # [major, minor]
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    visible: bool = True

    @property
    def cc(self) -> tuple[int, int] | None:
        cc = self.compute_capability
        return (int(cc[0]), int(cc[1])) if cc and len(cc) == 2 else None

    @property
    def cc_text(self) -> str:
        cc = self.cc
        return f"{cc[0]}.{cc[1]}" if cc else "unknown"


@dataclass
class GpuFacts:
    """The NVIDIA driver and GPUs, from NVML."""

    nvml_available: bool
    nvml_error: str | None = None
    nvml_error_kind: str | None = None  # library_not_found | driver_not_loaded | timeout | ...
    driver_version: str | None = None  # "535.129.03"
    driver_cuda_version: str | None = None  # highest CUDA the driver supports: "12.2"
    devices: list[GpuDevice] = field(default_factory=list)
    cuda_visible_devices: str | None = None

    @property
    def visible(self) -> list[GpuDevice]:
        return [d for d in self.devices if d.visible]

    @property
    def highest_cc(self) -> tuple[int, int] | None:
        """bitsandbytes sorts every visible GPU's capability and uses the highest."""
        ccs = [d.cc for d in self.visible if d.cc]
        return max(ccs) if ccs else None


@dataclass
class PackageFacts:
    """An installed distribution, read from its metadata (never imported)."""

    name: str
    version: str | None = None
    location: str | None = None  # the import package's folder
    requires_python: str | None = None
    requires: list[str] = field(default_factory=list)  # Requires-Dist lines without extras


@dataclass
class NvidiaWheel:
    """A pip ``nvidia-*`` wheel that brings CUDA libraries (what torch preloads)."""

    name: str  # "nvidia-cuda-runtime-cu12"
    version: str | None = None
    lib_dir: str | None = None
    libraries: list[str] = field(default_factory=list)


@dataclass
class DirectUrl:
    """PEP 610 ``direct_url.json``: where pip installed a distribution from when it was not an index."""

    url: str
    editable: bool = False  # ``pip install -e``: the package runs from its checkout
    vcs: str | None = None  # "git" for ``pip install git+https://...``


@dataclass
class TorchFacts:
    """PyTorch as installed: versions from ``torch/version.py``, read as text."""

    installed: bool
    version: str | None = None
    cuda: str | None = None  # torch.version.cuda, "12.1"
    hip: str | None = None
    xpu: str | None = None
    location: str | None = None
    lib_dir: str | None = None
    lib_files: list[str] = field(default_factory=list)  # CUDA-related libraries in torch/lib
    nvidia_wheels: list[NvidiaWheel] = field(default_factory=list)
    installer: str | None = None  # its dist-info's INSTALLER: "pip", "uv", "conda" (None: not recorded)
    direct_url: DirectUrl | None = None  # PEP 610: installed from a path, a URL or a checkout, not an index
    error: str | None = None

    @property
    def build(self) -> str:
        """ "cuda", "rocm", "xpu" or "cpu" (None when torch is missing)."""
        if self.cuda:
            return "cuda"
        if self.hip:
            return "rocm"
        if self.xpu:
            return "xpu"
        return "cpu"


@dataclass
class DistributionClaim:
    """A distribution whose RECORD lists files in the bitsandbytes package folder (a fork's or PyPI's)."""

    name: str  # as its dist-info folder spells it: "bitsandbytes", "bitsandbytes_windows"
    version: str | None = None
    metadata_dir: str | None = None  # the *.dist-info folder
    files: int = 0  # files of the package folder its RECORD lists


@dataclass
class PackageRecord:
    """The bitsandbytes package folder against the RECORD files of the distributions that claim it.

    A file no claimant lists came from another install: an older release left behind, a fork's copy.
    """

    claims: list[DistributionClaim] = field(default_factory=list)
    compared_with: str | None = None  # the dist-info whose RECORD was compared: the one written last
    files: int = 0  # files seen in the folder (__pycache__ is not read)
    unlisted: list[str] = field(default_factory=list)  # the first unlisted files (relative, "/"), modules first
    unlisted_count: int = 0
    truncated: bool = False  # the folder has more files than the probe reads
    skipped: str | None = None  # why the folder was not compared (no RECORD, an editable install, ...)


@dataclass
class BnbMinimum:
    """The oldest bitsandbytes another package accepts, read from that package's own source or message."""

    package: str  # "transformers"
    minimum: str | None = None  # "0.46.1"; None when the source names none or could not be read
    constant: str | None = None  # "BITSANDBYTES_MIN_VERSION"
    file: str | None = None  # where it was read ("utils/import_utils.py" path), or None from a log
    error: str | None = None  # why it could not be read


@dataclass
class BnbFacts:
    """bitsandbytes as installed: version, package folder and the native files it ships."""

    installed: bool
    version: str | None = None
    location: str | None = None  # the package folder holding libbitsandbytes_*
    has_metadata: bool = False  # False for a bare source checkout on sys.path
    requires_python: str | None = None
    requires_torch: str | None = None  # the torch specifier from Requires-Dist: ">=2.4,<3"
    native_libraries: list[str] = field(default_factory=list)  # file names only
    legacy_cuda_setup: bool = False  # ships bitsandbytes/cuda_setup/ (<= 0.43.0)
    wheel_tag: str | None = None  # "py3-none-manylinux_2_24_x86_64" from the dist-info's WHEEL file
    # How it was installed: "wheel" (a dist-info with a WHEEL file), "dist-info" (no WHEEL file), "egg" (the
    # package sits in a .egg on sys.path: setup.py install), "egg-info" (setup.py develop / a legacy install)
    dist_format: str | None = None
    direct_url: str | None = None  # PEP 610 direct_url.json "url": set only for a pip install from a path or URL
    error: str | None = None
    record: PackageRecord | None = None  # the package folder against its RECORD (None: not examined)
    installer: str | None = None  # its dist-info's INSTALLER: "pip", "uv", "conda" (None: not recorded)


@dataclass
class PythonFacts:
    """The patient interpreter: the one whose torch and bitsandbytes are diagnosed."""

    executable: str
    selected_by: str  # "--python", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH", "current"
    version: str | None = None  # "3.11.7"
    implementation: str | None = None
    prefix: str | None = None
    base_prefix: str | None = None
    platform_tag: str | None = None  # sysconfig.get_platform()
    site_packages: list[str] = field(default_factory=list)
    torch: TorchFacts = field(default_factory=lambda: TorchFacts(installed=False))
    bitsandbytes: BnbFacts = field(default_factory=lambda: BnbFacts(installed=False))
    packages: dict[str, str | None] = field(default_factory=dict)  # other patients' versions
    transformers_bnb_minimum: BnbMinimum | None = None  # None: transformers missing or not examined
    conda_packages: dict[str, str] = field(default_factory=dict)  # conda-meta/ records of the patients' owners
    pip_available: bool | None = None  # ``python -m pip`` can run (False in a uv env made without pip)
    venv_tool: str | None = None  # what made the virtualenv, from pyvenv.cfg: "uv", "virtualenv", "venv"
    # activations passed over because no Python is there: "VIRTUAL_ENV=/gone/venv" (a deleted or moved env)
    stale_activations: list[str] = field(default_factory=list)


@dataclass
class CudaToolkit:
    """One CUDA toolkit folder found on disk."""

    path: str
    version: str | None = None  # from version.json / version.txt
    source: str = ""  # "CUDA_HOME", "/usr/local", "CONDA_PREFIX", ...
    has_cudart: bool = False


@dataclass
class CudaToolkitFacts:
    """Locally installed CUDA toolkits. bitsandbytes never uses them to choose its library,
    but their libraries can win the loader's search."""

    cuda_home: str | None = None
    toolkits: list[CudaToolkit] = field(default_factory=list)
    nvcc_path: str | None = None
    nvcc_version: str | None = None
    nvcc_error: str | None = None


@dataclass
class SelectedLibrary:
    """Which libbitsandbytes_* the installed release will try to load (see knowledge/selection.py)."""

    backend: str  # cuda | rocm | xpu | cpu
    expected_file: str
    loaded_file: str | None
    exists: bool
    outcome: str  # loads | cpu_library | import_error | cpu_fallback | error_on_first_call | override_error
    reason: str
    override: str | None = None
    fallback_from: str | None = None
    message: str | None = None


@dataclass
class LibraryCandidate:
    """One file the loader could pick for a dependency, and the search step that finds it."""

    path: str
    via: str  # "loaded by torch", "LD_LIBRARY_PATH", "RUNPATH", "RPATH", "ld.so.cache", ...
    realpath: str | None = None
    version: str | None = None  # from the real file name: libcudart.so.12.1.105 -> "12.1.105"


@dataclass
class ResolvedDependency:
    """A DT_NEEDED entry (or DLL import) of the selected library, resolved as the loader would."""

    name: str  # "libcudart.so.12", "cublas64_12.dll"
    kind: str  # cuda | rocm | cxx_runtime | libc | system | other
    resolved: str | None = None  # the winning path; None when nothing is found
    via: str | None = None
    candidates: list[LibraryCandidate] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # distinct real files among the candidates
    elsewhere: list[str] = field(default_factory=list)  # matching files outside the search path
    # when not found: the same library under another SONAME where the loader or bnbdoctor looked
    # (libsycl.so.9 for a needed libsycl.so.8), i.e. a runtime of another major
    other_sonames: list[str] = field(default_factory=list)


@dataclass
class AbiNeed:
    """Symbol versions the selected library needs from one dependency, against what it defines."""

    library: str  # "libstdc++.so.6"
    required: list[str] = field(default_factory=list)
    provider: str | None = None  # the file whose definitions were read
    provider_max: dict[str, str] = field(default_factory=dict)  # namespace -> highest defined
    missing: list[str] = field(default_factory=list)
    source: str = "elf"  # "elf": .gnu.version_d read; "glibc": from the glibc version; "unknown"
    error: str | None = None
    satisfied_by: list[str] = field(default_factory=list)  # other files on this machine that would do


@dataclass
class NativeFacts:
    """The native-library chain: selection, the file's ELF/PE needs, and their resolution."""

    selection: SelectedLibrary | None = None
    package_dir: str | None = None
    library: str | None = None  # full path of the file that will be loaded
    format: str | None = None  # ELF | PE | Mach-O | unknown
    error: str | None = None  # why the file could not be read or parsed
    machine: str | None = None
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    version_needs: dict[str, list[str]] = field(default_factory=dict)
    dependencies: list[ResolvedDependency] = field(default_factory=list)
    abi: list[AbiNeed] = field(default_factory=list)
    preloaded: list[str] = field(default_factory=list)  # what torch has loaded before bitsandbytes
    search_order: list[str] = field(default_factory=list)  # the steps used, in order
    loader_cache: str | None = None  # "/etc/ld.so.cache: 542 entries" or why it is unavailable
    corrupt_libraries: dict[str, str] = field(default_factory=dict)  # shipped file -> parse error


@dataclass
class TorchArchFacts:
    """The GPU architectures the installed torch's CUDA kernels were built for, from the fatbin
    headers of its CUDA library (``bnbdoctor/native/fatbin.py``), never by importing torch."""

    source: str = "none"  # "fatbin": read from the library | "log": torch's own warning | "none": see error
    library: str | None = None  # the file read: .../torch/lib/libtorch_cuda.so
    sass: list[int] = field(default_factory=list)  # SASS targets, 61 for sm_61
    ptx: list[int] = field(default_factory=list)  # PTX targets the driver can compile for newer GPUs
    containers: int = 0  # fatbin containers read
    sharing: int = 0  # of those, how many have exactly these targets
    complete: bool = False  # every container of the library was read
    error: str | None = None  # why the list could not be read (the rules then use a recorded table)


@dataclass
class LoadCheck:
    """The real dynamic loader's verdict, from an isolated, time-limited subprocess."""

    ran: bool
    ok: bool | None = None
    library: str | None = None
    error: str | None = None  # the loader's exact message
    preloaded: list[str] = field(default_factory=list)
    preload_errors: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    skipped_reason: str | None = None


@dataclass
class LogMatch:
    """One line of a pasted log that matched a known message family."""

    signature: str  # stable id of the message family, e.g. "dispatch_cpu_disk_valueerror"
    line: int  # 1-based line number in the log as given
    text: str  # the matched line (trimmed, at most a few hundred characters)


@dataclass
class LogFacts:
    """What a pasted log reveals (``bnbdoctor explain``); facts from a log are partial by nature."""

    source: str  # file name or "stdin"
    lines: int = 0
    matches: list[LogMatch] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # package -> version seen in the log
    exception: str | None = None  # the last exception line, e.g. "ValueError: Some modules are ..."


# FitFacts (bnbdoctor fit) are defined below this line by the fit issue.


@dataclass
class FitDevice:
    """One device in a predicted placement: its budget at each step of from_pretrained, and its use (bytes)."""

    device: str  # "0", "1", ..., "cpu", "disk"
    given_bytes: int | None = None  # max_memory as given, or the free memory from_pretrained would query
    balanced_cap_bytes: int | None = None  # after get_balanced_memory's cap (None with "sequential")
    budget_bytes: int | None = None  # after the bnb quantizer's x0.9: what the packer fills
    reserved_bytes: int = 0  # kept free on GPU 0 and cpu for the largest layer still to place
    used_bytes: int = 0  # sizes as transformers counts them
    quant_state_bytes: int = 0  # absmax / SCB of the quantized weights placed here, not counted by transformers
    skipped_at: str | None = None  # the first module that did not fit; the packer moved on for good
    skipped_atom_bytes: int | None = None
    remaining_bytes: int | None = None  # budget - reservation - use, when it was skipped


@dataclass
class FitTensor:
    """A tensor transformers keeps in the model dtype (embeddings, lm_head, fused experts, skipped modules)."""

    name: str
    kind: str  # embedding | lm_head | experts | skipped | norm | other
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    bytes: int = 0
    module_class: str = ""


@dataclass
class FitRemedy:
    """A change to the from_pretrained call, simulated with the same engine."""

    # sequential | max_memory | explicit_map | quant_4bit | min_gpu_memory | more_gpus | fp32_offload
    # | upgrade_transformers
    kind: str
    status: str  # passes | fails | unverified | error
    title: str
    verdict: str | None = None  # the simulated verdict (see FitFacts.verdict)
    detail: str = ""
    code: str = ""  # Python to paste into the from_pretrained call
    device_map: dict[str, int | str] = field(default_factory=dict)  # the simulated placement (collapsed)
    device_map_arg: str | None = None  # the simulated device_map= string; None when device_map is the dict passed
    max_memory: dict[str, int] | None = None  # the simulated max_memory=
    free_memory: dict[str, int] | None = None  # the simulated free memory, when max_memory is None
    quant: str | None = None
    fp32_offload: bool = False
    per_gpu_bytes: int | None = None
    gpus: int | None = None
    cpu_bytes: int | None = None  # CPU RAM the offloaded modules need, unquantized
    gpu_use: dict[str, int] = field(default_factory=dict)
    transformers_version: str | None = None
    transformers_location: str | None = None
    error: str | None = None


@dataclass
class FitFacts:
    """What ``bnbdoctor fit`` predicted for one ``from_pretrained(..., quantization_config=bnb, device_map=...)``."""

    model: str  # as given on the command line
    config_path: str
    model_dir: str | None = None
    model_type: str | None = None
    architecture: str | None = None  # config.architectures[0]
    model_class: str | None = None  # the class that was built
    quant: str = "4bit"  # 4bit | 8bit
    quant_type: str | None = None  # nf4 | fp4 (4-bit)
    double_quant: bool = False
    pre_quantized: bool = False  # the checkpoint's config carries a bnb quantization_config
    fp32_offload: bool = False  # llm_int8_enable_fp32_cpu_offload as the user set it
    skip_modules: list[str] = field(default_factory=list)
    dtype: str | None = None
    device_map: str = "auto"  # the argument: auto | balanced | balanced_low_0 | sequential
    max_memory: dict[str, int] | None = None  # the user's max_memory (None: from_pretrained queries the devices)
    memory_source: str = "max_memory"  # max_memory | --gpus | detected
    free_memory: dict[str, int] | None = None  # simulated or detected free memory when max_memory is None
    engine: str = "transformers"  # transformers | transformers+standin | approximate
    engine_note: str | None = None
    versions: dict[str, str] = field(default_factory=dict)  # python, torch, transformers, accelerate, bitsandbytes
    python: str | None = None
    python_selected_by: str | None = None
    # fits | raises | all_cpu | fp32_offload; approximate: likely_fits | likely_raises | unknown
    verdict: str = "unknown"
    error_text: str | None = None  # the exact ValueError text from_pretrained would raise
    raise_site: str | None = None  # _get_device_map | get_hf_quantizer
    placement: dict[str, int | str] = field(default_factory=dict)  # the predicted device map, collapsed
    devices: list[FitDevice] = field(default_factory=list)
    model_bytes: int | None = None  # as transformers counts it (quantized Linear at 0.5 / 1 byte)
    quantized_bytes: int | None = None
    unquantized_bytes: int | None = None
    unquantized_by_kind: dict[str, int] = field(default_factory=dict)
    quant_state_bytes: int | None = None  # absmax / SCB that transformers does not count
    largest_unquantized: list[FitTensor] = field(default_factory=list)
    no_split_modules: list[str] = field(default_factory=list)
    biggest_no_split: str | None = None
    biggest_no_split_bytes: int | None = None
    biggest_leaf: str | None = None
    biggest_leaf_bytes: int | None = None
    remedies: list[FitRemedy] = field(default_factory=list)  # every remedy tried, with its verdict
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int | None = None


@dataclass
class ProbeRun:
    """How one probe went: a failed probe is a fact, not a crash."""

    name: str
    ok: bool
    duration_s: float
    error: str | None = None
    skipped: bool = False


@dataclass
class LintSite:
    """One place in the user's code that ``bnbdoctor lint`` read (static analysis, never run).

    ``kind`` names the pattern (``merge``, ``kbit_kwarg``, ``offload_kwarg``, ``move``, ``device_map_auto``,
    ``compute_dtype``, ``quant_storage``); ``detail`` holds what the pattern's rule needs (the bits
    of the model, the method called, the names the fix uses), as strings."""

    kind: str
    file: str
    line: int
    col: int
    code: str = ""  # the source text of the call
    cell: int | None = None  # a notebook's cell number (1-based); line is then within the cell
    detail: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        cell = f" cell {self.cell}" if self.cell is not None else ""
        return f"{self.file}{cell}:{self.line}:{self.col}"


@dataclass
class LintFacts:
    """What ``bnbdoctor lint`` read: the files, the sites found, the files it could not parse."""

    files: list[str] = field(default_factory=list)
    sites: list[LintSite] = field(default_factory=list)
    unparsed: dict[str, str] = field(default_factory=dict)  # file -> one-line reason


@dataclass
class Facts:
    """Everything the probes gathered about one machine."""

    schema_version: int = SCHEMA_VERSION
    source: dict[str, Any] = field(default_factory=dict)  # {"kind": "live"|"fixture"|"log", ...}
    env: dict[str, str] = field(default_factory=dict)  # allowlisted variables that are set
    platform: PlatformFacts | None = None
    gpu: GpuFacts | None = None
    python: PythonFacts | None = None
    cuda_toolkit: CudaToolkitFacts | None = None
    native: NativeFacts | None = None
    torch_arch: TorchArchFacts | None = None
    load: LoadCheck | None = None
    log: LogFacts | None = None
    fit: FitFacts | None = None
    lint: LintFacts | None = None
    probes: list[ProbeRun] = field(default_factory=list)

    def probe_error(self, name: str) -> str | None:
        for run in self.probes:
            if run.name == name and not run.ok:
                return run.error
        return None
