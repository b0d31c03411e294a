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

Ids are public (they appear in ``facts.log.matches``): never rename one.
"""

from __future__ import annotations

from dataclasses import dataclass

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


_ALL = (
    # --- the native-library load chain -------------------------------------------------------
    Signature(
        "cxxabi_version_not_found",
        ROOT,
        "loader",
        ("cxxabi_not_found",),
        "the C++ runtime lacks a CXXABI_ symbol version the library needs",
    ),
    Signature(
        "glibcxx_version_not_found",
        ROOT,
        "loader",
        ("glibcxx_not_found",),
        "the C++ runtime lacks a GLIBCXX_/GCC_ symbol version the library needs",
    ),
    Signature(
        "glibc_version_not_found",
        ROOT,
        "loader",
        ("glibc_2_34_not_found",),
        "the system glibc lacks a GLIBC_ symbol version the library needs",
    ),
    Signature(
        "cuda_library_not_found",
        ROOT,
        "loader",
        ("cuda_shared_lib_missing_libcusparse",),
        "a CUDA library the bitsandbytes build links against cannot be opened",
    ),
    Signature(
        "cudart_not_found",
        ROOT,
        "loader",
        ("cuda_shared_lib_missing_libcusparse", "libcudart_not_found_legacy_cuda_setup"),
        "the CUDA runtime library the bitsandbytes build links against cannot be opened",
    ),
    Signature(
        "rocm_library_not_found",
        ROOT,
        "loader",
        ("rocm_hip_libraries_missing",),
        "a ROCm/HIP library the bitsandbytes build links against cannot be opened",
    ),
    Signature(
        "system_library_not_found",
        ROOT,
        "loader",
        (),
        "a system runtime library (OpenMP, C++ runtime) cannot be opened",
    ),
    Signature(
        "bnb_library_not_found",
        ROOT,
        "loader",
        # rocm_version_tag_misparsed: the missing file is a 0.46-0.49 ROCm tag no ROCm has (rocm84 for 7.14)
        ("cuda_binary_missing_for_torch_cuda_version", "rocm_version_tag_misparsed"),
        "the bitsandbytes library for this CUDA/ROCm version is not in the package",
    ),
    Signature(
        "oneapi_library_not_found",
        ROOT,
        "loader",
        (),
        "an Intel oneAPI runtime library the XPU library needs cannot be opened",
    ),
    Signature(
        "sycl_runtime_other_major",
        ROOT,
        "loader",
        ("xpu_sycl_runtime_mismatch",),
        "the XPU library needs one SYCL runtime SONAME and the log shows another one present",
    ),
    Signature(
        "rocm_device_stub_undefined",
        ROOT,
        "loader",
        ("rocm_lib_undefined_device_stub",),
        "the bitsandbytes ROCm library lacks a kernel's device stub: a preview build without that kernel",
    ),
    Signature(
        "bnb_cpu_library_not_found",
        ROOT,
        "loader",
        ("source_build_native_lib_missing",),
        "not even the CPU library of bitsandbytes exists: nothing was compiled",
    ),
    Signature(
        "bnb_not_compiled",
        ROOT,
        "loader",
        ("source_build_native_lib_missing",),
        "bitsandbytes reports that its native library was never compiled",
    ),
    Signature(
        "bnb_cuda_version_override",
        ROOT,
        "loader",
        ("bnb_cuda_version_override_mismatch",),
        "BNB_CUDA_VERSION / BNB_ROCM_VERSION overrides the library choice",
    ),
    Signature(
        "windows_linux_library",
        ROOT,
        "loader",
        ("windows_linux_so_loaded",),
        "Windows refused a Linux library ([WinError 193])",
    ),
    Signature(
        "windows_path_not_iterable",
        ROOT,
        "loader",
        ("windows_path_not_iterable",),
        "the Linux-only legacy loader crashed on a Windows path",
    ),
    Signature(
        "windows_dll_not_loaded",
        ROOT,
        "loader",
        ("windows_dll_could_not_find_module",),
        "Windows could not load the bitsandbytes DLL or one of the DLLs it imports",
    ),
    Signature(
        "macos_not_macho",
        ROOT,
        "loader",
        ("macos_apple_silicon_no_native_lib",),
        "macOS refused a library that is not a Mach-O file for this architecture",
    ),
    Signature(
        "nvjitlink_undefined_symbol",
        ROOT,
        "loader",
        ("nvjitlink_cusparse_symbol_mismatch",),
        "libcusparse found an older libnvJitLink from another CUDA install",
    ),
    Signature(
        "fatbinwrap_undefined_symbol",
        ROOT,
        "loader",
        ("fatbinwrap_undefined_symbol",),
        "the library and the CUDA runtime come from different CUDA versions",
    ),
    Signature(
        "cuda_runtime_symbol_missing",
        ROOT,
        "loader",
        ("conda_env_vs_system_cuda_mixup",),
        "the CUDA runtime found lacks a function bitsandbytes calls (another toolkit's copy)",
    ),
    Signature(
        "cpu_library_missing_symbol",
        CONSEQUENCE,
        "loader",
        ("cpu_lib_undefined_symbol_cget_col_row_stats", "compiled_without_gpu_support"),
        "a CUDA-only function was called on the CPU library",
    ),
    Signature(
        "legacy_libcudart_not_found",
        ROOT,
        "loader",
        ("libcudart_not_found_legacy_cuda_setup",),
        "the legacy CUDA setup (<= 0.43.0) found no libcudart in the environment's paths",
    ),
    Signature(
        "legacy_path_did_not_contain",
        NOISE,
        "loader",
        ("libcudart_not_found_legacy_cuda_setup",),
        "the legacy CUDA setup searched a folder for libcudart",
    ),
    Signature(
        "nonexistent_paths",
        NOISE,
        "loader",
        ("nonexistent_path_warnings_noise",),
        "the legacy CUDA setup listed environment values that are not folders",
    ),
    Signature(
        "duplicate_cuda_runtimes",
        HINT,
        "loader",
        ("duplicate_cuda_runtimes_found",),
        "several CUDA runtime files were found on the searched paths",
    ),
    Signature(
        "cuda_older_than_11",
        ROOT,
        "loader",
        ("cuda_lt_11_unsupported",),
        "the CUDA version is 10.x or older, which no bitsandbytes build supports",
    ),
    Signature(
        "cpu_library_selected",
        CONSEQUENCE,
        "loader",
        ("compiled_without_gpu_support",),
        "bitsandbytes chose (or fell back to) its CPU library",
    ),
    Signature(
        "compiled_without_gpu_support",
        CONSEQUENCE,
        "loader",
        ("compiled_without_gpu_support",),
        "bitsandbytes warns that the library it loaded has no GPU support",
    ),
    Signature(
        "native_library_unavailable",
        CONSEQUENCE,
        "loader",
        ("native_lib_none_attribute_errors",),
        "a native function was called after the library failed to load",
    ),
    Signature(
        "cuda_setup_failed",
        CONSEQUENCE,
        "loader",
        ("cuda_setup_failed_despite_gpu_available",),
        "bitsandbytes' generic 'CUDA setup failed' message",
    ),
    Signature(
        "native_load_error",
        CONSEQUENCE,
        "loader",
        (),
        "bitsandbytes logged the loader's error while loading its library",
    ),
    Signature(
        "torch_cuda_none",
        ROOT,
        "loader",
        ("torch_version_cuda_none",),
        "torch.version.cuda is None: torch is a CPU-only (or ROCm) build",
    ),
    Signature(
        "no_gpu_detected",
        CONSEQUENCE,
        "driver",
        ("no_gpu_detected_cpu_fallback",),
        "bitsandbytes or torch concluded that there is no usable GPU",
    ),
    Signature(
        "libcuda_not_found",
        ROOT,
        "driver",
        ("wsl2_libcuda_not_found", "no_gpu_detected_cpu_fallback"),
        "the NVIDIA driver library libcuda.so cannot be opened",
    ),
    Signature(
        "no_nvidia_driver",
        ROOT,
        "driver",
        ("no_gpu_detected_cpu_fallback", "cuda_driver_insufficient_for_runtime"),
        "torch found no NVIDIA driver",
    ),
    # --- driver and GPU ----------------------------------------------------------------------
    Signature(
        "cuda_driver_insufficient",
        ROOT,
        "driver",
        ("cuda_driver_insufficient_for_runtime",),
        "no NVIDIA driver new enough for the CUDA runtime (CUDA error 35)",
    ),
    Signature(
        "driver_too_old",
        ROOT,
        "driver",
        ("nvidia_driver_too_old_for_torch_cuda",),
        "torch reports that the NVIDIA driver is too old for its CUDA version",
    ),
    Signature(
        "cuda_error_803",
        ROOT,
        "driver",
        ("driver_cuda_combination_unsupported_803",),
        "CUDA error 803: the driver's user-space library does not match the kernel module",
    ),
    Signature(
        "torch_gpu_incompatible",
        ROOT,
        "gpu",
        ("torch_build_lacks_gpu_arch",),
        "torch warns that it has no kernels for this GPU's architecture",
    ),
    Signature(
        "no_kernel_image",
        ROOT,
        "gpu",
        ("no_kernel_image_available",),
        "the loaded library has no kernel for this GPU's architecture",
    ),
    Signature(
        "hip_no_binary_for_gpu",
        ROOT,
        "gpu",
        ("rocm_hip_libraries_missing", "invalid_device_function"),
        "the ROCm build has no code for this GPU's gfx target",
    ),
    Signature(
        "named_symbol_not_found",
        ROOT,
        "gpu",
        ("named_symbol_not_found",),
        "the CUDA runtime could not resolve a kernel in the loaded library",
    ),
    Signature(
        "invalid_device_function",
        ROOT,
        "gpu",
        ("invalid_device_function",),
        "a kernel is not built for this device or this runtime",
    ),
    Signature(
        "gpu_below_minimum_cc",
        ROOT,
        "gpu",
        ("kepler_gpu_unsupported", "maxwell_gpu_dropped"),
        "a GPU below compute capability 6.0",
    ),
    Signature(
        "mixed_gpu_generations",
        ROOT,
        "gpu",
        ("mixed_gpu_wrong_compute_capability",),
        "GPUs of different generations in one process",
    ),
    Signature(
        "int8_matmul_unsupported",
        ROOT,
        "gpu",
        ("int8_matmul_unsupported_cc_lt_75",),
        "LLM.int8() needs int8 tensor cores this GPU lacks",
    ),
    Signature(
        "slow_int8_matmul",
        NOISE,
        "gpu",
        ("slow_int8_matmul_warning_cc_lt_75",),
        "bitsandbytes warns that only the slow 8-bit matmul runs on this GPU",
    ),
    Signature(
        "cuda_setup_nameerror",
        ROOT,
        "gpu",
        ("cuda_setup_nameerror_bnb_0_37",),
        "the bitsandbytes 0.37.0 import crash on GPUs below 7.5",
    ),
    Signature("cublaslt_error", ROOT, "gpu", ("cublaslt_ran_into_error",), "the cuBLASLt int8 matmul failed"),
    # --- imports -----------------------------------------------------------------------------
    Signature(
        "triton_ops_missing",
        ROOT,
        "import",
        ("triton_ops_module_missing",),
        "bitsandbytes imports triton.ops, which triton 3.2 removed",
    ),
    Signature("scipy_missing", ROOT, "import", ("scipy_missing",), "scipy is not installed"),
    Signature("torch_not_installed", ROOT, "import", (), "torch is not installed"),
    Signature("bnb_not_installed", ROOT, "import", (), "bitsandbytes is not installed"),
    Signature(
        "stale_bnb_modules",
        ROOT,
        "import",
        ("colab_stale_modules_sync_gpu",),
        "a bitsandbytes module imports a name its sibling does not have: old and new files mixed",
    ),
    Signature(
        "quantize_packed_weights",
        CONSEQUENCE,
        "workflow",
        ("known_bad_bnb_release",),
        "bitsandbytes was asked to quantize integer storage: already quantized weights quantized again",
    ),
    Signature(
        "transformers_bnb_minimum",
        ROOT,
        "import",
        ("transformers_requires_newer_bnb",),
        "transformers 5 refuses a bitsandbytes older than the minimum its message names",
    ),
    Signature(
        "bnb_submodule_missing",
        ROOT,
        "import",
        ("mixed_bnb_distributions_stale_files",),
        "a bitsandbytes module imports a sibling module that is not installed: files of two releases",
    ),
    Signature(
        "transformers_bnb_importerror",
        CONSEQUENCE,
        "import",
        ("transformers_importerror_requires_accelerate_bnb",),
        "transformers' generic 'requires Accelerate and the latest bitsandbytes' message",
    ),
    # --- model placement ---------------------------------------------------------------------
    Signature(
        "dispatch_cpu_disk_valueerror",
        ROOT,
        "placement",
        ("dispatch_cpu_disk_valueerror", "dispatch_valueerror_device_map_underpacking"),
        "transformers refuses a quantized model that device_map put partly on the CPU or disk",
    ),
    Signature(
        "dispatch_message_old_option",
        HINT,
        "placement",
        ("fp32_cpu_offload_kwarg_typeerror",),
        "the dispatch error names the old option load_in_8bit_fp32_cpu_offload",
    ),
    Signature(
        "fp32_offload_kwarg_typeerror",
        ROOT,
        "placement",
        ("fp32_cpu_offload_kwarg_typeerror",),
        "BitsAndBytesConfig rejected load_in_8bit_fp32_cpu_offload",
    ),
    Signature(
        "cuda_out_of_memory",
        ROOT,
        "placement",
        ("accelerate_4bit_device_map_imbalance",),
        "CUDA ran out of memory on one GPU",
        specific=False,
    ),
    # --- workflows ---------------------------------------------------------------------------
    Signature(
        "peft_merge_quantized_warning",
        ROOT,
        "workflow",
        ("peft_merge_lora_into_4bit_rounding_warning",),
        "PEFT merged (or unmerged) LoRA weights into a quantized layer",
    ),
    Signature(
        "peft_legacy_merge_error",
        ROOT,
        "workflow",
        ("peft_merge_in_8bit_mode_valueerror_legacy",),
        "an old PEFT refused to merge LoRA layers into a quantized model",
    ),
    Signature(
        "tensors_different_devices",
        ROOT,
        "workflow",
        ("tensors_same_device_after_device_map_auto",),
        "an operation got tensors on two devices",
        specific=False,
    ),
    Signature(
        "dataparallel_replica_error",
        HINT,
        "workflow",
        ("tensors_same_device_after_device_map_auto",),
        "an error raised inside a torch.nn.DataParallel replica",
    ),
    Signature(
        "bnb_device_guard",
        ROOT,
        "workflow",
        ("bnb_tensors_not_on_same_gpu",),
        "bitsandbytes found an input, weight or quant_state tensor off the GPU",
    ),
    # --- k-bit models in transformers, accelerate and FSDP (issue 12) ---------------------------
    Signature(
        "quantizer_no_gpu",
        ROOT,
        "driver",
        ("quantizer_no_gpu_found",),
        "transformers' bitsandbytes quantizer found no accelerator it can quantize on",
    ),
    Signature(
        "load_in_kbit_kwarg_unsupported",
        ROOT,
        "workflow",
        ("transformers_load_in_kbit_kwarg_unsupported",),
        "from_pretrained passed load_in_4bit/load_in_8bit on to a model that does not take it",
    ),
    Signature(
        "kbit_model_moved",
        ROOT,
        "workflow",
        ("kbit_model_to_device_unsupported",),
        "transformers refused .to()/.cuda()/a dtype cast on a 4-bit or 8-bit model",
    ),
    Signature(
        "kbit_model_other_device",
        ROOT,
        "workflow",
        ("accelerate_kbit_model_on_other_device",),
        "accelerate refused to train a k-bit model placed on another device than the process's",
    ),
    Signature(
        "fsdp_integer_flatten",
        ROOT,
        "workflow",
        ("fsdp_kbit_integer_storage",),
        "FSDP cannot flatten the integer storage of quantized weights",
    ),
    Signature(
        "compute_dtype_fp32_slow",
        NOISE,
        "workflow",
        ("bnb_4bit_compute_dtype_fp32_slow_warning",),
        "bitsandbytes warns that 4-bit layers compute in float32 while the input is 16-bit (slow, correct)",
    ),
    Signature(
        "wsl_ldconfig_not_symlink",
        NOISE,
        "driver",
        ("wsl_ldconfig_libcuda_not_symlink_noise",),
        "ldconfig on WSL2 warns that a driver library in /usr/lib/wsl/lib is not a symbolic link (harmless)",
    ),
    # --- an error no family names ----------------------------------------------------------------
    Signature(
        "unrecognised_error",
        HINT,
        "context",
        (),
        "an exception line that no known message family names",
    ),
    # --- facts (no failure) ------------------------------------------------------------------
    Signature("bnb_version", FACT, "context", (), "the bitsandbytes version"),
    Signature("package_version", FACT, "context", (), "a package version"),
    Signature("python_version", FACT, "context", (), "the Python version"),
    Signature("torch_cuda_settings", FACT, "context", (), "torch's CUDA version and the highest compute capability"),
    Signature("detected_cuda_version", FACT, "context", (), "the CUDA version bitsandbytes selects its library by"),
    Signature("compute_capability", FACT, "context", (), "the highest compute capability bitsandbytes saw"),
    Signature("cuda_runtime_path", FACT, "context", (), "the libcudart the legacy CUDA setup found"),
    Signature("bnb_library_selected", FACT, "context", (), "the native library bitsandbytes chose"),
    Signature("gpu_name", FACT, "context", (), "a GPU name"),
    Signature("nvidia_smi_driver", FACT, "context", (), "the driver and its CUDA version (nvidia-smi)"),
    Signature("platform", FACT, "context", (), "the operating system"),
    Signature("bnb_legacy_loader", FACT, "context", (), "a message of the legacy CUDA setup (<= 0.43.0)"),
    Signature("device_map_argument", FACT, "context", (), "a device_map argument"),
    Signature("quantization_config", FACT, "context", (), "a bitsandbytes quantization setting"),
    Signature("model_id", FACT, "context", (), "the model given to from_pretrained"),
    Signature("notebook", FACT, "context", (), "the log comes from a notebook (Colab/Jupyter)"),
)

SIGNATURES: dict[str, Signature] = {s.id: s for s in _ALL}


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
