"""Probes: gather facts from a host. The registry below is the only list of probes."""

from __future__ import annotations

from bnbdoctor.probes.base import Probe, ProbeContext, ProbeError, ProbeOptions
from bnbdoctor.probes.cuda_toolkit import gather_cuda_toolkit
from bnbdoctor.probes.environment import gather_env
from bnbdoctor.probes.gpu import gather_gpu
from bnbdoctor.probes.load import gather_load
from bnbdoctor.probes.native import gather_native
from bnbdoctor.probes.platform import gather_platform
from bnbdoctor.probes.python_env import gather_python
from bnbdoctor.probes.runner import run_probes
from bnbdoctor.probes.torch_arch import gather_torch_arch

#: Every probe, in report order. ``requires`` decides what runs side by side.
PROBES: tuple[Probe, ...] = (
    Probe("env", "env", gather_env, timeout_s=5),
    Probe("platform", "platform", gather_platform, timeout_s=10),
    Probe("gpu", "gpu", gather_gpu, timeout_s=10),
    Probe("python", "python", gather_python, timeout_s=30),
    Probe("cuda_toolkit", "cuda_toolkit", gather_cuda_toolkit, timeout_s=15),
    Probe("native", "native", gather_native, requires=("env", "platform", "gpu", "python"), timeout_s=20),
    Probe("torch_arch", "torch_arch", gather_torch_arch, requires=("platform", "python"), timeout_s=10),
    Probe("load", "load", gather_load, requires=("env", "platform", "gpu", "python"), timeout_s=25),
)

__all__ = ["PROBES", "Probe", "ProbeContext", "ProbeError", "ProbeOptions", "run_probes"]
