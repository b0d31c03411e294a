"""The simulated machine a bitsandbytes release is imported into, and the record of what it did.

Runs inside a forked child of ``tools/oracle_bnb.py`` that has already imported the real (CPU) torch,
so a scenario costs only bitsandbytes' own import. :func:`enter_world` patches, for this process only:

- torch: ``version.cuda``/``hip``/``xpu``, ``cuda.is_available``/``device_count``/
  ``get_device_capability``/``get_device_name``/``get_device_properties``, ``backends.mps``, ``xpu``,
  ``_C._has_xpu`` (what the releases were seen to read when run, see the table's ``reads``);
- the platform: ``sys.platform``, ``platform.system()``, ``platform.machine()``;
- the environment: ``BNB_CUDA_VERSION``, ``BNB_ROCM_VERSION``, ``LD_LIBRARY_PATH``, ``CONDA_PREFIX``,
  ``CUDA_HOME`` (folders made for the scenario, holding the ``libcudart.so*`` it names);
- ctypes: ``CDLL``/``cdll``/``windll`` record every path asked for and succeed or fail as the scenario
  says (missing dependency, wrong architecture, no driver); a loaded library answers every symbol,
  except that a CPU library has no ``get_context`` (what 0.43+ read to tell a GPU build), and the
  driver/runtime calls the CUDASetup releases make (``cuDeviceGetCount``, ``cudaRuntimeGetVersion``,
  …) write the scenario's values through their ``byref`` arguments.

:func:`observe` imports ``bitsandbytes`` from the release's own sources, makes one native call, and
returns plain data: files asked for in order, the file the library object came from, whether import
raised (type and message), the first call's outcome, and every line printed, warned or logged.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util as ctypes_util
import io
import logging
import os
import platform
import re
import sys
import types
import warnings
from typing import Any

PLATFORMS = {  # name -> (sys.platform, platform.system(), platform.machine())
    "linux-x86_64": ("linux", "Linux", "x86_64"),
    "linux-aarch64": ("linux", "Linux", "aarch64"),
    "windows-amd64": ("win32", "Windows", "AMD64"),
    "windows-arm64": ("win32", "Windows", "ARM64"),
    "macos-arm64": ("darwin", "Darwin", "arm64"),
}


class _Symbol:
    """A native function: takes anything, returns 0 (success), or writes through byref as told."""

    def __init__(self, name: str, world: _World) -> None:
        self.__name__ = name
        self.world = world
        self.restype: Any = None
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        return self.world.driver_call(self.__name__, args)


class _Library:
    """What ctypes hands back for a library the scenario lets load."""

    def __init__(self, path: str, world: _World) -> None:
        self._name = path
        self._world = world

    def __getattr__(self, name: str) -> _Symbol:
        if name.startswith("__"):
            raise AttributeError(name)
        base = os.path.basename(self._name)
        if base.startswith("libbitsandbytes_cpu") and name in {"get_context", "get_cusparse", "cget_managed_ptr"}:
            raise AttributeError(f"{self._name}: undefined symbol: {name}")
        symbol = _Symbol(name, self._world)
        object.__setattr__(self, name, symbol)
        return symbol


def _write(ref: Any, value: Any) -> None:
    target = getattr(ref, "_obj", ref)
    target.value = value


class _World:
    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.asked: list[str] = []
        self.loaded: list[str] = []
        self.reads: set[str] = set()

    # ctypes -------------------------------------------------------------------------------
    def load(self, name: Any) -> _Library:
        path = os.fspath(name) if name is not None else "<None>"
        self.asked.append(path)
        base = os.path.basename(path)
        fault = self.scenario.get("fault")
        if base.startswith("libbitsandbytes"):
            gpu = not base.startswith("libbitsandbytes_cpu")
            if fault == "missing_dependency" and gpu:
                missing = self.scenario.get("missing", "libcudart.so.12")
                raise OSError(f"{missing}: cannot open shared object file: No such file or directory")
            if fault == "wrong_architecture":
                if self.scenario["platform"].startswith("windows"):
                    raise OSError("[WinError 193] %1 is not a valid Win32 application")
                if self.scenario["platform"].startswith("macos"):
                    raise OSError(f"dlopen({path}, 0x0006): tried: '{path}' (not a mach-o file)")
                raise OSError(f"{path}: cannot open shared object file: No such file or directory")
            if not os.path.exists(path) and os.path.sep in path:
                raise OSError(f"{path}: cannot open shared object file: No such file or directory")
        elif base.startswith("libcuda.so") or base in {"nvcuda.dll", "libcuda.dylib"}:
            if not self.scenario.get("driver", True):
                raise OSError(f"{base}: cannot open shared object file: No such file or directory")
        elif base.startswith("libcudart") and os.path.sep in path and not os.path.exists(path):
            raise OSError(f"{path}: cannot open shared object file: No such file or directory")
        self.loaded.append(path)
        return _Library(path, self)

    def driver_call(self, name: str, args: tuple[Any, ...]) -> int:
        ccs = self.scenario.get("ccs") or []
        if name == "cuDeviceGetCount":
            _write(args[0], len(ccs) if self.scenario.get("available") else 0)
        elif name == "cuDeviceGet":
            _write(args[0], args[1])
        elif name == "cuDeviceComputeCapability":
            index = getattr(args[2], "value", args[2])
            major, minor = ccs[index]
            _write(args[0], major)
            _write(args[1], minor)
        elif name == "cudaRuntimeGetVersion":
            major, minor = _split(self.scenario.get("system_cuda") or self.scenario.get("torch_cuda") or "0.0")
            _write(args[0], major * 1000 + minor * 10)
        elif name == "cuDriverGetVersion":
            _write(args[0], int(self.scenario.get("driver_cuda", "13.0").replace(".", "")) * 10)
        return 0


def _split(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def _patch_torch(world: _World) -> None:
    import torch

    sc = world.scenario
    ccs = [tuple(cc) for cc in sc.get("ccs") or []]
    available = bool(sc.get("available")) and bool(ccs) and bool(sc.get("torch_cuda") or sc.get("torch_hip"))

    def note(name: str, value: Any) -> Any:
        world.reads.add(name)
        return value

    torch.version.cuda = sc.get("torch_cuda")
    torch.version.hip = sc.get("torch_hip")
    if sc.get("torch_xpu"):
        torch.version.xpu = sc["torch_xpu"]
    elif hasattr(torch.version, "xpu"):
        torch.version.xpu = None

    def index_of(device: Any = None) -> int:
        if device is None:
            return 0
        if isinstance(device, int):
            return device
        return int(getattr(device, "idx", getattr(device, "index", 0)) or 0)

    def capability(device: Any = None) -> tuple[int, int]:
        world.reads.add("cuda.get_device_capability")
        if not available:
            raise RuntimeError("Found no NVIDIA driver on your system.")
        return ccs[min(index_of(device), len(ccs) - 1)]

    def properties(device: Any = None) -> Any:
        world.reads.add("cuda.get_device_properties")
        major, minor = capability(device)
        return types.SimpleNamespace(
            major=major,
            minor=minor,
            name=sc.get("gpu_name", "GPU"),
            total_memory=16 << 30,
            gcnArchName=sc.get("gcn_arch", "gfx90a") if sc.get("torch_hip") else "",
            multi_processor_count=80,
        )

    class _Device:
        def __init__(self, device: Any = None) -> None:
            self.idx = index_of(device)

        def __enter__(self) -> _Device:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

    cuda = torch.cuda
    cuda.is_available = lambda: note("cuda.is_available", available)
    cuda.device_count = lambda: note("cuda.device_count", len(ccs) if available else 0)
    cuda.get_device_capability = capability
    cuda.get_device_properties = properties
    cuda.get_device_name = lambda device=None: note("cuda.get_device_name", sc.get("gpu_name", "GPU"))
    cuda.current_device = lambda: note("cuda.current_device", 0)
    cuda.device = _Device  # type: ignore[assignment,misc]
    cuda.is_initialized = lambda: available
    cuda.init = lambda: None
    torch.backends.mps.is_available = lambda: note("backends.mps.is_available", bool(sc.get("mps")))  # type: ignore[assignment]
    torch.backends.mps.is_built = lambda: bool(sc.get("mps"))
    xpu_on = bool(sc.get("torch_xpu")) and bool(sc.get("available"))
    if hasattr(torch, "xpu"):
        torch.xpu.is_available = lambda: note("xpu.is_available", xpu_on)
        torch.xpu.device_count = lambda: 1 if xpu_on else 0
        torch.xpu._lazy_init = lambda: None  # a CPU torch refuses to initialise XPU; an XPU build would not
    torch._C._has_xpu = bool(sc.get("torch_xpu"))
    for name in ("_cuda_getCurrentRawStream", "_cuda_getCurrentStream", "_xpu_init"):  # absent from a CPU torch
        if not hasattr(torch._C, name):
            setattr(torch._C, name, lambda *args, _name=name: note("_C." + _name, 0))


def _patch_platform(world: _World) -> None:
    sys_platform, system, machine = PLATFORMS[world.scenario["platform"]]
    sys.platform = sys_platform
    platform.system = lambda: system
    platform.machine = lambda: machine
    platform.processor = lambda: machine
    platform.uname = lambda: platform.uname_result(system, "oracle", "", "", machine)


def _patch_ctypes(world: _World) -> None:
    def cdll_type(name: Any, *args: Any, **kwargs: Any) -> _Library:
        return world.load(name)

    ctypes.CDLL = cdll_type  # type: ignore[assignment,misc]
    ctypes.cdll = ctypes.LibraryLoader(cdll_type)  # type: ignore[arg-type]
    ctypes.WinDLL = cdll_type  # type: ignore[attr-defined]
    ctypes.windll = ctypes.LibraryLoader(cdll_type)  # type: ignore[attr-defined,arg-type]
    ctypes.PyDLL = cdll_type  # type: ignore[assignment,misc]
    ctypes_util.find_library = lambda name: world.scenario.get("find_library", {}).get(name)


#: Folders the host machine has but the simulated one answers for itself (this box has a CUDA toolkit
#: in /usr/local/cuda; the releases that search for libcudart must not find it unless the scenario says).
SYSTEM_ROOTS = ("/usr/local/cuda", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib", "/opt/cuda", "/opt/rocm")


def _patch_filesystem(world: _World) -> None:
    import pathlib

    files = set(world.scenario.get("system_files") or [])
    folders = {os.path.dirname(f) for f in files}
    folders |= {os.path.dirname(d) for d in folders}

    def virtual(path: Any) -> str | None:
        text = os.path.abspath(os.fspath(path))
        return text if text.startswith(SYSTEM_ROOTS) else None

    def wrap(original: Any, answer: Any) -> Any:
        def patched(path: Any, *args: Any, **kwargs: Any) -> Any:
            text = virtual(path)
            if text is None:
                return original(path, *args, **kwargs)
            world.reads.add("filesystem:" + text)
            return answer(text)

        return patched

    is_file = lambda text: text in files  # noqa: E731
    is_dir = lambda text: text in folders  # noqa: E731
    exists = lambda text: text in files or text in folders  # noqa: E731
    pathlib.Path.exists = wrap(pathlib.Path.exists, exists)  # type: ignore[method-assign]
    pathlib.Path.is_file = wrap(pathlib.Path.is_file, is_file)  # type: ignore[method-assign]
    pathlib.Path.is_dir = wrap(pathlib.Path.is_dir, is_dir)  # type: ignore[method-assign]
    os.path.exists = wrap(os.path.exists, exists)
    os.path.isfile = wrap(os.path.isfile, is_file)
    os.path.isdir = wrap(os.path.isdir, is_dir)


def _set_environment(scenario: dict[str, Any]) -> None:
    # Nothing of this machine's environment: the CUDASetup releases scan every variable for paths.
    os.environ.clear()
    os.environ["PATH"] = "/usr/bin:/bin"
    for variable, value in (scenario.get("env") or {}).items():
        os.environ[variable] = value


class _Log(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.split(".")[0] == "bitsandbytes":
            self.lines.append(f"log:{record.levelname}:{record.getMessage()}")


def observe(scenario: dict[str, Any], package_root: str) -> dict[str, Any]:
    """Import bitsandbytes from ``package_root`` in the world ``scenario`` describes; what it did."""
    world = _World(scenario)
    _set_environment(scenario)
    _patch_torch(world)
    _patch_platform(world)
    _patch_ctypes(world)
    _patch_filesystem(world)
    sys.path.insert(0, package_root)
    lines: list[str] = []
    handler = _Log(lines)
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG)
    out, err = io.StringIO(), io.StringIO()
    raised: str | None = None
    first_call: str | None = None
    module: Any = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                import bitsandbytes

                module = bitsandbytes
            except BaseException as exc:  # noqa: BLE001 - what the release raises is the observation
                raised = f"{type(exc).__name__}: {exc}"
            if module is not None:
                first_call = _first_call(module)
    logging.getLogger().removeHandler(handler)
    printed = [f"print:{line}" for line in out.getvalue().splitlines() if line.strip()]
    printed += [f"stderr:{line}" for line in err.getvalue().splitlines() if line.strip()]
    warned = [f"warn:{w.category.__name__}:{w.message}" for w in caught if str(w.filename).startswith(package_root)]
    library = _library_of(module)
    return {
        "asked": [os.path.basename(path) if "libbitsandbytes" in path else path for path in world.asked],
        "loaded": library,
        "import": "ok" if raised is None else raised,
        "first_call": first_call,
        "messages": printed + warned + lines,
        "reads": sorted(world.reads),
    }


def _library_of(module: Any) -> str | None:
    """The file the release's library object came from (None when it holds no loaded library)."""
    if module is None:
        return None
    cext = sys.modules.get("bitsandbytes.cextension")
    lib = getattr(cext, "lib", None)
    for candidate in (lib, getattr(lib, "_lib", None)):
        name = getattr(candidate, "_name", None)
        if isinstance(name, str):
            return os.path.basename(name)
    return None


def _first_call(module: Any) -> str:
    """Touch one native symbol the way the first quantisation call does; "ok" or what it raised."""
    cext = sys.modules.get("bitsandbytes.cextension")
    lib = getattr(cext, "lib", None)
    if lib is None:
        return "no library object"
    try:
        lib.cquantize_blockwise_fp16()
    except BaseException as exc:  # noqa: BLE001 - the observation
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def scrub(text: str, replacements: dict[str, str]) -> str:
    """Replace the run's temporary paths by stable names, so the table does not change per run."""
    for old, new in replacements.items():
        text = text.replace(old, new)
    return re.sub(r"0x[0-9a-f]{6,}", "0x…", text)
