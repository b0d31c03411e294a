"""Message families: what a recognised log line means.

A :class:`Signature` is a stable id for one family of messages (``cxxabi_version_not_found``,
``dispatch_cpu_disk_valueerror``, ...). It says which failure-catalog entries the message points
at, and what part the message plays in a failure:

- ``root``: the message names a cause (a missing symbol version, an unsupported GPU, ...);
- ``consequence``: the message reports an effect whose cause is usually elsewhere in the log
  ("compiled without GPU support", "'NoneType' object has no attribute ...");
- ``hint``: a warning that may matter but proves nothing alone (duplicate runtimes);
- ``noise``: benign or informational text (non-existent directories, slow int8 path);
- ``fact``: the line carries facts (versions, paths, GPUs) and no failure.

``chain`` groups families that belong to one failure chain (the native-library load, the GPU and
driver, imports, model placement, workflows), so that a consequence can look for its cause in
the same chain. ``specific`` is False for messages that many unrelated failures produce (a CUDA
out-of-memory error), which lowers the confidence of findings resting on them alone.

Each family is declared once, as a module constant named after its id
(``CXXABI_VERSION_NOT_FOUND = _declare("cxxabi_version_not_found", ...)``): collectors record it and
rules read it through that constant, typed :data:`SignatureId`, so a misspelt family is a name error
and mypy rejects a bare string where a family is meant. Ids are public (they appear in
``facts.log.matches``): never rename one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

#: The id of a message family: only the constants of this module are ids (a plain ``str`` is not).
SignatureId = NewType("SignatureId", str)

ROOT, CONSEQUENCE, HINT, NOISE, FACT = "root", "consequence", "hint", "noise", "fact"
#: Sort order of roles when ranking findings (lower first).
ROLE_RANK = {ROOT: 0, CONSEQUENCE: 1, HINT: 2, NOISE: 3, FACT: 4}


@dataclass(frozen=True)
class Signature:
    id: str
    role: str
    chain: str  # loader | driver | gpu | import | placement | workflow | context
    catalog: tuple[str, ...] = ()
    summary: str = ""
    specific: bool = True
    #: Rules that read this family through the facts its lines fill (``load.missing_deps``, ...) rather
    #: than by its id or its catalog entries; the tests refuse a family that no rule reads at all.
    read_by: tuple[str, ...] = ()


#: Every family, by id, in declaration order (the order reports and docs list them in).
SIGNATURES: dict[str, Signature] = {}


def _declare(
    sig_id: str,
    role: str,
    chain: str,
    catalog: tuple[str, ...] = (),
    summary: str = "",
    *,
    specific: bool = True,
    read_by: tuple[str, ...] = (),
) -> SignatureId:
    """Register one message family and return its typed id (the value of its module constant)."""
    if sig_id in SIGNATURES:
        raise ValueError(f"message family {sig_id!r} is declared twice")
    SIGNATURES[sig_id] = Signature(sig_id, role, chain, catalog, summary, specific, read_by)
    return SignatureId(sig_id)


# --- the native-library load chain -------------------------------------------------------
CXXABI_VERSION_NOT_FOUND = _declare(
    "cxxabi_version_not_found",
    ROOT,
    "loader",
    ("cxxabi_not_found",),
    "the C++ runtime lacks a CXXABI_ symbol version the library needs",
)
GLIBCXX_VERSION_NOT_FOUND = _declare(
    "glibcxx_version_not_found",
    ROOT,
    "loader",
    ("glibcxx_not_found",),
    "the C++ runtime lacks a GLIBCXX_/GCC_ symbol version the library needs",
)
GLIBC_VERSION_NOT_FOUND = _declare(
    "glibc_version_not_found",
    ROOT,
    "loader",
    ("glibc_2_34_not_found",),
    "the system glibc lacks a GLIBC_ symbol version the library needs",
)
CUDA_LIBRARY_NOT_FOUND = _declare(
    "cuda_library_not_found",
    ROOT,
    "loader",
    ("cuda_shared_lib_missing_libcusparse",),
    "a CUDA library the bitsandbytes build links against cannot be opened",
)
CUDART_NOT_FOUND = _declare(
    "cudart_not_found",
    ROOT,
    "loader",
    ("cuda_shared_lib_missing_libcusparse", "libcudart_not_found_legacy_cuda_setup"),
    "the CUDA runtime library the bitsandbytes build links against cannot be opened",
)
ROCM_LIBRARY_NOT_FOUND = _declare(
    "rocm_library_not_found",
    ROOT,
    "loader",
    ("rocm_hip_libraries_missing",),
    "a ROCm/HIP library the bitsandbytes build links against cannot be opened",
)
SYSTEM_LIBRARY_NOT_FOUND = _declare(
    "system_library_not_found",
    ROOT,
    "loader",
    (),
    "a system runtime library (OpenMP, C++ runtime) cannot be opened",
    read_by=("BNB316",),
)
BNB_LIBRARY_NOT_FOUND = _declare(
    "bnb_library_not_found",
    ROOT,
    "loader",
    # rocm_version_tag_misparsed: the missing file is a 0.46-0.49 ROCm tag no ROCm has (rocm84 for 7.14)
    ("cuda_binary_missing_for_torch_cuda_version", "rocm_version_tag_misparsed"),
    "the bitsandbytes library for this CUDA/ROCm version is not in the package",
)
ONEAPI_LIBRARY_NOT_FOUND = _declare(
    "oneapi_library_not_found",
    ROOT,
    "loader",
    (),
    "an Intel oneAPI runtime library the XPU library needs cannot be opened",
    read_by=("BNB316",),
)
SYCL_RUNTIME_OTHER_MAJOR = _declare(
    "sycl_runtime_other_major",
    ROOT,
    "loader",
    ("xpu_sycl_runtime_mismatch",),
    "the XPU library needs one SYCL runtime SONAME and the log shows another one present",
)
ROCM_DEVICE_STUB_UNDEFINED = _declare(
    "rocm_device_stub_undefined",
    ROOT,
    "loader",
    ("rocm_lib_undefined_device_stub",),
    "the bitsandbytes ROCm library lacks a kernel's device stub: a preview build without that kernel",
)
BNB_CPU_LIBRARY_NOT_FOUND = _declare(
    "bnb_cpu_library_not_found",
    ROOT,
    "loader",
    ("source_build_native_lib_missing",),
    "not even the CPU library of bitsandbytes exists: nothing was compiled",
)
BNB_NOT_COMPILED = _declare(
    "bnb_not_compiled",
    ROOT,
    "loader",
    ("source_build_native_lib_missing",),
    "bitsandbytes reports that its native library was never compiled",
)
BNB_CUDA_VERSION_OVERRIDE = _declare(
    "bnb_cuda_version_override",
    ROOT,
    "loader",
    ("bnb_cuda_version_override_mismatch",),
    "BNB_CUDA_VERSION / BNB_ROCM_VERSION overrides the library choice",
)
WINDOWS_LINUX_LIBRARY = _declare(
    "windows_linux_library",
    ROOT,
    "loader",
    ("windows_linux_so_loaded",),
    "Windows refused a Linux library ([WinError 193])",
)
WINDOWS_PATH_NOT_ITERABLE = _declare(
    "windows_path_not_iterable",
    ROOT,
    "loader",
    ("windows_path_not_iterable",),
    "the Linux-only legacy loader crashed on a Windows path",
)
WINDOWS_DLL_NOT_LOADED = _declare(
    "windows_dll_not_loaded",
    ROOT,
    "loader",
    ("windows_dll_could_not_find_module",),
    "Windows could not load the bitsandbytes DLL or one of the DLLs it imports",
)
MACOS_NOT_MACHO = _declare(
    "macos_not_macho",
    ROOT,
    "loader",
    ("macos_apple_silicon_no_native_lib",),
    "macOS refused a library that is not a Mach-O file for this architecture",
)
NVJITLINK_UNDEFINED_SYMBOL = _declare(
    "nvjitlink_undefined_symbol",
    ROOT,
    "loader",
    ("nvjitlink_cusparse_symbol_mismatch",),
    "libcusparse found an older libnvJitLink from another CUDA install",
)
FATBINWRAP_UNDEFINED_SYMBOL = _declare(
    "fatbinwrap_undefined_symbol",
    ROOT,
    "loader",
    ("fatbinwrap_undefined_symbol",),
    "the library and the CUDA runtime come from different CUDA versions",
)
CUDA_RUNTIME_SYMBOL_MISSING = _declare(
    "cuda_runtime_symbol_missing",
    ROOT,
    "loader",
    ("conda_env_vs_system_cuda_mixup",),
    "the CUDA runtime found lacks a function bitsandbytes calls (another toolkit's copy)",
)
CPU_LIBRARY_MISSING_SYMBOL = _declare(
    "cpu_library_missing_symbol",
    CONSEQUENCE,
    "loader",
    ("cpu_lib_undefined_symbol_cget_col_row_stats", "compiled_without_gpu_support"),
    "a CUDA-only function was called on the CPU library",
)
LEGACY_LIBCUDART_NOT_FOUND = _declare(
    "legacy_libcudart_not_found",
    ROOT,
    "loader",
    ("libcudart_not_found_legacy_cuda_setup",),
    "the legacy CUDA setup (<= 0.43.0) found no libcudart in the environment's paths",
)
LEGACY_PATH_DID_NOT_CONTAIN = _declare(
    "legacy_path_did_not_contain",
    NOISE,
    "loader",
    ("libcudart_not_found_legacy_cuda_setup",),
    "the legacy CUDA setup searched a folder for libcudart",
)
NONEXISTENT_PATHS = _declare(
    "nonexistent_paths",
    NOISE,
    "loader",
    ("nonexistent_path_warnings_noise",),
    "the legacy CUDA setup listed environment values that are not folders",
)
DUPLICATE_CUDA_RUNTIMES = _declare(
    "duplicate_cuda_runtimes",
    HINT,
    "loader",
    ("duplicate_cuda_runtimes_found",),
    "several CUDA runtime files were found on the searched paths",
)
CUDA_OLDER_THAN_11 = _declare(
    "cuda_older_than_11",
    ROOT,
    "loader",
    ("cuda_lt_11_unsupported",),
    "the CUDA version is 10.x or older, which no bitsandbytes build supports",
)
CPU_LIBRARY_SELECTED = _declare(
    "cpu_library_selected",
    CONSEQUENCE,
    "loader",
    ("compiled_without_gpu_support",),
    "bitsandbytes chose (or fell back to) its CPU library",
)
COMPILED_WITHOUT_GPU_SUPPORT = _declare(
    "compiled_without_gpu_support",
    CONSEQUENCE,
    "loader",
    ("compiled_without_gpu_support",),
    "bitsandbytes warns that the library it loaded has no GPU support",
)
NATIVE_LIBRARY_UNAVAILABLE = _declare(
    "native_library_unavailable",
    CONSEQUENCE,
    "loader",
    ("native_lib_none_attribute_errors",),
    "a native function was called after the library failed to load",
)
CUDA_SETUP_FAILED = _declare(
    "cuda_setup_failed",
    CONSEQUENCE,
    "loader",
    ("cuda_setup_failed_despite_gpu_available",),
    "bitsandbytes' generic 'CUDA setup failed' message",
)
NATIVE_LOAD_ERROR = _declare(
    "native_load_error",
    CONSEQUENCE,
    "loader",
    (),
    "bitsandbytes logged the loader's error while loading its library",
)
TORCH_CUDA_NONE = _declare(
    "torch_cuda_none",
    ROOT,
    "loader",
    ("torch_version_cuda_none",),
    "torch.version.cuda is None: torch is a CPU-only (or ROCm) build",
)
NO_GPU_DETECTED = _declare(
    "no_gpu_detected",
    CONSEQUENCE,
    "driver",
    ("no_gpu_detected_cpu_fallback",),
    "bitsandbytes or torch concluded that there is no usable GPU",
)
LIBCUDA_NOT_FOUND = _declare(
    "libcuda_not_found",
    ROOT,
    "driver",
    ("wsl2_libcuda_not_found", "no_gpu_detected_cpu_fallback"),
    "the NVIDIA driver library libcuda.so cannot be opened",
)
NO_NVIDIA_DRIVER = _declare(
    "no_nvidia_driver",
    ROOT,
    "driver",
    ("no_gpu_detected_cpu_fallback", "cuda_driver_insufficient_for_runtime"),
    "torch found no NVIDIA driver",
)
# --- driver and GPU ----------------------------------------------------------------------
CUDA_DRIVER_INSUFFICIENT = _declare(
    "cuda_driver_insufficient",
    ROOT,
    "driver",
    ("cuda_driver_insufficient_for_runtime",),
    "no NVIDIA driver new enough for the CUDA runtime (CUDA error 35)",
)
DRIVER_TOO_OLD = _declare(
    "driver_too_old",
    ROOT,
    "driver",
    ("nvidia_driver_too_old_for_torch_cuda",),
    "torch reports that the NVIDIA driver is too old for its CUDA version",
)
CUDA_ERROR_803 = _declare(
    "cuda_error_803",
    ROOT,
    "driver",
    ("driver_cuda_combination_unsupported_803",),
    "CUDA error 803: the driver's user-space library does not match the kernel module",
)
TORCH_GPU_INCOMPATIBLE = _declare(
    "torch_gpu_incompatible",
    ROOT,
    "gpu",
    ("torch_build_lacks_gpu_arch",),
    "torch warns that it has no kernels for this GPU's architecture",
)
NO_KERNEL_IMAGE = _declare(
    "no_kernel_image",
    ROOT,
    "gpu",
    ("no_kernel_image_available",),
    "the loaded library has no kernel for this GPU's architecture",
)
HIP_NO_BINARY_FOR_GPU = _declare(
    "hip_no_binary_for_gpu",
    ROOT,
    "gpu",
    ("rocm_hip_libraries_missing", "invalid_device_function"),
    "the ROCm build has no code for this GPU's gfx target",
)
NAMED_SYMBOL_NOT_FOUND = _declare(
    "named_symbol_not_found",
    ROOT,
    "gpu",
    ("named_symbol_not_found",),
    "the CUDA runtime could not resolve a kernel in the loaded library",
)
INVALID_DEVICE_FUNCTION = _declare(
    "invalid_device_function",
    ROOT,
    "gpu",
    ("invalid_device_function",),
    "a kernel is not built for this device or this runtime",
)
GPU_BELOW_MINIMUM_CC = _declare(
    "gpu_below_minimum_cc",
    ROOT,
    "gpu",
    ("kepler_gpu_unsupported", "maxwell_gpu_dropped"),
    "a GPU below compute capability 6.0",
)
MIXED_GPU_GENERATIONS = _declare(
    "mixed_gpu_generations",
    ROOT,
    "gpu",
    ("mixed_gpu_wrong_compute_capability",),
    "GPUs of different generations in one process",
)
INT8_MATMUL_UNSUPPORTED = _declare(
    "int8_matmul_unsupported",
    ROOT,
    "gpu",
    ("int8_matmul_unsupported_cc_lt_75",),
    "LLM.int8() needs int8 tensor cores this GPU lacks",
)
SLOW_INT8_MATMUL = _declare(
    "slow_int8_matmul",
    NOISE,
    "gpu",
    ("slow_int8_matmul_warning_cc_lt_75",),
    "bitsandbytes warns that only the slow 8-bit matmul runs on this GPU",
)
CUDA_SETUP_NAMEERROR = _declare(
    "cuda_setup_nameerror",
    ROOT,
    "gpu",
    ("cuda_setup_nameerror_bnb_0_37",),
    "the bitsandbytes 0.37.0 import crash on GPUs below 7.5",
)
CUBLASLT_ERROR = _declare(
    "cublaslt_error", ROOT, "gpu", ("cublaslt_ran_into_error",), "the cuBLASLt int8 matmul failed"
)
# --- imports -----------------------------------------------------------------------------
TRITON_OPS_MISSING = _declare(
    "triton_ops_missing",
    ROOT,
    "import",
    ("triton_ops_module_missing",),
    "bitsandbytes imports triton.ops, which triton 3.2 removed",
)
SCIPY_MISSING = _declare("scipy_missing", ROOT, "import", ("scipy_missing",), "scipy is not installed")
TORCH_NOT_INSTALLED = _declare("torch_not_installed", ROOT, "import", (), "torch is not installed")
BNB_NOT_INSTALLED = _declare(
    "bnb_not_installed", ROOT, "import", ("bitsandbytes_not_installed",), "bitsandbytes is not installed"
)
STALE_BNB_MODULES = _declare(
    "stale_bnb_modules",
    ROOT,
    "import",
    ("colab_stale_modules_sync_gpu",),
    "a bitsandbytes module imports a name its sibling does not have: old and new files mixed",
)
QUANTIZE_PACKED_WEIGHTS = _declare(
    "quantize_packed_weights",
    CONSEQUENCE,
    "workflow",
    ("known_bad_bnb_release", "blockwise_quant_on_prequantized_weight"),
    "bitsandbytes was asked to quantize integer storage: already quantized weights quantized again",
)
TRANSFORMERS_BNB_MINIMUM = _declare(
    "transformers_bnb_minimum",
    ROOT,
    "import",
    ("transformers_requires_newer_bnb",),
    "transformers 5 refuses a bitsandbytes older than the minimum its message names",
)
BNB_SUBMODULE_MISSING = _declare(
    "bnb_submodule_missing",
    ROOT,
    "import",
    ("mixed_bnb_distributions_stale_files",),
    "a bitsandbytes module imports a sibling module that is not installed: files of two releases",
)
TRANSFORMERS_BNB_IMPORTERROR = _declare(
    "transformers_bnb_importerror",
    CONSEQUENCE,
    "import",
    ("transformers_importerror_requires_accelerate_bnb",),
    "transformers' generic 'requires Accelerate and the latest bitsandbytes' message",
)
# --- model placement ---------------------------------------------------------------------
DISPATCH_CPU_DISK_VALUEERROR = _declare(
    "dispatch_cpu_disk_valueerror",
    ROOT,
    "placement",
    ("dispatch_cpu_disk_valueerror", "dispatch_valueerror_device_map_underpacking"),
    "transformers refuses a quantized model that device_map put partly on the CPU or disk",
)
DISPATCH_MESSAGE_OLD_OPTION = _declare(
    "dispatch_message_old_option",
    HINT,
    "placement",
    ("fp32_cpu_offload_kwarg_typeerror",),
    "the dispatch error names the old option load_in_8bit_fp32_cpu_offload",
)
FP32_OFFLOAD_KWARG_TYPEERROR = _declare(
    "fp32_offload_kwarg_typeerror",
    ROOT,
    "placement",
    ("fp32_cpu_offload_kwarg_typeerror",),
    "BitsAndBytesConfig rejected load_in_8bit_fp32_cpu_offload",
)
CUDA_OUT_OF_MEMORY = _declare(
    "cuda_out_of_memory",
    ROOT,
    "placement",
    ("accelerate_4bit_device_map_imbalance",),
    "CUDA ran out of memory on one GPU",
    specific=False,
)
# --- workflows ---------------------------------------------------------------------------
PEFT_MERGE_QUANTIZED_WARNING = _declare(
    "peft_merge_quantized_warning",
    ROOT,
    "workflow",
    ("peft_merge_lora_into_4bit_rounding_warning",),
    "PEFT merged (or unmerged) LoRA weights into a quantized layer",
)
PEFT_LEGACY_MERGE_ERROR = _declare(
    "peft_legacy_merge_error",
    ROOT,
    "workflow",
    ("peft_merge_in_8bit_mode_valueerror_legacy",),
    "an old PEFT refused to merge LoRA layers into a quantized model",
)
TENSORS_DIFFERENT_DEVICES = _declare(
    "tensors_different_devices",
    ROOT,
    "workflow",
    ("tensors_same_device_after_device_map_auto",),
    "an operation got tensors on two devices",
    specific=False,
)
DATAPARALLEL_REPLICA_ERROR = _declare(
    "dataparallel_replica_error",
    HINT,
    "workflow",
    ("tensors_same_device_after_device_map_auto",),
    "an error raised inside a torch.nn.DataParallel replica",
)
BNB_DEVICE_GUARD = _declare(
    "bnb_device_guard",
    ROOT,
    "workflow",
    ("bnb_tensors_not_on_same_gpu",),
    "bitsandbytes found an input, weight or quant_state tensor off the GPU",
)
# --- k-bit models in transformers, accelerate and FSDP (issue 12) ---------------------------
QUANTIZER_NO_GPU = _declare(
    "quantizer_no_gpu",
    ROOT,
    "driver",
    ("quantizer_no_gpu_found",),
    "transformers' bitsandbytes quantizer found no accelerator it can quantize on",
)
LOAD_IN_KBIT_KWARG_UNSUPPORTED = _declare(
    "load_in_kbit_kwarg_unsupported",
    ROOT,
    "workflow",
    ("transformers_load_in_kbit_kwarg_unsupported",),
    "from_pretrained passed load_in_4bit/load_in_8bit on to a model that does not take it",
)
KBIT_MODEL_MOVED = _declare(
    "kbit_model_moved",
    ROOT,
    "workflow",
    ("kbit_model_to_device_unsupported",),
    "transformers refused .to()/.cuda()/a dtype cast on a 4-bit or 8-bit model",
)
KBIT_MODEL_OTHER_DEVICE = _declare(
    "kbit_model_other_device",
    ROOT,
    "workflow",
    ("accelerate_kbit_model_on_other_device",),
    "accelerate refused to train a k-bit model placed on another device than the process's",
)
FSDP_INTEGER_FLATTEN = _declare(
    "fsdp_integer_flatten",
    ROOT,
    "workflow",
    ("fsdp_kbit_integer_storage",),
    "FSDP cannot flatten the integer storage of quantized weights",
)
COMPUTE_DTYPE_FP32_SLOW = _declare(
    "compute_dtype_fp32_slow",
    NOISE,
    "workflow",
    ("bnb_4bit_compute_dtype_fp32_slow_warning",),
    "bitsandbytes warns that 4-bit layers compute in float32 while the input is 16-bit (slow, correct)",
)
WSL_LDCONFIG_NOT_SYMLINK = _declare(
    "wsl_ldconfig_not_symlink",
    NOISE,
    "driver",
    ("wsl_ldconfig_libcuda_not_symlink_noise",),
    "ldconfig on WSL2 warns that a driver library in /usr/lib/wsl/lib is not a symbolic link (harmless)",
)
# --- an error no family names ----------------------------------------------------------------
UNRECOGNISED_ERROR = _declare(
    "unrecognised_error",
    HINT,
    "context",
    (),
    "an exception line that no known message family names",
)
# --- facts (no failure) ------------------------------------------------------------------
BNB_VERSION = _declare("bnb_version", FACT, "context", (), "the bitsandbytes version")
PACKAGE_VERSION = _declare("package_version", FACT, "context", (), "a package version")
PYTHON_VERSION = _declare("python_version", FACT, "context", (), "the Python version")
TORCH_CUDA_SETTINGS = _declare(
    "torch_cuda_settings", FACT, "context", (), "torch's CUDA version and the highest compute capability"
)
DETECTED_CUDA_VERSION = _declare(
    "detected_cuda_version", FACT, "context", (), "the CUDA version bitsandbytes selects its library by"
)
COMPUTE_CAPABILITY = _declare(
    "compute_capability", FACT, "context", (), "the highest compute capability bitsandbytes saw"
)
CUDA_RUNTIME_PATH = _declare("cuda_runtime_path", FACT, "context", (), "the libcudart the legacy CUDA setup found")
BNB_LIBRARY_SELECTED = _declare("bnb_library_selected", FACT, "context", (), "the native library bitsandbytes chose")
AMD_GPU_UNDER_CUDA = _declare(
    "amd_gpu_under_cuda", FACT, "context", (), "ZLUDA, or an AMD Radeon GPU, named where CUDA code runs"
)
GPU_NAME = _declare("gpu_name", FACT, "context", (), "a GPU name")
NVIDIA_SMI_DRIVER = _declare("nvidia_smi_driver", FACT, "context", (), "the driver and its CUDA version (nvidia-smi)")
PLATFORM = _declare("platform", FACT, "context", (), "the operating system")
BNB_LEGACY_LOADER = _declare("bnb_legacy_loader", FACT, "context", (), "a message of the legacy CUDA setup (<= 0.43.0)")
DEVICE_MAP_ARGUMENT = _declare("device_map_argument", FACT, "context", (), "a device_map argument")
QUANTIZATION_CONFIG = _declare("quantization_config", FACT, "context", (), "a bitsandbytes quantization setting")
MODEL_ID = _declare("model_id", FACT, "context", (), "the model given to from_pretrained")
NOTEBOOK = _declare("notebook", FACT, "context", (), "the log comes from a notebook (Colab/Jupyter)")
# --- families found in real threads (issue 24: tests/data/corpus) --------------------------------
BNB_METADATA_NOT_FOUND = _declare(
    "bnb_metadata_not_found",
    ROOT,
    "import",
    ("bitsandbytes_not_installed",),
    "importlib finds no installed bitsandbytes distribution (transformers, diffusers read its version)",
)
BNB_INSTALL_REQUIRED = _declare(
    "bnb_install_required",
    ROOT,
    "import",
    ("bitsandbytes_not_installed",),
    "a serving engine asks to install bitsandbytes: the import failed or the release is too old",
)
PIP_NO_BNB_WHEEL = _declare(
    "pip_no_bnb_wheel",
    ROOT,
    "import",
    ("bnb_no_wheel_for_platform",),
    "pip finds no bitsandbytes release with a wheel for this platform",
)
BNB_LACKS_4BIT = _declare(
    "bnb_lacks_4bit",
    ROOT,
    "import",
    ("bnb_too_old_for_4bit",),
    "the installed bitsandbytes has no 4-bit layers: a release older than 4-bit quantization",
)
QUANT_STATE_MISSING = _declare(
    "quant_state_missing",
    ROOT,
    "workflow",
    ("weight_4bit_without_quant_state",),
    "a 4-bit weight reached the matmul without its quantization state",
)
PACKED_4BIT_MATMUL = _declare(
    "packed_4bit_matmul",
    ROOT,
    "workflow",
    ("weight_4bit_without_quant_state",),
    "a matmul got a packed 4-bit weight (shape 1xN) as if it were a plain one",
    specific=False,
)
APP_NO_BITSANDBYTES = _declare(
    "app_no_bitsandbytes",
    CONSEQUENCE,
    "import",
    ("app_hides_bnb_import_error",),
    "an application caught the failed import of bitsandbytes and raised its own 'No bitsandbytes'",
)
REMOTE_CODE_BNB_NOT_FOUND = _declare(
    "remote_code_bnb_not_found",
    CONSEQUENCE,
    "import",
    ("app_hides_bnb_import_error",),
    "transformers' import check of a model's remote code reported bitsandbytes as not found",
)
BNB_LACKS_OPTIMIZER = _declare(
    "bnb_lacks_optimizer",
    ROOT,
    "import",
    ("bnb_too_old_for_optimizer",),
    "the installed bitsandbytes lacks the optimizer (or its paged option) the trainer asks for",
)
BNB_KERNEL_ILLEGAL_ACCESS = _declare(
    "bnb_kernel_illegal_access",
    ROOT,
    "gpu",
    ("illegal_memory_access_in_kernel",),
    "a bitsandbytes kernel reports an illegal memory access",
)
CUDA_ILLEGAL_ACCESS = _declare(
    "cuda_illegal_access",
    ROOT,
    "gpu",
    ("illegal_memory_access_in_kernel",),
    "a CUDA call reports an illegal memory access (the kernel that caused it ran earlier)",
    specific=False,
)
KBIT_KWARG_WITH_CONFIG = _declare(
    "kbit_kwarg_with_config",
    ROOT,
    "workflow",
    ("load_in_kbit_kwarg_with_quantization_config",),
    "from_pretrained got load_in_4bit/load_in_8bit and a quantization_config together",
)
SAVE_4BIT_UNSUPPORTED = _declare(
    "save_4bit_unsupported",
    ROOT,
    "workflow",
    ("save_pretrained_4bit_unsupported",),
    "transformers refuses to save a 4-bit model (a release before 4-bit serialization)",
)
PARAMS4BIT_NO_QUANT_STORAGE = _declare(
    "params4bit_no_quant_storage",
    ROOT,
    "import",
    ("params4bit_lacks_quant_storage_old_bnb",),
    "a Params4bit (subclass) has no quant_storage: a bitsandbytes older than the loader expects",
)
VLLM_BNB_PARALLELISM = _declare(
    "vllm_bnb_parallelism",
    ROOT,
    "workflow",
    ("vllm_bnb_parallelism_unsupported",),
    "vLLM refuses a bitsandbytes model with tensor or pipeline parallelism",
)
TRAINER_8BIT_NEEDS_BNB = _declare(
    "trainer_8bit_needs_bnb",
    ROOT,
    "workflow",
    ("trainer_8bit_requires_bnb",),
    "transformers' Trainer refuses an 8-bit model: it finds no usable bitsandbytes of the release it needs",
)
INT_PARAMS_REQUIRE_GRAD = _declare(
    "int_params_require_grad",
    ROOT,
    "workflow",
    ("int8_params_require_grad",),
    "an integer (quantized) tensor was made to require gradients",
    specific=False,
)
INT8_WEIGHT_DTYPE_MISMATCH = _declare(
    "int8_weight_dtype_mismatch",
    ROOT,
    "workflow",
    ("dtype_mismatch_with_8bit_model",),
    "a matmul got an int8 weight next to a float input: code that bypasses Linear8bitLt",
)
MATMUL_DTYPE_MISMATCH = _declare(
    "matmul_dtype_mismatch",
    CONSEQUENCE,
    "workflow",
    ("dtype_mismatch_with_8bit_model",),
    "a matmul got operands of two dtypes (an 8-bit weight when the log loads the model in 8-bit)",
    specific=False,
)
FINETUNE_PURELY_QUANTIZED = _declare(
    "finetune_purely_quantized",
    ROOT,
    "workflow",
    ("finetune_purely_quantized_model",),
    "transformers' Trainer refuses a quantized model without trainable adapters",
)
BNB_KERNEL_INVALID_CONFIGURATION = _declare(
    "bnb_kernel_invalid_configuration",
    ROOT,
    "gpu",
    ("kernel_invalid_configuration_argument",),
    "a bitsandbytes kernel was launched with an invalid grid (a tensor of a shape or layout it does not take)",
)
BNB_MODULE_ATTRIBUTE_MISSING = _declare(
    "bnb_module_attribute_missing",
    ROOT,
    "import",
    ("bnb_import_incomplete_missing_submodule",),
    "the bitsandbytes module has no nn/optim: its import failed half-way or another folder shadows it",
)
PEFT_BNB_API_MISMATCH = _declare(
    "peft_bnb_api_mismatch",
    ROOT,
    "workflow",
    ("peft_bnb_api_mismatch",),
    "peft's LoRA layers and the quantized layers of transformers/bitsandbytes disagree on their API",
)
VLLM_BNB_LOAD_FORMAT_MISMATCH = _declare(
    "vllm_bnb_load_format_mismatch",
    ROOT,
    "workflow",
    ("vllm_bnb_load_format_mismatch",),
    "vLLM was given the bitsandbytes quantization without the bitsandbytes load format, or the other way round",
)
VLLM_MODEL_LACKS_BNB = _declare(
    "vllm_model_lacks_bnb_support",
    ROOT,
    "workflow",
    ("vllm_model_lacks_bnb_support",),
    "this vLLM cannot load the model class with bitsandbytes quantization",
)
TRANSFORMERS_LACKS_BNB_CONFIG = _declare(
    "transformers_too_old_for_bnb_config",
    ROOT,
    "workflow",
    ("transformers_too_old_for_bnb_config",),
    "the transformers that runs is older than its BitsAndBytesConfig class",
)
TRANSFORMERS_TORCH_UNAVAILABLE = _declare(
    "transformers_torch_unavailable",
    ROOT,
    "workflow",
    ("transformers_torch_unavailable",),
    "transformers found no torch it accepts: torch is missing from that Python or older than this transformers allows",
)
DEVICE_MAP_NEEDS_ACCELERATE = _declare(
    "device_map_requires_accelerate",
    ROOT,
    "workflow",
    ("device_map_requires_accelerate",),
    "a device_map (or low_cpu_mem_usage) without an accelerate transformers accepts in the Python that runs",
)
STATE_DICT_STR_NUMEL = _declare(
    "kbit_save_pretrained_str_numel",
    ROOT,
    "workflow",
    ("kbit_save_pretrained_str_numel",),
    "saving a model whose state dict holds a string (the 8-bit weight_format) where transformers sizes tensors",
)
FORGE_PARAMS4BIT_NO_MODULE = _declare(
    "comfy_nf4_node_incompatible",
    ROOT,
    "workflow",
    ("comfy_nf4_node_incompatible",),
    "the ComfyUI NF4 node's ForgeParams4bit lacks the module attribute its .to() reads",
)
META_DEVICE_WEIGHT_NEEDS_VALUE = _declare(
    "meta_device_weight_needs_value",
    ROOT,
    "workflow",
    ("meta_device_weight_needs_value",),
    "accelerate found a weight still on the meta device (never loaded) when placing the model",
)
PAGED_OPTIMIZER_INVALID_ARGUMENT = _declare(
    "paged_optimizer_invalid_argument",
    ROOT,
    "workflow",
    ("paged_optimizer_invalid_argument",),
    "a paged optimizer's prefetch of its state was refused as an invalid argument",
)
MERGE_INTO_QUANTIZED_REFUSED = _declare(
    "merge_into_quantized_refused",
    ROOT,
    "workflow",
    ("merge_adapters_into_quantized_base_refused",),
    "LLaMA-Factory refused to merge LoRA adapters into a quantized base model",
)
PACKED_4BIT_WEIGHT_AS_TENSOR = _declare(
    "packed_4bit_weight_as_tensor",
    ROOT,
    "workflow",
    ("packed_4bit_weight_used_as_tensor",),
    "a 4-bit weight (packed uint8, 'Byte') met a float tensor in code that uses it as a plain tensor",
)
UINT8_INPUT_TYPE_MISMATCH = _declare(
    "uint8_input_type_mismatch",
    HINT,
    "workflow",
    ("packed_4bit_weight_used_as_tensor",),
    "torch's 'Input type (ByteTensor) and weight type': a 4-bit weight's dtype under a 4-bit load, or a raw image",
)
KBIT_LOAD_CONTEXT = _declare(
    "kbit_load_context", FACT, "context", (), "the log shows a 4-bit or 8-bit bitsandbytes load being asked for"
)
BNB_CHECKPOINT_TO_GGUF = _declare(
    "bnb_checkpoint_to_gguf",
    ROOT,
    "workflow",
    ("bnb_checkpoint_gguf_conversion_unsupported",),
    "a bitsandbytes-quantized checkpoint given to a GGUF converter (llama.cpp, Ollama)",
)
LEGACY_SETUP_PERMISSION_ERROR = _declare(
    "legacy_setup_permission_error",
    ROOT,
    "loader",
    ("legacy_cuda_setup_path_permission_error",),
    "the legacy CUDA setup raised PermissionError on a folder an environment variable names",
)
VLLM_BNB_MINIMUM = _declare(
    "vllm_bnb_minimum",
    ROOT,
    "import",
    ("vllm_bnb_missing_or_below_minimum",),
    "vLLM's bitsandbytes quantizer found bitsandbytes missing or older than the minimum it names",
)
TRITON_NO_C_COMPILER = _declare(
    "triton_no_c_compiler",
    ROOT,
    "import",
    ("triton_c_compiler_missing",),
    "Triton found no C compiler to build its driver module or a kernel",
)
QUANTIZER_BUFFER_KEYERROR = _declare(
    "quantizer_buffer_keyerror",
    ROOT,
    "workflow",
    ("quantizer_buffer_keyerror",),
    "transformers 4.38's bitsandbytes quantizer looked a checkpoint buffer (inv_freq) up among parameters",
)

# --- families found in the development corpus (issue 24, item 3) --------------------------
LEGACY_SETUP_NONETYPE_DECODE = _declare(
    "legacy_setup_nonetype_decode",
    ROOT,
    "loader",
    ("legacy_setup_nonetype_decode",),
    "bitsandbytes' legacy CUDA setup crashed printing a CUDA error it could not name",
)
LEGACY_SETUP_NAMEERROR_CUDA_RUNTIME_LIB = _declare(
    "legacy_setup_nameerror_cuda_runtime_lib",
    ROOT,
    "loader",
    ("legacy_setup_nameerror_cuda_runtime_lib",),
    "bitsandbytes 0.38.0's CUDA setup names a constant it no longer has (CUDA_RUNTIME_LIB)",
)
ROCM_HIP_VERSION_READ_AS_CUDA = _declare(
    "rocm_hip_version_read_as_cuda",
    ROOT,
    "loader",
    ("rocm_hip_version_read_as_cuda",),
    "on ROCm, bitsandbytes took the HIP version (6.x) for a CUDA version",
)
ROCM_BLOCKSIZE_64_UNSUPPORTED = _declare(
    "rocm_blocksize_64_unsupported",
    ROOT,
    "gpu",
    ("rocm_blocksize_64_unsupported",),
    "bitsandbytes' ROCm kernels refuse the 4-bit blocksize 64",
)
PAGED_OPTIMIZER_OPERATION_NOT_SUPPORTED = _declare(
    "paged_optimizer_operation_not_supported",
    ROOT,
    "gpu",
    ("paged_optimizer_operation_not_supported",),
    "the GPU environment has no CUDA managed memory for a paged optimizer",
)
PARAMS4BIT_DEGRADED_TO_PARAMETER = _declare(
    "params4bit_degraded_to_parameter",
    ROOT,
    "workflow",
    ("params4bit_degraded_to_parameter",),
    "a Linear4bit's weight is a plain Parameter/DTensor, not a bitsandbytes Params4bit",
)
BNB_MULTIBACKEND_PREVIEW_TRANSFORMERS_MISMATCH = _declare(
    "bnb_multibackend_preview_transformers_mismatch",
    ROOT,
    "workflow",
    ("bnb_multibackend_preview_transformers_mismatch",),
    "transformers' multi-backend check calls discard() on bitsandbytes' frozenset of devices",
)


def signature(sig_id: str) -> Signature:
    return SIGNATURES[sig_id]


def catalog_ids(sig_ids: set[str] | list[str]) -> set[str]:
    """Every catalog id the given signatures point at."""
    out: set[str] = set()
    for sig_id in sig_ids:
        sig = SIGNATURES.get(sig_id)
        if sig:
            out.update(sig.catalog)
    return out
