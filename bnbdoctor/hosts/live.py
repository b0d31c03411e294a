"""LiveHost: answers questions about the machine bnbdoctor runs on.

Everything that can hang is time-boxed here: commands are killed with their whole process group
(and when they print without end, :mod:`bnbdoctor.hosts.command`),
and NVML is asked from a daemon thread that is abandoned if the driver does not answer.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
import threading
from dataclasses import replace
from typing import Any

from bnbdoctor.environment import check_allowed
from bnbdoctor.facts import OsInfo
from bnbdoctor.hosts import base

#: What ``python -c`` runs in the patient interpreter: the script (its one argument, removed from ``sys.argv``)
#: with the working folder off ``sys.path``. ``-c`` puts the folder bnbdoctor was started in first on the path,
#: so a ``json.py`` there would run in place of the standard library's and a ``bitsandbytes/`` checkout there
#: would be what gets diagnosed (issue 25, item 11). ``-P`` does this from Python 3.11 on only, and ``-I``
#: would also drop the patient's own PYTHONPATH and user site-packages, which are part of what is diagnosed.
#: Python 3.6 and newer; the script may start with ``from __future__`` imports (it is compiled on its own).
WORKING_FOLDER_OFF_PATH = (
    "import sys\nif sys.path[:1] == ['']:\n    del sys.path[0]\nexec(compile(sys.argv.pop(1), '<string>', 'exec'))\n"
)


class LiveHost(base.Host):
    """This machine, read through the standard library and NVML."""

    kind = "live"
    label = "this machine"

    def __init__(self) -> None:
        self._os_info: OsInfo | None = None

    def os_info(self) -> OsInfo:
        if self._os_info is None:
            self._os_info = _read_os_info()
        return self._os_info

    def getenv(self, name: str) -> str | None:
        return os.environ.get(check_allowed(name))

    def read_bytes(self, path: str, limit: int = base.DEFAULT_READ_LIMIT) -> bytes | None:
        try:
            with open(path, "rb") as handle:
                return base.read_at_most(handle, limit)
        except (OSError, ValueError):
            return None

    def open_reader(self, path: str) -> base.FileReader | None:
        return base.open_file_reader(path)

    def is_file(self, path: str) -> bool:
        try:
            return os.path.isfile(path)
        except (OSError, ValueError):
            return False

    def is_dir(self, path: str) -> bool:
        try:
            return os.path.isdir(path)
        except (OSError, ValueError):
            return False

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except (OSError, ValueError):
            return None

    def realpath(self, path: str) -> str:
        try:
            return os.path.realpath(path)
        except (OSError, ValueError):
            return path

    def run(self, argv: list[str], timeout: float = base.DEFAULT_TIMEOUT_S) -> base.CommandResult:
        from bnbdoctor.hosts.command import run_command  # subprocess and threads: not for explain's os_info

        return run_command(argv, timeout)

    def _run_python(self, run: base.PythonRun) -> base.CommandResult:
        from bnbdoctor.hosts.command import run_command

        # -B: never write .pyc files into the patient's environment. The script travels as an argument of
        # WORKING_FOLDER_OFF_PATH, which takes the working folder off sys.path before it runs.
        flags = ["-B", "-I", "-S"] if run.isolated else ["-B"]
        argv = [run.executable, *flags, "-c", WORKING_FOLDER_OFF_PATH, run.script]
        result = run_command(argv, run.timeout, on_stderr_line=run.on_stderr_line)
        # Report the command as the user would recognise it, not with the whole script inline.
        return replace(result, argv=(run.executable, *flags, "-c", f"<{run.purpose} script>"))

    def current_python(self) -> base.CurrentPython:
        prefix = sys.prefix.replace("\\", "/").lower()
        isolated = "/pipx/venvs/" in prefix or "/uv/tools/" in prefix
        return base.CurrentPython(sys.executable, isolated)

    def nvml(self, timeout: float = 5.0) -> base.NvmlAnswer:
        box: list[base.NvmlAnswer] = []
        worker = threading.Thread(target=lambda: box.append(_query_nvml()), daemon=True)
        worker.start()
        worker.join(timeout)
        if not box:
            return base.NvmlAnswer(
                available=False,
                error=f"NVML did not answer within {timeout:.0f}s (driver hung?)",
                error_kind="timeout",
            )
        return box[0]


def _read_os_info() -> OsInfo:
    libc_name: str | None = None
    libc_version: str | None = None
    if sys.platform.startswith("linux"):
        try:
            answer = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; None when not glibc (musl)
        except (AttributeError, ValueError, OSError):
            answer = None
        if answer:
            name, _, version = answer.partition(" ")
            libc_name, libc_version = name, version or None
    try:
        user: str | None = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry in some containers
        user = None
    system, machine, release, version, hostname, mac = _uname()
    return OsInfo(
        system=system,
        machine=machine,
        release=release,
        version=version,
        libc_name=libc_name,
        libc_version=libc_version,
        mac_version=mac,
        hostname=hostname or None,
        username=user,
        home=os.path.expanduser("~") or None,
    )


#: Whether os_info reads os.uname() (a name, not a platform check mypy narrows: the other branch is checked too).
_LINUX = sys.platform.startswith("linux")


def _uname() -> tuple[str, str, str, str, str, str | None]:
    """(system, machine, release, version, host name, macOS version) as ``platform.system()``, ``.machine()``,
    ``.release()``, ``.version()``, ``socket.gethostname()`` and ``platform.mac_ver()[0]`` give them. On Linux
    these are ``os.uname()``'s fields (platform reads them there, an "unknown" as "", and glibc's gethostname is
    uname's node name), read without importing platform and socket (a few ms of every run); elsewhere (macOS,
    Windows, where platform does more) they are asked of platform and socket themselves."""
    if _LINUX:
        name = os.uname()
        blank = [
            value if value != "unknown" else "" for value in (name.sysname, name.machine, name.release, name.version)
        ]
        return blank[0], blank[1], blank[2], blank[3], name.nodename, None
    import platform
    import socket

    mac = platform.mac_ver()[0] or None
    return platform.system(), platform.machine(), platform.release(), platform.version(), socket.gethostname(), mac


_NVML_SONAME = "libnvidia-ml.so.1"
_NVML_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
    "/lib",
    "/usr/lib/wsl/lib",
)


def _nvml_library_missing() -> str | None:
    """On Linux, look for libnvidia-ml.so.1 where dlopen would (LD_LIBRARY_PATH, the loader cache,
    the default folders) before importing pynvml and ctypes, which cost tens of milliseconds only
    to report the same absence on a machine without a driver. Any hint of the library defers to
    pynvml's real dlopen."""
    if not sys.platform.startswith("linux"):
        return None
    folders = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p] + list(_NVML_DIRS)
    if any(os.path.exists(os.path.join(folder, _NVML_SONAME)) for folder in folders):
        return None
    try:
        with open("/etc/ld.so.cache", "rb") as handle:
            if _NVML_SONAME.encode() in handle.read():
                return None
    except OSError:
        return None  # no cache to consult: let pynvml try for real
    return f"{_NVML_SONAME} is not on LD_LIBRARY_PATH, in the loader cache or in the system folders"


def _query_nvml() -> base.NvmlAnswer:
    """Ask NVML everything at once; classify failures instead of raising."""
    missing = _nvml_library_missing()
    if missing is not None:
        return base.NvmlAnswer(False, f"NVML Shared Library Not Found ({missing})", "library_not_found")
    try:
        import pynvml  # nvidia-ml-py; pure Python, loads libnvidia-ml lazily
    except ImportError as exc:  # pragma: no cover - a dependency, but stay calm without it
        return base.NvmlAnswer(False, f"nvidia-ml-py is not installed: {exc}", "unknown")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return base.NvmlAnswer(False, str(exc), _nvml_error_kind(pynvml, exc))
    except OSError as exc:
        return base.NvmlAnswer(False, str(exc), "library_not_found")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        try:
            cuda_version: int | None = int(pynvml.nvmlSystemGetCudaDriverVersion())
        except pynvml.NVMLError:
            cuda_version = None
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            devices.append(_query_device(pynvml, index))
        return base.NvmlAnswer(True, None, None, driver, cuda_version, tuple(devices))
    except pynvml.NVMLError as exc:
        return base.NvmlAnswer(False, str(exc), _nvml_error_kind(pynvml, exc))
    finally:
        with contextlib.suppress(Exception):  # shutting down must never mask the answer
            pynvml.nvmlShutdown()


def _query_device(pynvml: Any, index: int) -> base.NvmlDevice:
    """One GPU; ``pynvml`` is the module (nvidia-ml-py ships no type information)."""
    nv = pynvml
    handle = nv.nvmlDeviceGetHandleByIndex(index)

    def optional(call: str, *args: object) -> Any:
        try:
            return getattr(nv, call)(handle, *args)
        except Exception:  # noqa: BLE001 - one unanswered field is not a failed GPU
            return None

    cc = optional("nvmlDeviceGetCudaComputeCapability")
    memory = optional("nvmlDeviceGetMemoryInfo")
    pci = optional("nvmlDeviceGetPciInfo")
    return base.NvmlDevice(
        index=index,
        name=_text(optional("nvmlDeviceGetName")) or f"GPU {index}",
        compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
        memory_total_bytes=getattr(memory, "total", None),
        memory_free_bytes=getattr(memory, "free", None),
        uuid=_text(optional("nvmlDeviceGetUUID")),
        pci_bus_id=_text(getattr(pci, "busId", None)) if pci is not None else None,
    )


def _nvml_error_kind(pynvml: object, exc: Exception) -> str:
    value = getattr(exc, "value", None)
    names = {
        "NVML_ERROR_LIBRARY_NOT_FOUND": "library_not_found",
        "NVML_ERROR_DRIVER_NOT_LOADED": "driver_not_loaded",
        "NVML_ERROR_NO_PERMISSION": "no_permission",
        "NVML_ERROR_FUNCTION_NOT_FOUND": "driver_too_old",
    }
    for constant, kind in names.items():
        if value is not None and value == getattr(pynvml, constant, object()):
            return kind
    return "unknown"


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
