"""The environment-variable allowlist: the only variables bnbdoctor ever reads.

Secrets must never enter a report, so nothing is read by pattern or in bulk: a probe names a
variable, and the host refuses any name that is not listed here. A name that looks like a secret
is refused even if someone adds it to the list by mistake.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Variables that change how bitsandbytes, torch, CUDA and the dynamic loader behave.
ALLOWED_ENV: frozenset[str] = frozenset(
    {
        # dynamic loader and search paths
        "PATH",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "DYLD_LIBRARY_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        # CUDA / ROCm / XPU selection
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_ROOT",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "ROCM_PATH",
        "ROCM_HOME",
        "HIP_PATH",
        "TORCH_CUDA_ARCH_LIST",
        # bitsandbytes' own switches
        "BNB_CUDA_VERSION",
        "BNB_ROCM_VERSION",
        "BNB_BACKEND",
        "BITSANDBYTES_NOWELCOME",
        # which Python environment is active
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "PIPX_HOME",
        # WSL and Windows
        "WSL_DISTRO_NAME",
        "WSL_INTEROP",
        "SYSTEMROOT",
        "WINDIR",
        # which node of a cluster this is (bnbdoctor -o DIR/%N.json; Kubernetes: the downward API's spec.nodeName)
        "SLURMD_NODENAME",
        "NODE_NAME",
        # Hugging Face offline switches (never tokens)
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        # where from_pretrained finds a model id offline (bnbdoctor fit org/name)
        "HF_HOME",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "XDG_CACHE_HOME",
    }
)

#: Names that look like they hold a secret. Matched on whole underscore-separated words.
_SECRET_WORDS = re.compile(
    r"(^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?|AUTH|COOKIE|SESSION|PRIVATE)(_|$)",
    re.IGNORECASE,
)


class EnvNotAllowed(KeyError):
    """A probe asked for a variable outside the allowlist: a bug in bnbdoctor, not the machine."""


def looks_secret(name: str) -> bool:
    """True when a variable's name suggests it holds a credential."""
    return bool(_SECRET_WORDS.search(name))


def check_allowed(name: str) -> str:
    """Return the canonical (upper-case) name, or raise :class:`EnvNotAllowed`."""
    canonical = name.upper()
    if looks_secret(canonical) or canonical not in ALLOWED_ENV:
        raise EnvNotAllowed(name)
    return canonical


def override_named(env: Mapping[str, str]) -> str:
    """The library override these variables set: ``BNB_ROCM_VERSION`` when it is set alone (the ROCm releases that
    read it), else ``BNB_CUDA_VERSION``. A log rarely shows torch's HIP version; the variable says ROCm then."""
    return "BNB_ROCM_VERSION" if "BNB_ROCM_VERSION" in env and "BNB_CUDA_VERSION" not in env else "BNB_CUDA_VERSION"
