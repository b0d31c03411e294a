"""The torch_arch probe: which GPU architectures the installed torch has kernels for.

torch reports them only after import (``torch.cuda.get_arch_list()``), which takes seconds and
initialises CUDA. The same list is in the fatbin headers of its CUDA library, which this probe
reads through the host with bounded reads (:mod:`bnbdoctor.native.fatbin`), in about a millisecond.
When the library is not there or not readable (Windows DLLs, a recorded machine without the file),
the facts say why and the rules fall back to the recorded per-release table
(:mod:`bnbdoctor.knowledge.torch_wheels`).
"""

from __future__ import annotations

from bnbdoctor.facts import TorchArchFacts
from bnbdoctor.probes.base import ProbeContext, ProbeError

#: torch's CUDA library by release: one file from 1.13 on; split in two from 1.10 to 1.12.
LIBRARY_NAMES = ("libtorch_cuda.so", "libtorch_cuda_cu.so")


def gather_torch_arch(ctx: ProbeContext) -> TorchArchFacts | None:
    facts, host = ctx.facts, ctx.host
    python, platform = facts.python, facts.platform
    if python is None or platform is None:
        raise ProbeError("needs the python and platform facts")
    torch = python.torch
    if not torch.installed or torch.build != "cuda":
        return None  # nothing to read: no torch, or not a CUDA build
    arch = TorchArchFacts()
    if platform.os != "linux" or not torch.lib_dir:
        arch.error = (
            "torch's CUDA DLL is not read on Windows"
            if platform.os == "windows"
            else f"no torch/lib folder to read on {platform.os}"
        )
        return arch
    from bnbdoctor.native.fatbin import read_fatbin_archs

    names = [n for n in LIBRARY_NAMES if n in torch.lib_files] or list(LIBRARY_NAMES[:1])
    for name in names:
        path = host.pathmod.join(torch.lib_dir, name)
        reader = host.open_reader(path)
        if reader is None:
            arch.error = f"{path} is not there or not readable"
            continue
        with reader:
            found = read_fatbin_archs(reader)
        arch.library, arch.error = path, found.error
        if found.sass or found.ptx:
            arch.source = "fatbin"
            arch.sass, arch.ptx = list(found.sass), list(found.ptx)
            arch.containers, arch.sharing, arch.complete = found.containers, found.sharing, found.complete
        break
    return arch
