"""The NVIDIA driver, CUDA's errors and the kernels: what torch, CUDA and bitsandbytes report
when the GPU cannot be used or a kernel cannot run on it.

Fills ``gpu`` evidence (the driver version and its CUDA version from ``nvidia-smi`` or torch's
"driver too old" message; "no NVIDIA driver") and marks a CPU-only torch. Kernel errors are told
apart by their text (no kernel image, named symbol not found, invalid device function, error 803).
"""

from __future__ import annotations

import re

from bnbdoctor.knowledge import signatures as S
from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import MAX_TEXT, LogState

COLLECTOR = Collector("driver and kernels")
collects = COLLECTOR.collects
recognises = COLLECTOR.recognises


@collects(
    ("GPU detected", "libcuda.so not found", "CUDA is not available", "Unknown CUDA exception"),
    r"No GPU detected!|WARNING! libcuda\.so not found!|(?:Py)?[Tt]orch says CUDA is not available"
    # the legacy loader's cuInit() failed without an error string (0.37-0.38): it goes on as if there were no GPU
    r"|Unknown CUDA exception! Please check your CUDA install",
    records=S.NO_GPU_DETECTED,
)
def no_gpu_detected(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "libcuda.so not found" in line:
        state.match(S.LIBCUDA_NOT_FOUND, number, line)


@collects("Found no NVIDIA driver", r"Found no NVIDIA driver on your system")
def no_nvidia_driver(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.gpu.no_driver = line.strip()[:MAX_TEXT]
    state.match(S.NO_NVIDIA_DRIVER, number, line)


@collects(
    ("CUDA enabled", "bitsandbytes_cudaNone"),
    r"Torch not compiled with CUDA enabled|libbitsandbytes_cudaNone",
)
def torch_not_compiled(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.torch.cpu = True
    state.match(S.TORCH_CUDA_NONE, number, line)


@collects(
    ("Error", "CUDA error", "CUDA exception"),
    r"Error (?P<what>[^\n]{1,200}?) at line (?P<line>\d{1,6}) in file (?P<file>\S{0,500}?ops\.(?:cu|hip|cpp))",
    r"CUDA error: (?P<what>[A-Za-z][^.`\n]{1,200})",
    r"CUDA exception! Error code: (?P<what>.{1,200})",
    r"Error (?P<code>803): (?P<what>.{1,200})",
    r"(?P<what>hipErrorNoBinaryForGpu)",
)
def cuda_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    if "If you get" in line or "errors, the above" in line:
        return  # bitsandbytes' advice text quotes the error it warns about
    what = (m.groupdict().get("what") or "").lower()
    code = m.groupdict().get("code")
    if "no kernel image" in what:
        signature = S.NO_KERNEL_IMAGE
    elif "named symbol not found" in what:
        signature = S.NAMED_SYMBOL_NOT_FOUND
    elif "invalid device function" in what:
        signature = S.INVALID_DEVICE_FUNCTION
    elif "driver version is insufficient" in what:
        signature = S.CUDA_DRIVER_INSUFFICIENT
    elif "unsupported display driver" in what or code == "803":
        signature = S.CUDA_ERROR_803
    elif "hiperrornobinaryforgpu" in what:
        signature = S.HIP_NO_BINARY_FOR_GPU
    elif "out of memory" in what:
        signature = S.CUDA_OUT_OF_MEMORY
    else:
        return
    state.match(signature, number, line)
    file = m.groupdict().get("file") or ""
    if file.endswith(".hip"):
        state.torch.hip = state.torch.hip or ""


@collects(
    "NVIDIA driver on your system",
    r"The NVIDIA driver on your system is too old \(found version (?P<version>\d{3,6})\)",
)
def driver_too_old(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    found = m.group("version")
    state.gpu.driver_cuda = f"{int(found) // 1000}.{int(found) % 1000 // 10}"
    state.match(S.DRIVER_TOO_OLD, number, line)


recognises(
    S.INT8_MATMUL_UNSUPPORTED,
    ("GPU does not support", "igemmlt"),
    r"Your GPU does not support Int8 Matmul|int igemmlt\(.{0,400}?Assertion",
)


recognises(S.SLOW_INT8_MATMUL, "8-bit matmul", r"Only slow 8-bit matmul is supported for your GPU", bnb=True)


recognises(S.CUDA_SETUP_NAMEERROR, "cuda_setup", r"name 'cuda_setup' is not defined", bnb=True)


recognises(
    S.CUBLASLT_ERROR,
    ("into an error", "cuBLAS API"),
    r"cublasLt ran into an error|cuBLAS API failed with status (?P<status>\d{1,3})",
)


@collects(
    "Driver Version",
    r"Driver Version:\s*(?P<driver>[\d.]{3,20})\s*(?:\|\s*)?CUDA Version:\s*(?P<cuda>\d{1,2}\.\d{1,2})",
)
def nvidia_smi_driver(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.gpu.driver_version, state.gpu.driver_cuda = m.group("driver"), m.group("cuda")
    state.match(S.NVIDIA_SMI_DRIVER, number, line)


# Two kernel errors of bitsandbytes' own launch check (issue 24): an out-of-bounds access, an invalid launch grid.
@collects(
    ("illegal memory access", "invalid configuration argument"),
    # bitsandbytes' CUDA_CHECK_RETURN ("Error %s at line %i in file %s"); the file may be cut with the line
    r"Error (?P<what>an illegal memory access was encountered|invalid configuration argument) at line \d{1,6} in "
    r"file \S",
    r"CUDA error: (?P<what>an illegal memory access was encountered)",
)
def kernel_launch_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    what, ours = m.group("what"), m.group(0).startswith("Error ")
    if "invalid configuration" in what:
        state.match(S.BNB_KERNEL_INVALID_CONFIGURATION, number, line)
    else:
        state.match(S.BNB_KERNEL_ILLEGAL_ACCESS if ours else S.CUDA_ILLEGAL_ACCESS, number, line)


# A paged optimizer's managed memory refused (issue 24): cget_managed_ptr's cudaMallocManaged in pythonInterface.c
# fails its CUDA check with cudaErrorNotSupported; a GPU pooling layer may say so itself just before.
recognises(
    S.PAGED_OPTIMIZER_OPERATION_NOT_SUPPORTED,
    ("operation not supported", "cuMemAllocManaged"),
    r"Error operation not supported at line \d{1,6} in file \S{0,500}?pythonInterface\.c",
    r"cuMemAllocManaged\(\) is not supported",
    bnb=True,
)


# A paged optimizer's prefetch refused (issue 24): cprefetch's cudaMemPrefetchAsync in pythonInterface.c (line 393 in
# 0.41) fails its CUDA check with cudaErrorInvalidValue, as when resuming from a checkpoint.
recognises(
    S.PAGED_OPTIMIZER_INVALID_ARGUMENT,
    "invalid argument at line",
    r"Error invalid argument at line \d{1,6} in file \S{0,500}?pythonInterface\.c",
    bnb=True,
)


# bitsandbytes' ROCm kernels without the 4-bit blocksize 64 (issue 24): the multi-backend preview's message, and
# 0.47-0.48's check as a traceback shows its source line (its message is only "Expected cond to be True").
recognises(
    S.ROCM_BLOCKSIZE_64_UNSUPPORTED,
    ("blockwise of 64", "blocksize in [4096, 2048, 1024, 512, 256, 128]"),
    r"The blockwise of 64 is not supported",
    r"torch\._check\(blocksize in \[4096, 2048, 1024, 512, 256, 128\]\)",
    bnb=True,
)
