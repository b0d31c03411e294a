"""Small helpers shared by rule modules: fact accessors and evidence builders."""

from __future__ import annotations

from bnbdoctor.derive import predict_selection
from bnbdoctor.facts import BnbFacts, Facts, GpuDevice, TorchFacts
from bnbdoctor.findings import Evidence
from bnbdoctor.knowledge.platforms import CURRENT_MANYLINUX
from bnbdoctor.knowledge.ranges import minor
from bnbdoctor.knowledge.selection import LibrarySelection

BNB_DOCS_INSTALL = "https://huggingface.co/docs/bitsandbytes/main/en/installation"
BNB_ISSUES = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/"
TORCH_GET_STARTED = "https://pytorch.org/get-started/locally/"
#: What torch is and whether it sees a CUDA device, the first thing to confirm before any GPU advice.
TORCH_BUILD_CHECK = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


def unknown_version(facts: Facts) -> str:
    """How a finding says that a version is not among the facts (a log often does not show it)."""
    return "version not in the log" if facts.log is not None else "version unknown"


def versioned(facts: Facts, name: str, version: str | None) -> str:
    """``name version`` in a finding's text, one wording for every rule when the version is unknown."""
    return f"{name} {version}" if version else f"{name} ({unknown_version(facts)})"


def ev(label: str, value: object, fact: str | None = None) -> Evidence:
    return Evidence(label, "unknown" if value is None else str(value), fact)


def torch_of(facts: Facts) -> TorchFacts | None:
    return facts.python.torch if facts.python else None


def bnb_of(facts: Facts) -> BnbFacts | None:
    return facts.python.bitsandbytes if facts.python else None


def visible_gpus(facts: Facts) -> list[GpuDevice]:
    return facts.gpu.visible if facts.gpu else []


def index_list(indices: list[int]) -> str:
    """GPU indices as a person writes them: runs of three or more as a range ("0\u20133, 5, 6")."""
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(f"{run[0]}\u2013{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


def wheel_upgrade_blocked(facts: Facts) -> str | None:
    """Why `pip install -U bitsandbytes` cannot work on this machine, or None."""
    platform = facts.platform
    if platform is None or platform.os != "linux" or not platform.libc_version:
        return None
    from bnbdoctor.knowledge.versions import major_minor

    glibc = major_minor(platform.libc_version)
    wheel = CURRENT_MANYLINUX
    if glibc is not None and glibc < wheel.glibc:
        return (
            f"bitsandbytes {minor(wheel.first)}+ ships {wheel.tag} wheels, which pip will not install on glibc "
            f"{platform.libc_version} ({platform.distro_name or 'this OS'}): build bitsandbytes from source here, "
            f"or run in a container/OS with glibc {wheel.glibc_text} or newer"
        )
    return None


def predicted_selection(facts: Facts) -> LibrarySelection | None:
    """What the installed bitsandbytes will try to load, from the facts alone."""
    return predict_selection(facts)
