"""The NVIDIA driver, CUDA's errors and the kernels: what torch, CUDA and bitsandbytes report
when the GPU cannot be used or a kernel cannot run on it.

Fills ``gpu`` evidence (the driver version and its CUDA version from ``nvidia-smi`` or torch's
"driver too old" message; "no NVIDIA driver") and marks a CPU-only torch. Kernel errors are told
apart by their text (no kernel image, named symbol not found, invalid device function, error 803).
"""

from __future__ import annotations

import re

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.state import MAX_TEXT, LogState

COLLECTOR = Collector("driver and kernels")
collects = COLLECTOR.collects


@collects(
    "no_gpu_detected",
    ("GPU detected", "libcuda.so not found", "CUDA is not available"),
    r"No GPU detected!|WARNING! libcuda\.so not found!|(?:Py)?[Tt]orch says CUDA is not available",
)
def no_gpu_detected(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("no_gpu_detected", number, line)
    if "libcuda.so not found" in line:
        state.match("libcuda_not_found", number, line)


@collects("no_nvidia_driver", "Found no NVIDIA driver", r"Found no NVIDIA driver on your system")
def no_nvidia_driver(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.gpu.no_driver = line.strip()[:MAX_TEXT]
    state.match("no_nvidia_driver", number, line)


@collects(
    "torch_not_compiled",
    ("CUDA enabled", "bitsandbytes_cudaNone"),
    r"Torch not compiled with CUDA enabled|libbitsandbytes_cudaNone",
)
def torch_not_compiled(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.torch.cpu = True
    state.match("torch_cuda_none", number, line)


@collects(
    "cuda_error",
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
        signature = "no_kernel_image"
    elif "named symbol not found" in what:
        signature = "named_symbol_not_found"
    elif "invalid device function" in what:
        signature = "invalid_device_function"
    elif "driver version is insufficient" in what:
        signature = "cuda_driver_insufficient"
    elif "unsupported display driver" in what or code == "803":
        signature = "cuda_error_803"
    elif "hiperrornobinaryforgpu" in what:
        signature = "hip_no_binary_for_gpu"
    elif "out of memory" in what:
        signature = "cuda_out_of_memory"
    else:
        return
    state.match(signature, number, line)
    file = m.groupdict().get("file") or ""
    if file.endswith(".hip"):
        state.torch.hip = state.torch.hip or ""


@collects(
    "driver_too_old",
    "NVIDIA driver on your system",
    r"The NVIDIA driver on your system is too old \(found version (?P<version>\d{3,6})\)",
)
def driver_too_old(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    found = m.group("version")
    state.gpu.driver_cuda = f"{int(found) // 1000}.{int(found) % 1000 // 10}"
    state.match("driver_too_old", number, line)


@collects(
    "int8_unsupported",
    ("GPU does not support", "igemmlt"),
    r"Your GPU does not support Int8 Matmul|int igemmlt\(.{0,400}?Assertion",
)
def int8_unsupported(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("int8_matmul_unsupported", number, line)


@collects("slow_int8", "8-bit matmul", r"Only slow 8-bit matmul is supported for your GPU")
def slow_int8(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.seen = True
    state.match("slow_int8_matmul", number, line)


@collects("cuda_setup_nameerror", "cuda_setup", r"name 'cuda_setup' is not defined")
def cuda_setup_nameerror(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.bnb.seen = True
    state.match("cuda_setup_nameerror", number, line)


@collects(
    "cublaslt",
    ("into an error", "cuBLAS API"),
    r"cublasLt ran into an error|cuBLAS API failed with status (?P<status>\d{1,3})",
)
def cublaslt(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.match("cublaslt_error", number, line)


@collects(
    "nvidia_smi_driver",
    "Driver Version",
    r"Driver Version:\s*(?P<driver>[\d.]{3,20})\s*(?:\|\s*)?CUDA Version:\s*(?P<cuda>\d{1,2}\.\d{1,2})",
)
def nvidia_smi_driver(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.gpu.driver_version, state.gpu.driver_cuda = m.group("driver"), m.group("cuda")
    state.match("nvidia_smi_driver", number, line)
