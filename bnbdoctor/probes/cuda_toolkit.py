"""The cuda toolkit probe: toolkits on disk and nvcc.

bitsandbytes never asks the toolkit which library to load (it follows torch), but a toolkit's
``libcudart`` on ``LD_LIBRARY_PATH`` can win the loader's search, so the doctor lists them.
"""

from __future__ import annotations

import json
import re

from bnbdoctor.facts import CudaToolkit, CudaToolkitFacts
from bnbdoctor.hosts.base import Host
from bnbdoctor.probes.base import ProbeContext
from bnbdoctor.probes.python_env import which

NVCC_TIMEOUT_S = 5.0
WINDOWS_CUDA_ROOT = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"


def toolkit_version(host: Host, path: str) -> str | None:
    """From version.json (CUDA >= 11.1) or version.txt ("CUDA Version 10.2.89")."""
    join = host.pathmod.join
    text = host.read_text(join(path, "version.json"), limit=256 * 1024)
    if text:
        try:
            value = json.loads(text).get("cuda", {}).get("version")
            if value:
                return str(value)
        except (ValueError, AttributeError):
            pass
    text = host.read_text(join(path, "version.txt"), limit=4096)
    match = re.search(r"CUDA Version\s+([\d.]+)", text or "")
    return match.group(1) if match else None


def _has_cudart(host: Host, path: str) -> bool:
    join = host.pathmod.join
    for sub in ("lib64", "lib", join("targets", "x86_64-linux", "lib"), join("targets", "sbsa-linux", "lib"), "bin"):
        for name in host.list_dir(join(path, sub)) or []:
            if name.startswith("libcudart.so") or re.match(r"cudart64_\d+\.dll$", name, re.IGNORECASE):
                return True
    return False


def _candidates(host: Host) -> list[tuple[str, str]]:
    join = host.pathmod.join
    found: list[tuple[str, str]] = []
    for variable in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        value = host.getenv(variable)
        if value:
            found.append((value.rstrip("/\\"), variable))
    if host.os_info().system == "Windows":
        for name in host.list_dir(WINDOWS_CUDA_ROOT) or []:
            found.append((join(WINDOWS_CUDA_ROOT, name), "Program Files"))
    else:
        for base in ("/usr/local", "/opt"):
            for name in host.list_dir(base) or []:
                if name == "cuda" or name.startswith("cuda-"):
                    found.append((join(base, name), base))
    conda = host.getenv("CONDA_PREFIX")
    if conda:
        found.append((conda, "CONDA_PREFIX"))
    return found


def gather_cuda_toolkit(ctx: ProbeContext) -> CudaToolkitFacts:
    host = ctx.host
    facts = CudaToolkitFacts(cuda_home=host.getenv("CUDA_HOME") or host.getenv("CUDA_PATH"))
    seen: set[str] = set()
    for path, source in _candidates(host):
        if not host.is_dir(path):
            continue
        real = host.realpath(path)
        version = toolkit_version(host, path)
        has_cudart = _has_cudart(host, path)
        if source == "CONDA_PREFIX" and not has_cudart:
            continue  # a conda env without a CUDA runtime is not a toolkit
        key = f"{real}|{source if source == 'CONDA_PREFIX' else ''}"
        if key in seen:
            continue
        seen.add(key)
        facts.toolkits.append(CudaToolkit(path=path, version=version, source=source, has_cudart=has_cudart))
    nvcc = None
    home = facts.cuda_home
    if home:
        candidate = host.pathmod.join(home, "bin", "nvcc.exe" if host.os_info().system == "Windows" else "nvcc")
        nvcc = candidate if host.is_file(candidate) else None
    nvcc = nvcc or which(host, ("nvcc",))
    if nvcc:
        facts.nvcc_path = nvcc
        result = host.run([nvcc, "--version"], timeout=NVCC_TIMEOUT_S)
        match = re.search(r"release\s+(\d{1,3}\.\d{1,3})\b", result.stdout)
        if result.ok and match:
            facts.nvcc_version = match.group(1)
        else:
            facts.nvcc_error = result.describe_failure() if not result.ok else "no version in nvcc output"
    return facts
