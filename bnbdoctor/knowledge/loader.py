"""How each bitsandbytes release finds and loads its native library: the eras of the loader, the
``BNB_CUDA_VERSION`` / ``BNB_ROCM_VERSION`` overrides, and what the libraries need.

:mod:`bnbdoctor.knowledge.selection` reproduces the file choice itself; this module names the
release boundaries that rules check and print. Sources: ../shared/reference/bnb_internals.md
§1 (selection, overrides), §5 (platforms, CPU library) and §6 (glibc).
"""

from __future__ import annotations

from dataclasses import dataclass

from bnbdoctor.knowledge.ranges import VersionRange

#: <= 0.43.0: the CUDASetup loader, which also scans path-like environment variables for libcudart
#: and raises "CUDA Setup failed despite GPU being available"; 0.43.1 follows torch only (#1041).
LEGACY_CUDA_SETUP = VersionRange(
    None, "0.43.1", "bnb_internals.md §1.3: CUDASetup in 0.41.0-0.43.0, reworked by PR #1041 in 0.43.1", last="0.43.0"
)
#: From 0.40.1 the CUDA version comes from torch.version.cuda; before, from the CUDA runtime found on the
#: system. The changelog says 0.41.0 ("relies PyTorch CUDA libraries"); the releases' own code, run by
#: tools/oracle_bnb.py, says 0.40.1: its cuda_setup/main.py get_cuda_version reads torch.version.cuda,
#: 0.40.0.post4's calls cudaRuntimeGetVersion on the libcudart it found.
CUDA_VERSION_FROM_TORCH = VersionRange(
    "0.40.1", None, "tests/data/oracle/bnb_loader.json (0.40.0.post4 vs 0.40.1 cuda_setup/main.py)"
)
#: 0.43.1-0.45.x: a missing CUDA library makes bitsandbytes warn and load its CPU library; 0.46.0
#: requires an exact match and raises at the first native call instead.
CPU_FALLBACK_ERA = VersionRange(
    "0.43.1", "0.46", "bnb_internals.md §1.3: repo@0.43.1 and 0.46.0:cextension.py", last="0.45.x"
)
#: 0.46-0.49: an exact match of torch's CUDA/ROCm version is required; a missing file raises at the first
#: native call.
EXACT_MATCH_ERA = VersionRange("0.46", "0.50", "bnb_internals.md §1.3: repo@0.46.0:cextension.py", last="0.49")
#: 0.50+: the nearest packaged build of the same CUDA/ROCm major when the exact one is missing
#: (#1980); BNB_CUDA_VERSION / BNB_ROCM_VERSION count when set at all and must be digits.
NEAREST_BUILD = VersionRange(
    "0.50", None, "bnb_internals.md §1.3-1.4: repo@0.50.0:cextension.py get_cuda_bnb_library_path"
)
#: BNB_CUDA_VERSION is read from 0.41.0 (bnb_internals.md §1.4); BNB_ROCM_VERSION from NEAREST_BUILD on.
CUDA_OVERRIDE_READ = VersionRange(
    "0.40.1.post1",
    None,
    "tests/data/oracle/bnb_loader.json: 0.40.1.post1's cuda_setup/main.py is the first to read BNB_CUDA_VERSION "
    "(bnb_internals.md §1.4 said 0.41.0, from the changelog)",
)
#: 0.40.1-0.45.x read ``torch.version.cuda``, which a ROCm build of torch leaves None, when torch reports a
#: GPU: the CUDASetup releases (up to 0.43.0) raise at import, 0.43.1-0.45.x log it and hold no library.
ROCM_TORCH_CUDA_NONE = VersionRange(
    "0.40.1",
    "0.46",
    "tests/data/oracle/bnb_loader.json (ROCm torch rows); failure catalog torch_version_cuda_none",
    last="0.45.x",
)
#: 0.40.1 returns four values from evaluate_cuda_setup where its caller unpacks five when torch sees no GPU:
#: ``import bitsandbytes`` raises "ValueError: too many values to unpack (expected 4)"; 0.40.1.post1 fixed it.
CPU_PATH_UNPACK_ERROR = VersionRange(
    "0.40.1", "0.40.1.post1", "tests/data/oracle/bnb_loader.json (0.40.1 cuda_setup/main.py)", last="0.40.1"
)
#: 0.46-0.49 ROCm builds read no override: BNB_CUDA_VERSION is ignored (0.46) or refused (0.47+), and
#: BNB_ROCM_VERSION arrives with NEAREST_BUILD.
ROCM_WITHOUT_OVERRIDE = VersionRange(
    "0.46", NEAREST_BUILD.first, "bnb_internals.md §1.4: 0.46-0.49 ROCm, BNB_ROCM_VERSION from 0.50.0", last="0.49"
)
#: The releases that told users to clear the override with ``export BNB_CUDA_VERSION=`` and ignore an
#: empty value; from :data:`NEAREST_BUILD` on an empty value raises.
EMPTY_OVERRIDE_IGNORED = VersionRange("0.43", "0.50", "bnb_internals.md §1.4 (0.43-0.49 override warning)", last="0.49")
#: ROCm builds of 0.47-0.49 raise on any non-empty BNB_CUDA_VERSION.
ROCM_REJECTS_CUDA_OVERRIDE = VersionRange("0.47", "0.50", "bnb_internals.md §1.4: 0.47.0-0.49.2, ROCm", last="0.49")
#: 0.46-0.49 build the version tag as major*10+minor: ROCm 7.10/7.12/7.14 become rocm80/rocm82/rocm84,
#: which no release ships; 0.50 spells it f"{major}{minor}" again (#1889).
ROCM_TAG_MISBUILT = VersionRange(
    "0.46", "0.50", "bnb_internals.md §1.2: repo@0.46.0:cuda_specs.py; PR #1889; issue #2014", last="0.49"
)
#: ROCm libraries ship in the PyPI Linux wheel from 0.49.0 (rocm62-rocm72); before, only preview and
#: multi-backend wheels had them (0.45.x previews lacked some kernels, issue #1550).
ROCM_IN_PYPI_WHEEL = VersionRange("0.49", None, "bnb_internals.md §5: 0.49.0-0.49.2 ship ROCm in the PyPI wheel")
#: The 0.45.x multi-backend preview wheels whose HIP libraries lack some kernels (undefined device stubs).
ROCM_PREVIEW_WHEELS = VersionRange(
    "0.45", "0.46", "failure catalog rocm_lib_undefined_device_stub: issues #1550, #1519, #1508", last="0.45.x"
)
#: Up to 0.43.x the override builds a wrong file name for the _nocublaslt builds (cc < 7.5);
#: 0.44.0 fixed it with re.sub(r"cuda\d+", ...) (#1318).
#: The legacy CUDA setup stats every path-like environment variable's folders (remove_non_existent_dirs) and lets a
#: PermissionError through: 0.37.0-0.40.x catch only OSError's ENAMETOOLONG; 0.41.x add ``except PermissionError``
#: after ``except OSError``, which already caught it (the 0.41.0 tag and the 0.41.1 sdist); 0.42.0 catches it first.
LEGACY_SETUP_PERMISSION_ERROR = VersionRange(
    None, "0.42", "cuda_setup/main.py remove_non_existent_dirs at tags 0.37.0, 0.41.0, 0.42.0; the 0.41.1 sdist"
)
OVERRIDE_NOCUBLASLT_BUG = VersionRange(
    None, "0.44", "bnb_internals.md §1.4: issue #1312, fixed by #1318", last="0.43.3"
)
#: The SYCL XPU library ships from 0.48.0; from 0.50 one per oneAPI year (libbitsandbytes_xpu2025).
XPU_LIBRARY = VersionRange("0.48", None, "bnb_internals.md §1.1 and §5: libbitsandbytes_xpu from 0.48.0")
XPU_PER_ONEAPI_YEAR = VersionRange("0.50", None, "bnb_internals.md §1.1: get_xpu_bnb_library_path (0.50.0+)")
#: From 0.46 the CUDA libraries also link librt, libpthread and libdl (glibc's, present everywhere).
CUDA_LIBRARY_NEEDS_GLIBC_PARTS = VersionRange(
    "0.46", None, "bnb_internals.md §7: wheels 0.46.1+ NEEDED rt, pthread, dl (0.45.5 and older do not)"
)
#: From 0.49 the CPU library links the GNU OpenMP runtime (libgomp.so.1).
CPU_LIBRARY_NEEDS_OPENMP = VersionRange("0.49", None, "bnb_internals.md §5: the 0.49+ CPU library links libgomp")


@dataclass(frozen=True)
class MislinkedBuilds:
    """Builds of a release series linked against a newer glibc than the wheel tag promises."""

    releases: VersionRange  # the affected series; ``below`` is the release that fixed it
    cuda: tuple[str, ...]  # the CUDA versions of the affected builds
    glibc: str  # the glibc those builds need
    older_torch_cuda: str  # the newest torch CUDA version whose build of the series is fine
    source: str

    def affects(self, library: str) -> bool:
        """Whether a library file name is one of the affected builds (``libbitsandbytes_cuda126.so``)."""
        return any(f"cuda{version.replace('.', '')}" in library for version in self.cuda)


#: 0.45.x cuda126/cuda128 need GLIBC_2.34 (dlopen@GLIBC_2.34) on a manylinux_2_24 wheel; fixed in 0.46.0.
GLIBC_234_BUILDS = MislinkedBuilds(
    VersionRange("0.45", "0.46", "bnb_internals.md §6; issue #1610", last="0.45.x"),
    ("12.6", "12.8"),
    "2.34",
    "12.4",
    "bnb_internals.md §6: wheel 0.45.5; issue #1610 and lora-scripts #694",
)

#: The legacy loader of 0.37-0.41 probes the driver with dlopen("libcuda.so") and, when that fails, says
#: "WARNING: No GPU detected! Check your CUDA paths. Proceeding to load CPU-only library...":
NO_GPU_DETECTED_WARNING = VersionRange(
    "0.37", "0.42", "failure catalog no_gpu_detected_cpu_fallback: the 0.37-0.41 legacy loader", last="0.41"
)
#: Up to 0.49.x the CUDA libraries also link libcusparse; 0.50 dropped it.
CUDA_LIBRARY_NEEDS_CUSPARSE = VersionRange(
    None, "0.50", "bnb_internals.md §1.5: libcusparse.so.N up to 0.49.x, dropped in 0.50", last="0.49"
)
#: The 0.41-0.42 legacy setup wraps a missing CUDA runtime in its own search messages ("libcudart.so not
#: found in any environmental path").
LEGACY_LIBCUDART_SEARCH_MESSAGES = VersionRange(
    "0.41", "0.43", "failure catalog libcudart_not_found_legacy_cuda_setup: 0.41.x-0.42.x", last="0.42"
)
#: Up to 0.42 the legacy loader took the CUDA runtime from /usr/local/cuda or a conda cudatoolkit rather
#: than from torch, so a conda environment could mix two CUDA versions.
LEGACY_SYSTEM_CUDA_RUNTIME = VersionRange(
    None, "0.43", "failure catalog conda_env_vs_system_cuda_mixup: the 0.35-0.42 legacy loader", last="0.42"
)
#: From 0.43 the legacy setup's "directories listed in your path were found to be non-existent" warning
#: shrinks to "The directory listed in your path is found to be non-existent".
SHORT_NONEXISTENT_PATH_WARNING = VersionRange(
    "0.43", None, "failure catalog nonexistent_path_warnings_noise: 0.35-0.42, shorter from 0.43"
)
#: What a CPU-only torch makes each release print (bnb_internals.md §2). "compiled without GPU support" up to
#: 0.46.x (0.47 says "The 8-bit optimizer is not available on your device", 0.48+ nothing):
COMPILED_WITHOUT_GPU_WARNING = VersionRange(
    None, "0.47", "bnb_internals.md §2: 0.37-0.42, 0.43.1-0.45.x, 0.46.x", last="0.46.x"
)
#: 'NoneType' object has no attribute 'split' / 'c…' (lib is None after a failed load) until the 0.46 rework
#: made a failed load an ErrorHandlerMockBNBNativeLibrary:
NONE_LIBRARY_ATTRIBUTE_ERRORS = VersionRange(None, "0.46", "bnb_internals.md §1.3, §2: 0.41-0.45.x", last="0.45.x")


@dataclass(frozen=True)
class ImportCrash:
    """A release bug that makes ``import bitsandbytes`` or its loader fail on some machines, as the
    releases' own code did when run (tests/data/oracle/bnb_loader.json)."""

    releases: VersionRange
    when: str  # the machine condition, in words
    message: str  # what the release raises or logs
    catalog: tuple[str, ...] = ()
    reported_by: str | None = None  # a rule that already names it, when one does


UNPACK_WITHOUT_GPU = ImportCrash(
    CPU_PATH_UNPACK_ERROR, "torch sees no GPU", "ValueError: too many values to unpack (expected 4)"
)
ROCM_TORCH_WITHOUT_CUDA_VERSION = ImportCrash(
    ROCM_TORCH_CUDA_NONE,
    "torch is a ROCm build",
    "'NoneType' object has no attribute 'split'",
    ("torch_version_cuda_none",),
)
IMPORT_CRASHES = (UNPACK_WITHOUT_GPU, ROCM_TORCH_WITHOUT_CUDA_VERSION)


def import_crash(message: str | None) -> ImportCrash | None:
    """The release bug a predicted message is, or None (the message of a missing binary, say)."""
    return next((crash for crash in IMPORT_CRASHES if message == crash.message), None)


#: The legacy CUDA setup's check_cuda_result decoded cuGetErrorString's text unchecked in 0.35.x (a NULL string for a
#: code the driver cannot name raises AttributeError); 0.36.0 checks it and logs "Unknown CUDA exception!" instead.
UNCHECKED_CUDA_ERROR_STRING = VersionRange(
    "0.35.0",
    "0.36.0",
    "bitsandbytes cuda_setup/main.py at tags 0.35.0 and 0.36.0 (commit b3de1921, 'Added error message for unexpected "
    "CUDA exception'); bitsandbytes#86, #457",
    last="0.35.x",
)
#: Commit 4cd63de renamed CUDA_RUNTIME_LIB to CUDA_RUNTIME_LIBS and left four uses of the old name (bitsandbytes#300);
#: the first 0.38.0 wheel shipped it, "Fixing #300" (659a7dfc) shipped in 0.38.0.post1.
CUDA_RUNTIME_LIB_NAMEERROR = VersionRange(
    "0.38.0",
    "0.38.0.post1",
    "bitsandbytes#300; commits 4cd63def and 659a7dfc of cuda_setup/main.py; bitsandbytes#338, #557",
    last="0.38.0",
)
