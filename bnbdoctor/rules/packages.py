"""Rules about the Python side: torch and bitsandbytes present, builds and versions that fit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Check, Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.imports import (
    SCIPY_IMPORT,
    TORCH_WITH_TRITON_WITHOUT_OPS,
    TRITON_OPS_IMPORT,
    TRITON_WITHOUT_OPS,
)
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.knowledge.ranges import VersionRange, minor
from bnbdoctor.knowledge.releases import (
    FIRST_RELEASE_FOR_PLATFORM,
    bnb_spec_for_torch,
    known_requirements,
    legacy_cuda_setup,
)
from bnbdoctor.knowledge.versions import (
    at_least,
    major_minor,
    parse_version,
    release_tuple,
)
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    TORCH_GET_STARTED,
    bnb_of,
    ev,
    torch_of,
    versioned,
    visible_gpus,
    wheel_upgrade_blocked,
)


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
    log_gate=LogGate("a log shows torch missing only with \"No module named 'torch'\"", signatures=("torch_not_installed",)),
)
def torch_missing(facts: Facts) -> Hit | None:
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
        remediation=Remediation("Install PyTorch for your platform (see pytorch.org), or point bnbdoctor at the "
                                "interpreter you use: `bnbdoctor --python /path/to/python`.", [command]),
    )


@rule(
    "BNB202",
    "torch-cpu-build-with-nvidia-gpu",
    Severity.ERROR,
    "torch is a CUDA build when an NVIDIA GPU is present",
    needs=("python", "gpu"),
    covers=("torch_version_cuda_none", "compiled_without_gpu_support", "transformers_importerror_requires_accelerate_bnb",
            "native_lib_none_attribute_errors"),
    references=(TORCH_GET_STARTED, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1202"),
    log_gate=LogGate("the log does not show that torch is a CPU-only build", signatures=("torch_cuda_none",),
                     shows=_log_shows_cpu_torch),
)
def torch_cpu_build(facts: Facts) -> Hit | None:
    torch = torch_of(facts)
    gpus = visible_gpus(facts)
    if not (torch and torch.installed) or torch.build != "cpu" or not gpus:
        return None
    index = torch_index_for(major_minor(facts.gpu.driver_cuda_version)) if facts.gpu else None
    base = (torch.version or "").split("+")[0]
    commands = [f'pip install --force-reinstall "torch=={base}" --index-url {index}'] if index and base else []
    return Hit(
        title=f"torch {torch.version} is a CPU-only build, but this machine has {gpus[0].name}",
        explanation="torch.version.cuda is None, so torch.cuda.is_available() is False and bitsandbytes loads "
        "its CPU library: 8-bit/4-bit GPU operations are unavailable ('compiled without GPU support', "
        "'NoneType' object has no attribute …, and transformers' misleading 'requires Accelerate and the "
        "latest version of bitsandbytes').",
        evidence=[ev("torch", f"{torch.version} (torch.version.cuda = None)", "python.torch.cuda"),
                  ev("GPU", gpus[0].name, "gpu.devices[0].name"),
                  ev("driver supports CUDA", facts.gpu.driver_cuda_version if facts.gpu else None, "gpu.driver_cuda_version")],
        remediation=Remediation(
            "Install a CUDA build of the same torch version" + (f" from {index} (the newest CUDA your driver "
                                                               "supports)" if index else "") + ".",
            commands,
        ),
    )


@rule(
    "BNB203",
    "bitsandbytes-missing",
    Severity.ERROR,
    "bitsandbytes is installed in the examined interpreter",
    needs=("python",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate("a log shows bitsandbytes missing only with \"No module named 'bitsandbytes'\"",
                     signatures=("bnb_not_installed",)),
)
def bnb_missing(facts: Facts) -> Hit | None:
    bnb = bnb_of(facts)
    if bnb is None or bnb.installed:
        return None
    return Hit(
        title="bitsandbytes is not installed in the examined Python",
        explanation="`import bitsandbytes` fails with ModuleNotFoundError in this interpreter. If you installed "
        "it elsewhere, bnbdoctor examined the wrong interpreter (choose it with --python).",
        evidence=[ev("interpreter", _python_line(facts), "python.executable")],
        remediation=Remediation("Install bitsandbytes into this interpreter.",
                                [f"{facts.python.executable} -m pip install -U bitsandbytes"]),  # type: ignore[union-attr]
    )


@rule(
    "BNB204",
    "bitsandbytes-too-old-for-platform",
    Severity.ERROR,
    "The installed bitsandbytes release supports this OS and architecture",
    needs=("python", "platform"),
    covers=("windows_path_not_iterable", "windows_linux_so_loaded", "macos_apple_silicon_no_native_lib",
            "no_gpu_detected_cpu_fallback"),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723"),
)
def too_old_for_platform(facts: Facts) -> Hit | Skip | None:
    bnb, platform, torch = bnb_of(facts), facts.platform, torch_of(facts)
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
    label = {"windows": "Windows", "macos": "macOS", "linux": "Linux"}.get(platform.os, platform.os)
    linux_only = [f for f in bnb.native_libraries if f.endswith(".so")]
    symptom = {
        "windows": "\"argument of type 'WindowsPath' is not iterable\" or '[WinError 193] %1 is not a valid "
                   "Win32 application'",
        "macos": "'not a mach-o file' from dlopen",
        "linux": "'wrong ELF class' or 'cannot open shared object file'",
    }.get(platform.os, "a failed library load")
    spec = bnb_spec_for_torch(torch.version if torch and torch.installed else None, first)
    fix = f"Upgrade bitsandbytes to a release that supports {label} {platform.arch}."
    if "<" in spec:
        fix += (f" Your torch {torch.version} limits that to bitsandbytes{spec} (newer releases need a newer "  # type: ignore[union-attr]
                "torch, and pip would replace your torch to get one).")
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} has no {label} {platform.arch} support (first release: {first})",
        explanation=f"Releases before {first} ship no native library for {label} {platform.arch}"
        + (f"; this install holds only Linux .so files ({len(linux_only)} of them), which cannot load here"
           if linux_only and platform.os != "linux" else "")
        + f". The loader then fails ({symptom}) and bitsandbytes runs CPU-only or not at all.",
        evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
                  ev("platform", f"{platform.os} {platform.arch}", "platform.arch")],
        remediation=Remediation(fix, [f'pip install -U "bitsandbytes{spec}"']),
    )


@rule(
    "BNB205",
    "legacy-cuda-setup",
    Severity.WARNING,
    f"bitsandbytes is newer than the legacy CUDA setup ({LEGACY_CUDA_SETUP.below_text}+)",
    needs=("python",),
    covers=("libcudart_not_found_legacy_cuda_setup", "nonexistent_path_warnings_noise", "duplicate_cuda_runtimes_found",
            "conda_env_vs_system_cuda_mixup", "cuda_setup_failed_despite_gpu_available", "cuda_lt_11_unsupported"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1041", BNB_DOCS_INSTALL),
)
def legacy_setup(facts: Facts) -> Hit | Skip | None:
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed) or not (bnb.legacy_cuda_setup or legacy_cuda_setup(bnb.version)):
        return None
    if facts.platform and facts.platform.os == "macos":
        return Skip("the legacy CUDA setup only matters where CUDA does")
    if torch is not None and torch.installed and torch.build != "cuda":
        return Skip("torch is not a CUDA build")
    spec = bnb_spec_for_torch(torch.version if torch and torch.installed else None, LEGACY_CUDA_SETUP.below_text)
    blocked = wheel_upgrade_blocked(facts)
    if blocked:
        fix = Remediation(f"Upgrading is the fix, but {blocked}.", [])
    else:
        fix = Remediation("Upgrade bitsandbytes; the current loader follows torch and needs no LD_LIBRARY_PATH "
                          "tweaks." + (f" Your torch limits that to bitsandbytes{spec}." if "<" in spec else ""),
                          [f'pip install -U "bitsandbytes{spec}"'])
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
        version = parse_version(installed.split("+")[0])
        if version is None or spec.contains(version, prereleases=True):
            continue
        hits.append(Hit(
            title=f"{versioned(facts, 'bitsandbytes', bnb.version)} requires {label} {spec_text}, found {installed}",
            explanation=f"bitsandbytes' files can be installed while {label} does not meet its requirement "
            "(pip --ignore-requires-python or --no-deps, conda, or a later downgrade of torch); the release then "
            "fails at import or at the first operation in ways that do not name the version.",
            evidence=[ev(label, installed, fact), ev("required", spec_text, "python.bitsandbytes")],
            remediation=Remediation(
                f"Install a {label} that satisfies {spec_text}, or a bitsandbytes release that supports {label} "
                f"{installed}.", []),
        ))
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
    severity: Severity = Severity.ERROR
    log_gate: LogGate | None = None


IMPORT_BREAKAGES = (
    ImportBreakage(
        "BNB207", "triton-ops-removed", "bitsandbytes does not import triton.ops from a triton that removed it",
        covers=("triton_ops_module_missing",),
        references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1492",
                    "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1413"),
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
    ),
    ImportBreakage(
        "BNB208", "scipy-missing-for-old-bnb", "scipy is installed when the bitsandbytes release imports it",
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
        log_gate=LogGate("a log shows scipy missing only with \"No module named 'scipy'\"",
                         signatures=("scipy_missing",)),
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
            evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version"),
                      ev(label, row.shown.format(other=other), f"python.packages.{label}")],
            remediation=Remediation(row.fix, list(row.commands)),
        )

    check.__name__ = check.__qualname__ = row.name.replace("-", "_")
    return check


for _row in IMPORT_BREAKAGES:
    rule(_row.id, _row.name, _row.severity, _row.summary, needs=("python",), covers=_row.covers,
         references=_row.references, log_gate=_row.log_gate)(import_breakage_check(_row))
