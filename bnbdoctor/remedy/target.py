"""The machine a command is printed for, as the constraints an installer applies.

Read from the facts of a report (or, partially, of a log): what is unknown stays None and
constrains nothing, so a log that does not show the glibc never rules a wheel out by guesswork.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from bnbdoctor.derive import conda_env
from bnbdoctor.facts import Facts, PythonFacts


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def _quoted(path: str, windows: bool) -> str:
    if not any(c in path for c in " '\"&()$;"):
        return path
    return f'& "{path}"' if windows else "'" + path.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Target:
    """What decides whether a command works here. None: unknown (not checked)."""

    os: str | None  # "linux", "windows", "macos"
    arch: str | None  # "x86_64", "aarch64"
    glibc: Version | None
    macos: Version | None
    python: Version | None
    torch: str | None  # the installed torch's version as pip reads it ("2.2.0a0+81ea7a4")
    torch_cuda: str | None  # torch.version.cuda of the installed torch ("12.1")
    conda: bool | None  # the examined interpreter is a conda env
    nvidia_driver: bool | None  # an NVIDIA driver answers (nvidia-smi exists)
    python_command: str  # how to run the examined interpreter in a shell
    uv: bool = False  # the environment has no pip and uv made it: ``uv pip ... --python <interpreter>``
    gpu_majors: tuple[int, ...] = ()  # compute-capability majors of the visible NVIDIA GPUs (kernels a release needs)

    @property
    def windows(self) -> bool:
        return self.os == "windows"

    @property
    def pip(self) -> str:
        """pip as the examined interpreter runs it: never a ``pip`` that PATH may map elsewhere. In an environment
        uv made without pip, ``python -m pip`` fails ("No module named pip"): uv's pip interface instead."""
        return "uv pip" if self.uv else f"{self.python_command} -m pip"

    @property
    def pip_options(self) -> list[str]:
        """What follows the subcommand: uv's pip is told which interpreter (it would pick another)."""
        return ["--python", self.python_command] if self.uv else []


def target_of(facts: Facts) -> Target:
    platform, python, gpu = facts.platform, facts.python, facts.gpu
    os_name = platform.os if platform else None
    arch = platform.arch if platform else None
    if arch == "arm64":
        arch = "aarch64"
    if arch in ("", "unknown"):
        arch = None  # a log that does not show it: unknown, never a platform no wheel is built for
    glibc = _version(platform.libc_version) if platform and platform.libc in (None, "glibc") else None
    macos = _version(platform.os_version) if platform and platform.os == "macos" else None
    torch = python.torch if python else None
    executable = python.executable if python and python.executable and python.selected_by != "log" else ""
    driver = gpu.nvml_available if gpu is not None else None
    return Target(
        os=os_name,
        arch=arch,
        glibc=glibc,
        macos=macos,
        python=_version(python.version) if python else None,
        torch=torch.version if torch and torch.installed else None,
        torch_cuda=torch.cuda if torch and torch.installed else None,
        conda=conda_env(facts),
        nvidia_driver=driver,
        python_command=_quoted(executable, os_name == "windows") if executable else "python",
        uv=bool(python and python.pip_available is False and _made_by_uv(python)),
        gpu_majors=_gpu_majors(facts),
    )


def _gpu_majors(facts: Facts) -> tuple[int, ...]:
    """The compute-capability majors of the visible GPUs; () when the facts hold none (or hold them malformed)."""
    devices = facts.gpu.devices if facts.gpu is not None and isinstance(facts.gpu.devices, list) else []
    majors = {
        d.compute_capability[0]
        for d in devices
        if d.visible and isinstance(d.compute_capability, list) and d.compute_capability
    }
    return tuple(sorted(m for m in majors if isinstance(m, int)))


def _made_by_uv(python: PythonFacts) -> bool:
    return python.venv_tool == "uv" or "uv" in (python.torch.installer, python.bitsandbytes.installer)
