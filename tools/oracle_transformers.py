"""Run every transformers release's own bitsandbytes gates against simulated environments; write what they did.

"The patients are the oracle": bnbdoctor's model of transformers' gates (``bnbdoctor/knowledge/transformers.py``)
is checked against the gates themselves. For each final transformers release on PyPI from 4.30.0 to the newest,
this tool downloads the part of its wheel the gates live in (HTTP Range reads of the wheel's zip, never the whole
wheel, into a cache outside the repository) and, in a time-limited subprocess, runs the release's own code:

- ``transformers.utils.import_utils``: ``is_bitsandbytes_available()``, ``is_accelerate_available()``,
  ``is_torch_available()`` and the minimum-version constants (``ACCELERATE_MIN_VERSION``,
  ``BITSANDBYTES_MIN_VERSION``) where the release has them;
- the gate ``from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit|load_in_8bit=True))`` meets:
  the release's ``quantizers.auto.get_hf_quantizer`` where it has one (4.46+), else
  ``AutoHfQuantizer.from_config(...)`` and the bnb quantizer's ``validate_environment`` as ``from_pretrained`` calls
  them (4.38-4.45), else (4.30-4.37, before the quantizers) ``PreTrainedModel.from_pretrained`` itself on a
  one-layer stand-in model, stopped when it reaches ``replace_with_bnb_linear`` (every check before that point is
  the gate: accelerate, bitsandbytes, the GPU, a dict device_map's CPU/disk entries, bitsandbytes' 4-bit minimum).

The simulated environment is a temporary ``sys.path`` in an interpreter started with ``-S -s -P`` and a bare
environment (no site-packages, a fixed hash seed):
stand-in modules for torch, accelerate, bitsandbytes and transformers' own dependencies (huggingface_hub,
tokenizers, safetensors, numpy, ...), each with fake ``.dist-info`` metadata at the version the scenario names; the
real ``packaging`` and ``typing_extensions`` (pure Python) copied from this interpreter. A stand-in answers every
attribute nobody configured with a falsy placeholder and records the name: what the gates read of torch was found
by running them, and the table's header lists it. bitsandbytes' stand-in carries what the real release's
``bitsandbytes/__init__.py`` declares (``features``, ``supported_torch_devices``), read from that release's wheel.
Each scenario runs in a forked process after the release was imported for its environment (one import per
environment, one fork per scenario), so a ``warning_once`` or a cache never leaks from one scenario to the next.

    python tools/oracle_transformers.py                     # all releases: tests/data/oracle/transformers_gates.json
    python tools/oracle_transformers.py --releases 4.38.0 5.25.0 --out /tmp/gates.json
    python tools/oracle_transformers.py --sample 3 --out -  # three releases chosen by today's date, to stdout
    python tools/oracle_transformers.py --summary           # the committed table against bnbdoctor: R releases, ...

Skipped: pre-releases (5.0.0rc0-rc3) and releases without a wheel (none from 4.30 on). Yanked releases are kept and
marked (a user can still pin one). The committed table keeps its written ``reasons`` when the tool rewrites it.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import urllib.request
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests" / "data" / "oracle" / "transformers_gates.json"
CACHE = Path(os.environ.get("BNBDOCTOR_ORACLE_CACHE", Path.home() / ".cache" / "bnbdoctor-oracle")) / "transformers"
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
FILES_HOST = "https://files.pythonhosted.org/packages/"
FIRST_RELEASE = "4.30.0"
#: Seconds one environment (import + its scenarios) may take in the child before it is killed.
GROUP_TIMEOUT = 60
#: Seconds one scenario may take.
CASE_TIMEOUT = 20

# ================================================================================== scenarios
#: The versions a scenario starts from: a healthy machine with an NVIDIA GPU and today's packages.
NEWEST_TORCH = "2.13.0"
NEWEST_BNB = "0.50.2"
NEWEST_ACCELERATE = "1.15.0"
#: device_map values the scenarios pass, by name: a dict keeps its insertion order in the JSON.
DEVICE_MAPS: dict[str, Any] = {
    "none": None,
    "auto": "auto",
    "gpu": {"": 0},
    "cpu": {"": "cpu"},
    "gpu+cpu": {"model.layers.0": 0, "model.layers.1": "cpu", "lm_head": 0},
    "gpu+disk": {"model.layers.0": 0, "model.layers.1": "disk", "lm_head": 0},
    "lm_head-cpu": {"model.layers.0": 0, "model.layers.1": 0, "lm_head": "cpu"},
}
#: bitsandbytes releases a scenario installs: the boundaries transformers' code names (0.37.2, 0.39.0, 0.43.1,
#: 0.46.1) and the releases on either side, plus the newest.
BNB_VERSIONS = (
    "0.37.0",
    "0.37.2",
    "0.38.1",
    "0.39.0",
    "0.42.0",
    "0.43.0",
    "0.43.1",
    "0.45.5",
    "0.46.0",
    "0.46.1",
    NEWEST_BNB,
)
#: accelerate releases: the ACCELERATE_MIN_VERSION values transformers used (0.21.0, 0.26.0, 1.1.0) and below.
ACCELERATE_VERSIONS = ("0.20.3", "0.21.0", "0.25.0", "0.26.0", "1.0.1", "1.1.0", NEWEST_ACCELERATE)
#: torch releases: below and at the minimums transformers 5 declares (2.2, then 2.6).
TORCH_VERSIONS = ("2.1.2", "2.2.0", "2.5.1", "2.6.0", NEWEST_TORCH)


@dataclass(frozen=True)
class Environment:
    """What is installed and what torch sees: everything transformers may read when it is imported."""

    torch: str | None = NEWEST_TORCH
    cuda: bool = True
    mps: bool = False
    bitsandbytes: str | None = NEWEST_BNB
    accelerate: str | None = NEWEST_ACCELERATE

    def key(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)


@dataclass(frozen=True)
class Scenario:
    """One from_pretrained call in one environment."""

    id: str
    env: Environment
    bits: int = 4
    device_map: str = "none"  # a key of DEVICE_MAPS
    fp32_cpu_offload: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "bits": self.bits,
            "torch": self.env.torch,
            "cuda": self.env.cuda,
            "mps": self.env.mps,
            "bitsandbytes": self.env.bitsandbytes,
            "accelerate": self.env.accelerate,
            "device_map": self.device_map,
            "fp32_cpu_offload": self.fp32_cpu_offload,
        }


def scenarios() -> list[Scenario]:
    """The scenarios every release runs, each for 4-bit and 8-bit (``4:``/``8:``), one thing changed from ``base``
    (an NVIDIA GPU, today's torch, bitsandbytes and accelerate, no device_map)."""
    out: list[Scenario] = []

    def add(name: str, env: Environment, device_map: str = "none", fp32: bool = False) -> None:
        for bits in (4, 8):
            out.append(Scenario(f"{bits}:{name}", env, bits, device_map, fp32))

    gpu = Environment()
    add("base", gpu)
    for name in DEVICE_MAPS:
        if name != "none":
            add(f"map={name}", gpu, name)
    for name in ("gpu+cpu", "gpu+disk", "lm_head-cpu", "cpu"):
        add(f"map={name},offload", gpu, name, fp32=True)
    for bnb in BNB_VERSIONS:
        if bnb != NEWEST_BNB:
            add(f"bnb={bnb}", Environment(bitsandbytes=bnb))
    add("no-bnb", Environment(bitsandbytes=None))
    for acc in ACCELERATE_VERSIONS:
        if acc != NEWEST_ACCELERATE:
            add(f"accelerate={acc}", Environment(accelerate=acc))
    add("no-accelerate", Environment(accelerate=None))
    add("no-accelerate,map=auto", Environment(accelerate=None), "auto")
    for torch in TORCH_VERSIONS:
        if torch != NEWEST_TORCH:
            add(f"torch={torch}", Environment(torch=torch))
    add("no-torch", Environment(torch=None))
    # No CUDA device (a CPU-only torch, a CPU runtime, a Mac): the gates' CUDA conditions.
    for bnb in ("0.42.0", "0.43.0", "0.43.1", "0.45.5", "0.46.1", NEWEST_BNB):
        add(f"no-cuda,bnb={bnb}", Environment(cuda=False, bitsandbytes=bnb))
    for name in ("cpu", "auto"):
        add(f"no-cuda,map={name}", Environment(cuda=False), name)
    add("no-cuda,no-bnb", Environment(cuda=False, bitsandbytes=None))
    add("no-cuda,no-accelerate", Environment(cuda=False, accelerate=None))
    add("mps", Environment(cuda=False, mps=True))
    add("mps,bnb=0.45.5", Environment(cuda=False, mps=True, bitsandbytes="0.45.5"))
    return out


# ================================================================================== PyPI and ranged wheel reads
@dataclass(frozen=True)
class Release:
    version: str
    url: str
    size: int
    uploaded: str
    yanked: bool


def _absolute(url: str) -> str:
    """PyPI's JSON may answer with a path relative to its mirror; the file lives on files.pythonhosted.org."""
    if url.startswith("http"):
        return url
    return FILES_HOST + url.rsplit("packages/", 1)[1]


def pypi_releases(name: str) -> tuple[list[Release], list[str]]:
    """Every final release with a wheel, oldest first, and the versions skipped (with why)."""
    from packaging.version import InvalidVersion, Version

    with urllib.request.urlopen(PYPI_JSON.format(name=name), timeout=60) as answer:  # noqa: S310 (a constant https URL)
        raw = json.load(answer)
    out: list[Release] = []
    skipped: list[str] = []
    for version, files in raw["releases"].items():
        try:
            parsed = Version(version)
        except InvalidVersion:
            skipped.append(f"{version} (not a PEP 440 version)")
            continue
        wheels = [f for f in files if f["filename"].endswith(".whl")]
        if name == "transformers" and parsed < Version(FIRST_RELEASE):
            continue
        if parsed.is_prerelease or parsed.is_devrelease:
            skipped.append(f"{version} (pre-release)")
            continue
        if not wheels:
            skipped.append(f"{version} (no wheel)")
            continue
        wheel = min(wheels, key=lambda f: ("none-any" not in f["filename"], "x86_64" not in f["filename"]))
        out.append(
            Release(
                version,
                _absolute(wheel["url"]),
                int(wheel["size"]),
                wheel["upload_time_iso_8601"][:10],
                all(f.get("yanked") for f in files),
            )
        )
    out.sort(key=lambda r: Version(r.version))
    return out, sorted(skipped, key=lambda s: Version(s.split()[0]))


def _range(url: str, start: int, end: int) -> bytes:
    """Bytes [start, end) of a file on the package host."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-{end - 1}"})  # noqa: S310 (https)
    for attempt in range(4):
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 (https URL from PyPI)
                data = cast(bytes, answer.read())
            if len(data) != end - start:
                raise OSError(f"short read: {len(data)} of {end - start} bytes")
            return data
        except OSError:
            if attempt == 3:
                raise
            time.sleep(2 * (attempt + 1))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class ZipEntry:
    name: str
    method: int
    compressed: int
    crc: int
    offset: int


def zip_entries(url: str, size: int) -> list[ZipEntry]:
    """The central directory of a remote zip (two ranged reads)."""
    tail = _range(url, max(0, size - 65536), size)
    end = tail.rfind(b"PK\x05\x06")
    if end < 0:
        raise OSError(f"{url}: no end of central directory (zip64 is not handled)")
    count, cd_size, cd_offset = struct.unpack("<HII", tail[end + 10 : end + 20])
    directory = _range(url, cd_offset, cd_offset + cd_size)
    entries: list[ZipEntry] = []
    pos = 0
    for _ in range(count):
        method, crc, compressed = struct.unpack("<H4xII", directory[pos + 10 : pos + 24])
        name_len, extra_len, comment_len = struct.unpack("<HHH", directory[pos + 28 : pos + 34])
        (offset,) = struct.unpack("<I", directory[pos + 42 : pos + 46])
        name = directory[pos + 46 : pos + 46 + name_len].decode()
        entries.append(ZipEntry(name, method, compressed, crc, offset))
        pos += 46 + name_len + extra_len + comment_len
    return entries


def extract(url: str, size: int, wanted: Callable[[str], bool], dest: Path) -> int:
    """Write the wanted members of a remote zip under ``dest``; ranged reads of neighbouring members are merged.
    Each member's CRC-32 is checked. Returns the bytes read."""
    entries = sorted(zip_entries(url, size), key=lambda e: e.offset)
    ends = [e.offset for e in entries[1:]] + [size]
    groups: list[tuple[int, int, list[ZipEntry]]] = []
    for entry, end in zip(entries, ends, strict=True):
        if not wanted(entry.name) or entry.name.endswith("/"):
            continue
        if groups and entry.offset - groups[-1][1] < 65536:
            groups[-1] = (groups[-1][0], end, [*groups[-1][2], entry])
        else:
            groups.append((entry.offset, end, [entry]))
    read = 0
    for start, end, members in groups:
        blob = _range(url, start, end)
        read += len(blob)
        for member in members:
            at = member.offset - start
            name_len, extra_len = struct.unpack("<HH", blob[at + 26 : at + 30])
            raw = blob[at + 30 + name_len + extra_len : at + 30 + name_len + extra_len + member.compressed]
            data = zlib.decompress(raw, -15) if member.method == 8 else raw
            if zlib.crc32(data) != member.crc:
                raise OSError(f"{url}: {member.name}: CRC mismatch")
            path = dest / member.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return read


#: Model files outside ``models/auto`` and the tokenizers that some release imports eagerly (4.40's auto classes import
#: the deprecated archive maps), found by running the gates.
EAGER_MODEL_FILES = ["deprecated/_archive_maps.py"]
#: Changes when the members extracted change: a cached release extracted with another selection is extracted again.
SELECTION = [*EAGER_MODEL_FILES, "tokenization_*"]


def _transformers_member(name: str) -> bool:
    """The wheel members the gates import: everything but the model implementations (the package ``__init__``
    files of ``transformers/models`` are kept: 4.x imports them eagerly), the auto classes, the tokenizers and
    EAGER_MODEL_FILES."""
    if name.startswith("transformers/models/"):
        rest = name[len("transformers/models/") :]
        if rest == "__init__.py" or rest.startswith("auto/") or rest in EAGER_MODEL_FILES:
            return True
        if rest.count("/") == 1 and rest.split("/")[1].startswith("tokenization_"):
            return True  # 5.18+: the GGUF tokenizer mapping imports several models' tokenizers
        return rest.count("/") == 1 and rest.endswith("__init__.py")
    return name.startswith("transformers/") or ".dist-info/" in name


def fetch_release(release: Release) -> Path:
    """The release's gate files, extracted once into the cache."""
    tree = CACHE / release.version
    done = tree / ".complete"
    if done.exists() and json.loads(done.read_text()).get("selection") == SELECTION:
        return tree
    partial = CACHE / f".{release.version}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    read = extract(release.url, release.size, _transformers_member, partial)
    stamp = {"url": release.url, "bytes_read": read, "selection": SELECTION}
    (partial / ".complete").write_text(json.dumps(stamp) + "\n")
    shutil.rmtree(tree, ignore_errors=True)
    partial.rename(tree)
    return tree


#: What transformers reads of bitsandbytes' ``__init__`` (4.45+): the stand-in has these only where the real one does.
BNB_DECLARATIONS = frozenset({"features", "supported_torch_devices"})


def _literal_sets(source: str) -> dict[str, list[str]]:
    """Module-level ``features = {...}`` / ``supported_torch_devices = {...}`` of bitsandbytes' ``__init__``."""
    out: dict[str, list[str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in BNB_DECLARATIONS:
                value = ast.literal_eval(node.value)
                out[name] = sorted(value)
    return out


def bnb_declarations(versions: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """What each bitsandbytes release's ``__init__.py`` declares for transformers to read, from its own wheel."""
    path = CACHE / "_bitsandbytes_init.json"
    known: dict[str, dict[str, list[str]]] = json.loads(path.read_text()) if path.exists() else {}
    missing = [v for v in versions if v not in known]
    if missing:
        releases = {r.version: r for r in pypi_releases("bitsandbytes")[0]}
        for version in missing:
            release = releases[version]
            with tempfile.TemporaryDirectory() as scratch:
                extract(release.url, release.size, lambda n: n == "bitsandbytes/__init__.py", Path(scratch))
                known[version] = _literal_sets((Path(scratch) / "bitsandbytes" / "__init__.py").read_text())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    return {v: known[v] for v in versions}


#: real_site() runs in the --jobs threads: the first two releases on an empty cache would both copy.
_SITE_LOCK = threading.Lock()


def real_site() -> Path:
    """The pure-Python packages the child imports for real (transformers needs packaging; 5.x typing_extensions),
    copied from this interpreter."""
    with _SITE_LOCK:
        return _real_site()


def _real_site() -> Path:
    import packaging
    import typing_extensions

    site = CACHE / "_site"
    stamp = f"packaging {packaging.__version__}\n"
    if (site / ".stamp").exists() and (site / ".stamp").read_text() == stamp:
        return site
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    shutil.copytree(Path(packaging.__file__).parent, site / "packaging")
    shutil.copy(typing_extensions.__file__, site / "typing_extensions.py")
    for dist in ("packaging", "typing_extensions"):
        from importlib.metadata import version

        info = site / f"{dist}-{version(dist)}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version(dist)}\n")
    (site / ".stamp").write_text(stamp)
    return site


# ================================================================================== the child: a simulated machine
# Everything below runs in ``python -S -s -P tools/oracle_transformers.py --child``: the standard library, the copied
# pure-Python packages, the release's extracted files and the stand-ins, nothing else.

#: Names of everything a stand-in answered by default (attribute reads and calls), per process.
READS: set[str] = set()


class _StandInType(type):
    """A stand-in class: reading an attribute nobody configured makes (and records) another stand-in class;
    calling one returns a falsy instance, or, called with one function alone, that function (a decorator)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        qualified = f"{cls.__qualname__}.{name}"
        READS.add(qualified)
        child = _StandInType(name, (StandIn,), {"__qualname__": qualified, "__module__": cls.__module__, "_leaf": True})
        setattr(cls, name, child)
        return child

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.__dict__.get("_leaf"):
            READS.add(f"{cls.__qualname__}()")
            if len(args) == 1 and not kwargs and callable(args[0]):
                return args[0]
            return type.__call__(cls)
        return type.__call__(cls, *args, **kwargs)

    def __iter__(cls) -> Iterator[Any]:
        return iter(())

    def __getitem__(cls, key: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    def __ror__(cls, other: Any) -> Any:
        return cls

    def __fspath__(cls) -> str:
        return f"/nonexistent/stand-in/{cls.__qualname__}"


class StandIn(metaclass=_StandInType):
    """Base of every stand-in class; its instances are falsy, empty, and answer any attribute."""

    _leaf = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(type(self), name)

    def __bool__(self) -> bool:
        return False

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return StandIn()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __getitem__(self, key: Any) -> Any:
        return StandIn()


class StandInModule(types.ModuleType):
    """A stand-in module: unconfigured attributes are stand-in classes, recorded in READS; the names in its
    ``_absent`` (what the real release does not define) raise AttributeError, as the real module does."""

    _absent: frozenset[str] = frozenset()

    def __getattr__(self, name: str) -> Any:
        if (name.startswith("__") and name.endswith("__")) or name in self._absent:
            raise AttributeError(name)
        qualified = f"{self.__name__}.{name}"
        READS.add(qualified)
        child = _StandInType(name, (StandIn,), {"__qualname__": qualified, "__module__": self.__name__, "_leaf": True})
        setattr(self, name, child)
        return child


class _Dtype:
    """torch.dtype: the gates compare dtypes and ask is_floating_point."""

    def __init__(self, name: str, floating: bool, itemsize: int) -> None:
        self.name, self.is_floating_point, self.itemsize = name, floating, itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Device:
    """torch.device("cuda:0") / torch.device("cpu") / torch.device(0)."""

    type: str
    index: int | None

    def __init__(self, spec: Any = "cpu", index: int | None = None) -> None:
        if isinstance(spec, _Device):
            spec, index = spec.type, spec.index
        if isinstance(spec, int):
            spec, index = "cuda", spec
        kind, _, number = str(spec).partition(":")
        if kind not in {"cpu", "cuda", "meta", "mps", "xpu", "npu", "hpu", "disk"}:
            raise RuntimeError(f"Expected one of cpu, cuda, ... device type at start of device string: {spec}")
        self.type = kind
        self.index = int(number) if number else index

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self) -> str:
        return self.type + (f":{self.index}" if self.index is not None else "")

    def __eq__(self, other: object) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def torch_api(version: str, cuda: bool, mps: bool) -> dict[str, dict[str, Any]]:
    """What torch answers for real in the simulation, by module: its version, the devices it sees, dtypes and
    devices. Everything else the gates read is a recorded stand-in (the table's header lists those names)."""
    dtypes = {
        name: _Dtype(name, floating, size)
        for name, floating, size in (
            ("float16", True, 2),
            ("bfloat16", True, 2),
            ("float32", True, 4),
            ("float64", True, 8),
            ("int8", False, 1),
            ("uint8", False, 1),
            ("int32", False, 4),
            ("int64", False, 8),
            ("bool", False, 1),
        )
    }
    dtypes |= {"half": dtypes["float16"], "float": dtypes["float32"], "long": dtypes["int64"]}
    return {
        "torch": {"__version__": version, "dtype": _Dtype, "device": _Device, **dtypes},
        "torch.version": {"cuda": "12.1" if cuda else None, "hip": None, "__version__": version},
        "torch.cuda": {
            "is_available": lambda: cuda,
            "device_count": lambda: 1 if cuda else 0,
            "current_device": lambda: 0,
            "is_initialized": lambda: cuda,
            "get_device_capability": lambda *a: (8, 0),
            "get_device_name": lambda *a: "stand-in GPU",
        },
        "torch.backends": {},
        "torch.backends.mps": {"is_available": lambda: mps, "is_built": lambda: mps},
        "torch.xpu": {"is_available": lambda: False, "device_count": lambda: 0},
        "torch.distributed": {"is_available": lambda: False, "is_initialized": lambda: False},
    }


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the stand-in packages present in the scenario (and their submodules), configured by ``api``."""

    def __init__(self, present: set[str], api: dict[str, dict[str, Any]]) -> None:
        self.present, self.api = present, api

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", maxsplit=1)[0] not in self.present:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True, origin=f"stand-in:{fullname}")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = StandInModule(spec.name)
        module.__path__ = []
        module.__file__ = f"/nonexistent/stand-in/{spec.name.replace('.', '/')}/__init__.py"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        for name, value in self.api.get(module.__name__, {}).items():
            setattr(module, name, value)
        parent, _, child = module.__name__.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
        prefix = module.__name__ + "."
        for sub in self.api:  # configured submodules exist as attributes, as torch.cuda does
            if sub.startswith(prefix) and "." not in sub[len(prefix) :]:
                importlib.import_module(sub)


def fake_distribution(site: Path, name: str, version: str, top_level: str) -> None:
    """Metadata that importlib.metadata (version(), packages_distributions()) finds for a stand-in."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(top_level + "\n")


class _Reached(Exception):
    """from_pretrained got past every gate: it reached replace_with_bnb_linear."""


class _Capture(logging.Handler):
    """The warnings a run emits: transformers' logger (WARNING and up) and warnings.warn."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())

    def showwarning(self, message: Warning | str, category: type[Warning], *rest: object, **kw: object) -> None:
        self.texts.append(f"{category.__name__}: {message}")

    def start(self) -> None:
        self.texts = []
        warnings.resetwarnings()
        warnings.simplefilter("always")
        warnings.showwarning = self.showwarning
        logger = logging.getLogger("transformers")
        if self not in logger.handlers:
            logger.addHandler(self)


def _site_of(exc: BaseException, tree: str) -> str:
    """Where in the release an exception was raised: ``path/in/package.py:function`` (line numbers move)."""
    site = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(tree):
            site = f"{os.path.relpath(frame.filename, tree + '/transformers')}:{frame.name}"
    return site


def _call_gate(tree: str, case: dict[str, Any]) -> tuple[str, Callable[[], Any]]:
    """The gate from_pretrained runs in this release, as a call: its name and the call."""
    # The release's own transformers, not this interpreter's: Any, never type-checked against the installed one.
    transformers: Any = importlib.import_module("transformers")

    bits, device_map, fp32 = case["bits"], case["device_map"], case["fp32_cpu_offload"]
    config_kwargs = {"load_in_4bit": bits == 4, "load_in_8bit": bits == 8, "llm_int8_enable_fp32_cpu_offload": fp32}
    # The user's BitsAndBytesConfig(...) is part of the gate: some releases check bitsandbytes' version there.
    config = transformers.BitsAndBytesConfig
    if os.path.exists(os.path.join(tree, "transformers", "quantizers", "quantizer_bnb_4bit.py")):
        auto: Any = importlib.import_module("transformers.quantizers.auto")
        get_hf_quantizer = getattr(auto, "get_hf_quantizer", None)
        if get_hf_quantizer is not None:
            import inspect

            offered = {
                "config": transformers.PretrainedConfig(),
                "dtype": None,
                "torch_dtype": None,
                "from_tf": False,
                "from_flax": False,
                "device_map": device_map,
                "weights_only": True,
                "user_agent": {},
            }
            wanted = inspect.signature(get_hf_quantizer).parameters
            offered = {k: v for k, v in offered.items() if k in wanted}
            return "get_hf_quantizer", lambda: get_hf_quantizer(quantization_config=config(**config_kwargs), **offered)

        def validate() -> None:
            quantizer = auto.AutoHfQuantizer.from_config(config(**config_kwargs), pre_quantized=False)
            quantizer.validate_environment(torch_dtype=None, from_tf=False, from_flax=False, device_map=device_map)

        return "validate_environment", validate

    # Before the quantizers (4.30-4.37) the gate is inline in from_pretrained, run for real on a stand-in model up
    # to replace_with_bnb_linear, which every check precedes.
    def reached(*args: Any, **kwargs: Any) -> Any:
        raise _Reached

    for module_name in ("transformers.utils.bitsandbytes", "transformers.integrations.bitsandbytes"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, "replace_with_bnb_linear"):
            module.replace_with_bnb_linear = reached  # type: ignore[attr-defined]
    integrations = sys.modules.get("transformers.integrations")
    if integrations is not None and "replace_with_bnb_linear" in dir(integrations):
        integrations.replace_with_bnb_linear = reached  # type: ignore[attr-defined]

    class TinyConfig(transformers.PretrainedConfig):  # type: ignore[misc]
        model_type = "bnbdoctor-oracle"

    class Tiny(transformers.PreTrainedModel):  # type: ignore[misc]
        """A causal LM's outline, as far as the gates look: two layers and an untied lm_head, last."""

        config_class = TinyConfig
        base_model_prefix = "model"
        _modules_named = ("model.layers.0", "model.layers.1", "lm_head")
        _lm_head = StandIn()

        def named_parameters(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Any]]:
            return iter([(f"{name}.weight", StandIn()) for name in self._modules_named])

        def named_modules(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Any]]:
            return iter([("", self), ("model", StandIn()), ("lm_head", self._lm_head)])

        def named_children(self) -> Iterator[tuple[str, Any]]:
            return iter([("model", StandIn()), ("lm_head", self._lm_head)])

        def get_output_embeddings(self) -> Any:
            return self._lm_head

        def tie_weights(self, *args: Any, **kwargs: Any) -> None:
            """Untied: nothing to tie."""

    kwargs: dict[str, Any] = {"config": TinyConfig(), "state_dict": {}}
    if device_map is not None:
        kwargs["device_map"] = device_map
    return "from_pretrained", lambda: Tiny.from_pretrained(None, quantization_config=config(**config_kwargs), **kwargs)


def _run_case(tree: str, case: dict[str, Any], capture: _Capture) -> dict[str, Any]:
    READS.clear()
    capture.start()
    row: dict[str, Any] = {"id": case["id"]}
    try:
        path, call = _call_gate(tree, case)
    except Exception as exc:  # noqa: BLE001 (the release could not even set the call up: that is the answer)
        return row | {
            "outcome": "error",
            "exc": type(exc).__name__,
            "msg": str(exc),
            "site": _site_of(exc, tree),
            "warn": capture.texts,
            "reads": sorted(READS),
        }
    row["path"] = path
    try:
        call()
    except _Reached:
        row["outcome"] = "pass"
    except Exception as exc:  # noqa: BLE001 (the gate's refusal, whatever its class, is the fact recorded)
        row |= {"outcome": "fail", "exc": type(exc).__name__, "msg": str(exc), "site": _site_of(exc, tree)}
    else:
        row["outcome"] = "pass"
    row["warn"] = capture.texts
    row["reads"] = sorted(READS)
    return row


def _emit(line: dict[str, Any]) -> None:
    data = (json.dumps(line) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def _wait(pid: int, seconds: float) -> str | None:
    """Wait for a forked child; None when it exited 0, else how it ended (it is killed after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                return None
            return f"exit status {status}"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return f"killed after {seconds:.0f} s"
        time.sleep(0.005)


def _run_group(job: dict[str, Any], index: int, group: dict[str, Any]) -> None:
    """In a forked process: build the environment, import the release, fork once per scenario."""
    env, tree = group["env"], job["tree"]
    site = Path(tempfile.mkdtemp(prefix="site-", dir=job["scratch"]))
    present: set[str] = set()
    for dist, (top, version) in job["deps"].items():
        fake_distribution(site, dist, version, top)
        present.add(top)
    api: dict[str, dict[str, Any]] = {}
    if env["torch"]:
        fake_distribution(site, "torch", env["torch"], "torch")
        present.add("torch")
        api |= torch_api(env["torch"], env["cuda"], env["mps"])
    if env["accelerate"]:
        fake_distribution(site, "accelerate", env["accelerate"], "accelerate")
        present.add("accelerate")
        api["accelerate"] = {"__version__": env["accelerate"]}
    if env["bitsandbytes"]:
        fake_distribution(site, "bitsandbytes", env["bitsandbytes"], "bitsandbytes")
        present.add("bitsandbytes")
        declared = job["bnb"][env["bitsandbytes"]]
        api["bitsandbytes"] = {"__version__": env["bitsandbytes"]} | {k: set(v) for k, v in declared.items()}
        api["bitsandbytes"]["_absent"] = BNB_DECLARATIONS - set(declared)
    sys.path[:0] = [str(site), job["site"], tree]
    sys.meta_path.insert(0, StandInFinder(present, api))
    capture = _Capture()
    capture.start()
    header: dict[str, Any] = {"group": index}
    try:
        import_utils: Any = importlib.import_module("transformers.utils.import_utils")

        avail = []
        for name in ("is_bitsandbytes_available", "is_accelerate_available", "is_torch_available"):
            avail.append(int(bool(getattr(import_utils, name)())))
        header["avail"] = "".join(map(str, avail))
        header["constants"] = {
            name: getattr(import_utils, name)
            for name in ("ACCELERATE_MIN_VERSION", "BITSANDBYTES_MIN_VERSION")
            if isinstance(getattr(import_utils, name, None), str)
        }
    except Exception as exc:  # noqa: BLE001 (the release does not import here: every scenario says so)
        header |= {"import_error": f"{type(exc).__name__}: {exc}", "site": _site_of(exc, tree)}
    header["warn"] = capture.texts
    header["reads"] = sorted(READS)
    _emit(header)
    if "import_error" in header:
        return
    # What every scenario's gate imports, imported once before the forks (a failure is left to the scenarios).
    for name in ("transformers.quantizers.auto", "transformers.modeling_utils"):
        if os.path.exists(os.path.join(tree, *name.split(".")[:-1], name.split(".")[-1] + ".py")):
            with contextlib.suppress(Exception):
                importlib.import_module(name)
            break
    for case in group["cases"]:
        pid = os.fork()
        if pid == 0:
            try:
                signal.alarm(CASE_TIMEOUT)
                _emit(_run_case(tree, case, capture))
            finally:
                os._exit(0)
        ended = _wait(pid, CASE_TIMEOUT + 5)
        if ended:
            _emit({"id": case["id"], "outcome": "error", "exc": "Harness", "msg": ended, "site": "?", "warn": []})


def child_main() -> int:
    job = json.load(sys.stdin)
    logging.basicConfig(level=logging.CRITICAL)
    for index, group in enumerate(job["groups"]):
        pid = os.fork()
        if pid == 0:
            try:
                signal.alarm(GROUP_TIMEOUT)
                _run_group(job, index, group)
            except BaseException:  # noqa: BLE001 (anything at all: the parent reads the trace)
                traceback.print_exc()
            finally:
                os._exit(0)
        ended = _wait(pid, GROUP_TIMEOUT + 5)
        if ended:
            _emit({"group": index, "import_error": f"Harness: {ended}", "warn": [], "reads": []})
    return 0


# ================================================================================== the parent: run, collect, write
#: Import names of transformers' dependencies where they differ from the distribution's name.
IMPORT_NAMES = {"huggingface-hub": "huggingface_hub", "pyyaml": "yaml", "typer-slim": "typer"}
#: What transformers imports without declaring it (huggingface_hub 1.x brings httpx; 5.x imports it directly).
UNDECLARED = {"httpx": "0.28.1"}
#: Real packages (REAL_SITE), not stand-ins.
REAL = {"packaging", "typing-extensions", "typing_extensions"}


#: What ``dependency_versions_check`` requires at import, where the release's ``dependency_versions_table`` names it
#: (5.25 checks filelock without declaring it).
CHECKED_AT_IMPORT = (
    "filelock",
    "huggingface-hub",
    "numpy",
    "pyyaml",
    "regex",
    "requests",
    "safetensors",
    "tokenizers",
    "tqdm",
)


def dependency_versions(tree: Path) -> dict[str, tuple[str, str]]:
    """The stand-in dependencies (the release's unconditional Requires-Dist, what its import-time check requires,
    and UNDECLARED) and the version each one's metadata claims: the lowest its requirement accepts, so the
    release's import-time version check passes."""
    from packaging.requirements import Requirement

    (metadata,) = tree.glob("transformers-*.dist-info/METADATA")
    requirements = [
        line.split(":", 1)[1].strip() for line in metadata.read_text().splitlines() if line.startswith("Requires-Dist:")
    ]
    table: dict[str, str] = {}
    for node in ast.parse((tree / "transformers" / "dependency_versions_table.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "deps":
            table = ast.literal_eval(node.value)
    requirements += [table[name] for name in CHECKED_AT_IMPORT if name in table]
    out: dict[str, tuple[str, str]] = {}
    for text in requirements:
        requirement = Requirement(text)
        name = requirement.name.lower()
        if name in out or name in REAL or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        specifier = requirement.specifier
        candidates = [s.version for s in specifier if s.operator in {">=", "==", "~="}] + ["1.0", "0.1"]
        out[name] = (
            IMPORT_NAMES.get(name, name.replace("-", "_")),
            next(v for v in candidates if specifier.contains(v)),
        )
    for name, version in UNDECLARED.items():
        out.setdefault(name, (name, version))
    return out


@dataclass
class ReleaseRun:
    release: Release
    path: str = "?"
    constants: dict[str, str] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def run_release(release: Release, plan: Sequence[Scenario], bnb: dict[str, dict[str, list[str]]]) -> ReleaseRun:
    """Every scenario against one release, in one child process (one fork per environment and per scenario)."""
    started = time.monotonic()
    tree = fetch_release(release)
    groups: dict[str, tuple[Environment, list[Scenario]]] = {}
    for scenario in plan:
        groups.setdefault(scenario.env.key(), (scenario.env, []))[1].append(scenario)
    ordered = list(groups.values())
    job = {
        "tree": str(tree),
        "site": str(real_site()),
        "deps": dependency_versions(tree),
        "bnb": bnb,
        "groups": [
            {
                "env": env.__dict__,
                "cases": [
                    {
                        "id": s.id,
                        "bits": s.bits,
                        "device_map": DEVICE_MAPS[s.device_map],
                        "fp32_cpu_offload": s.fp32_cpu_offload,
                    }
                    for s in cases
                ],
            }
            for env, cases in ordered
        ],
    }
    run = ReleaseRun(release)
    with tempfile.TemporaryDirectory(prefix="oracle-transformers-") as scratch:
        job["scratch"] = scratch
        proc = subprocess.run(
            # -S -s -P: no site-packages, no user site, not the script's folder on sys.path. Not -I: its -E would
            # ignore PYTHONHASHSEED, and messages print sets (bitsandbytes' supported devices) in hash order.
            [sys.executable, "-S", "-s", "-P", str(Path(__file__).resolve()), "--child"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=GROUP_TIMEOUT * (len(ordered) + 1),
            check=False,
            cwd=scratch,
            env={"PYTHONHASHSEED": "0", "HOME": scratch, "PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"},
        )
    by_id: dict[str, dict[str, Any]] = {}
    headers: dict[int, dict[str, Any]] = {}
    for line in proc.stdout.splitlines():
        answer = json.loads(line)
        if "group" in answer:
            headers[answer["group"]] = answer
        else:
            by_id[answer["id"]] = answer
    if proc.returncode or "Traceback" in proc.stderr:
        run.errors.append(f"child: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    for index, (_env, cases) in enumerate(ordered):
        header = headers.get(index, {"import_error": "Harness: the environment reported nothing", "warn": []})
        run.constants |= header.get("constants", {})
        run.reads.update(header.get("reads", []))
        for scenario in cases:
            if "import_error" in header:
                kind, _, message = header["import_error"].partition(": ")
                row = {"outcome": "error", "exc": kind, "msg": message, "site": header.get("site", "?"), "warn": []}
            else:
                row = by_id.get(scenario.id) or {"outcome": "error", "exc": "Harness", "msg": "no answer", "warn": []}
            row = dict(row, id=scenario.id, avail=header.get("avail"), import_warn=header.get("warn", []))
            if row.get("path"):
                run.path = row["path"]
            run.reads.update(row.pop("reads", []))
            if row["outcome"] == "error":
                run.errors.append(f"{scenario.id}: {row.get('exc')}: {row.get('msg', '')[:300]} at {row.get('site')}")
            run.rows.append(row)
    run.seconds = time.monotonic() - started
    return run


def _sample(releases: Sequence[Release], count: int, today: datetime.date) -> list[Release]:
    """``count`` releases spread over the list, rotating with the date: the oldest, the newest and one chosen by the
    day of the year are always different ones from one day to the next."""
    n = len(releases)
    start = today.toordinal() % n
    return [releases[(start + i * n // count) % n] for i in range(count)]


# ================================================================================== the table
STAND_INS = (
    "Interpreter started with -S -s -P, PYTHONHASHSEED=0 and HOME in a scratch folder (no site-packages). Real: the "
    "release's own files (every wheel member but the model implementations), packaging and typing_extensions. "
    "Stand-ins, with .dist-info metadata: torch, accelerate and bitsandbytes at the scenario's versions (absent when "
    "it says so); the release's unconditional Requires-Dist (huggingface_hub, tokenizers, safetensors, numpy, ...) "
    "and httpx at the lowest version each requirement allows. "
    "torch answers __version__, version.cuda, cuda.is_available/device_count/current_device, "
    "backends.mps.is_available, xpu.is_available, dtypes and torch.device for real; every other attribute is a falsy "
    "stand-in, recorded in 'reads'. bitsandbytes carries the features/supported_torch_devices of its real "
    "__init__.py. 4.30-4.37 run from_pretrained on a stand-in causal LM (two layers and an untied lm_head) until "
    "replace_with_bnb_linear."
)


#: What stands in the table where a release's message cites a thread kept held out (../shared/reference/
#: heldout_threads.sha256): such threads measure bnbdoctor on what it was not built on, so no file here cites one.
HELD_OUT = "<a held-out URL>"


def without_held_out(text: str) -> str:
    """``text`` with every URL that ``../shared/tools/heldout_check.py`` flags replaced by :data:`HELD_OUT`
    (unchanged where that tool is not beside the checkout)."""
    tools = ROOT.parent / "shared" / "tools"
    if not (tools / "heldout_check.py").is_file():
        return text
    sys.path.insert(0, str(tools))
    try:
        from heldout_check import URL, is_heldout  # type: ignore[import-not-found]  # beside the checkout
    finally:
        sys.path.remove(str(tools))
    scrubbed: str = URL.sub(lambda m: HELD_OUT if is_heldout(m.group(0)) else m.group(0), text)
    return scrubbed


def build_table(runs: Sequence[ReleaseRun], skipped: Sequence[str], reasons: list[Any]) -> dict[str, Any]:
    """The committed document: header, id tables (messages, warnings) and one row per release and scenario."""
    import packaging

    plan = scenarios()
    messages: dict[tuple[str, str, str], int] = {}
    texts: dict[str, int] = {}
    rows: list[list[Any]] = []
    releases: dict[str, Any] = {}
    reads: dict[str, int] = {}
    for run in runs:
        releases[run.release.version] = {
            "uploaded": run.release.uploaded,
            "yanked": run.release.yanked,
            "gate": run.path,
            "constants": run.constants,
        }
        for name in run.reads:
            if name.split(".")[0] in {"torch", "accelerate", "bitsandbytes"}:
                reads[name] = reads.get(name, 0) + 1
        for row in run.rows:
            message = None
            if row["outcome"] != "pass":
                key = (row.get("exc", "?"), row.get("site", "?"), row.get("msg", ""))
                message = messages.setdefault(key, len(messages))
            warned = sorted({texts.setdefault(t, len(texts)) for t in [*row["import_warn"], *row["warn"]]})
            line: list[Any] = [run.release.version, row["id"], row["outcome"], row["avail"]]
            if message is not None or warned:
                line.append(message)
            if warned:
                line.append(warned)
            rows.append(line)
    return {
        "source": "https://pypi.org/pypi/transformers/json: every final release from 4.30.0, its own gate code run "
        "by tools/oracle_transformers.py against simulated environments",
        "generated": datetime.date.today().isoformat(),
        "python": sys.version.split()[0],
        "packaging": packaging.__version__,
        "stand_ins": STAND_INS,
        "skipped": list(skipped),
        "row": "[release, scenario, outcome (pass|fail|error), is_bitsandbytes/accelerate/torch_available() as 0/1, "
        "message id (exception class, raise site, text) or null, warning ids]",
        "reasons": reasons,
        "bitsandbytes_declarations": bnb_declarations(sorted({s.env.bitsandbytes for s in plan if s.env.bitsandbytes})),
        "reads": dict(sorted(reads.items())),
        "releases": releases,
        "scenarios": {s.id: s.describe() for s in plan},
        "messages": [[exc, site, without_held_out(text)] for exc, site, text in messages],
        "warnings": [without_held_out(text) for text in texts],
        "rows": rows,
    }


def dump_table(table: dict[str, Any]) -> str:
    """JSON with one entry per line in the long sections (releases, scenarios, messages, warnings, rows)."""
    lines = ["{"]
    items = list(table.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key in {"releases", "scenarios", "messages", "warnings", "rows", "reasons", "reads"} and value:
            opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
            compact = {"separators": (",", ":")} if key == "rows" else {}
            entries = (
                [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items()]
                if isinstance(value, dict)
                else [f"  {json.dumps(v, **compact)}" for v in value]  # type: ignore[arg-type]
            )
            lines.append(f" {json.dumps(key)}: {opener}")
            lines.append(",\n".join(entries))
            lines.append(f" {closer}{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def load_table(path: Path = TABLE) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))


# ================================================================================== the table against bnbdoctor
@dataclass(frozen=True)
class Disagreement:
    """A row where bnbdoctor's model (knowledge/transformers.py bnb_gate, the log families) differs from the release."""

    release: str
    scenario: str
    check: str  # outcome | family | message | site | available | harness
    real: str
    model: str
    reason: str | None = None  # the table's written reason, when one covers it

    def __str__(self) -> str:
        why = f" [reason: {self.reason}]" if self.reason else ""
        return f"{self.release} {self.scenario}: {self.check}: release {self.real!r}, bnbdoctor {self.model!r}{why}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _site(site: str) -> str:
    """``quantizers/quantizer_bnb_4bit.py:validate_environment`` -> ``quantizer_bnb_4bit.validate_environment``."""
    path, _, function = site.partition(":")
    return f"{Path(path).stem}.{function}"


def log_families(exc: str, text: str, cache: dict[str, frozenset[str]]) -> frozenset[str]:
    """The message families bnbdoctor's log reader files ``exc: text`` under (roots and consequences only)."""
    line = f"{exc}: {text}"
    if line not in cache:
        from bnbdoctor.knowledge.signatures import CONSEQUENCE, ROOT, SIGNATURES
        from bnbdoctor.logs.extract import extract_text

        log = extract_text(line).log
        found = {m.signature for m in (log.matches if log else [])}
        cache[line] = frozenset(f for f in found if SIGNATURES[f].role in {ROOT, CONSEQUENCE})
    return cache[line]


def _reason(reasons: Sequence[dict[str, Any]], release: str, scenario: str, check: str) -> str | None:
    """The written reason that covers a disagreement: its releases ([first, below)), check and scenario prefixes
    (``no-bnb``: both bit widths; ``8:no-bnb``: one)."""
    from bnbdoctor.knowledge.ranges import VersionRange

    for entry in reasons:
        first, below = entry["releases"]
        if not VersionRange(first, below, "reason").contains(release) or check not in entry["checks"]:
            continue
        name = scenario.split(":", 1)[1]
        if any(name.startswith(p) or scenario.startswith(p) for p in entry.get("scenarios", [""])):
            return str(entry["why"])
    return None


def disagreements(table: dict[str, Any]) -> list[Disagreement]:
    """Every row on which bnbdoctor's model and the release disagree (with the written reason where one covers it)."""
    families: dict[str, frozenset[str]] = {}
    out: list[Disagreement] = []
    for row in table["rows"]:
        release, scenario, outcome, avail = row[:4]
        message = table["messages"][row[4]] if len(row) > 4 and row[4] is not None else None
        found = _row_disagreements(table, release, scenario, outcome, avail, message, families)
        for check, real, predicted in found:
            reason = _reason(table["reasons"], release, scenario, check)
            out.append(Disagreement(release, scenario, check, real, predicted, reason))
    return out


def gate_input(table: dict[str, Any], release: str, scenario: str) -> Any:
    """The model's input for a row: the scenario, and what the patient probe reads of the release (its
    BITSANDBYTES_MIN_VERSION)."""
    from bnbdoctor.knowledge.transformers import GateInput

    s = table["scenarios"][scenario]
    return GateInput(
        transformers=release,
        bits=s["bits"],
        bitsandbytes=s["bitsandbytes"],
        accelerate=s["accelerate"],
        torch=s["torch"],
        cuda=s["cuda"],
        mps=s["mps"],
        device_map=DEVICE_MAPS[s["device_map"]],
        fp32_cpu_offload=s["fp32_cpu_offload"],
        bnb_minimum=table["releases"][release]["constants"].get("BITSANDBYTES_MIN_VERSION"),
    )


def _row_disagreements(
    table: dict[str, Any],
    release: str,
    scenario: str,
    outcome: str,
    avail: str | None,
    message: list[str] | None,
    families: dict[str, frozenset[str]],
) -> list[tuple[str, str, str]]:
    from bnbdoctor.knowledge import transformers as model

    if outcome == "error":
        return [("harness", f"{message}", "a row the tool could not run")]
    g = gate_input(table, release, scenario)
    found: list[tuple[str, str, str]] = []
    predicted = (
        f"{int(model.bitsandbytes_available(g))}{int(model.accelerate_available(g))}{int(model._torch_usable(g))}"
    )
    if avail != predicted:
        found.append(("available", str(avail), predicted))
    refusal = model.bnb_gate(g)
    if outcome == "pass" or refusal is None:
        if (outcome == "pass") != (refusal is None):
            real = (
                "passes"
                if outcome == "pass"
                else f"{message[0] if message else '?'}: {_flat(message[2])[:120] if message else ''}"
            )
            found.append(("outcome", real, "passes" if refusal is None else f"refused: {refusal.kind}"))
        return found
    assert message is not None
    exc, site, text = message
    logged = log_families(exc, text, families)
    expected = frozenset({refusal.family} if refusal.family else set())
    if logged != expected:
        found.append(("family", ",".join(sorted(logged)) or "none", ",".join(sorted(expected)) or "none"))
    if _flat(refusal.message) not in _flat(text):
        found.append(("message", _flat(text)[:160], refusal.message))
    if _site(site) != refusal.site:
        found.append(("site", _site(site), refusal.site))
    return found


def summary(table: dict[str, Any], found: Sequence[Disagreement] | None = None) -> str:
    """``R releases, N scenarios, D disagreements`` (N: rows, one scenario run against one release; D: those without
    a written reason). ``found``: the table's disagreements, when already computed."""
    found = disagreements(table) if found is None else found
    open_ = [d for d in found if d.reason is None]
    explained = len(found) - len(open_)
    return (
        f"{len(table['releases'])} releases, {len(table['rows'])} scenarios, {len(open_)} disagreements"
        f" ({len(table['scenarios'])} scenarios per release; {explained} more with a written reason in the table)"
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="*", help="only these transformers releases (default: all from 4.30.0)")
    parser.add_argument("--sample", type=int, help="only N releases, chosen by today's date")
    parser.add_argument("--out", help=f"where to write the table ('-': stdout; default {TABLE.relative_to(ROOT)})")
    parser.add_argument("--jobs", type=int, default=2, help="releases run at once (default 2)")
    parser.add_argument("--raw", action="store_true", help="print each release's raw rows (debugging)")
    parser.add_argument(
        "--summary", action="store_true", help="compare the table (--out, default the committed one) with bnbdoctor"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main()
    if args.summary:
        table = load_table(Path(args.out) if args.out else TABLE)
        found = disagreements(table)
        print(summary(table, found))
        for item in found:
            if item.reason is None:
                print(f"  {item}")
        return 0
    releases, skipped = pypi_releases("transformers")
    if args.releases:
        releases = [r for r in releases if r.version in set(args.releases)]
    if args.sample:
        releases = _sample(releases, args.sample, datetime.date.today())
    plan = scenarios()
    bnb = bnb_declarations(sorted({s.env.bitsandbytes for s in plan if s.env.bitsandbytes}))
    started = time.monotonic()
    runs: list[ReleaseRun] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for run in pool.map(lambda r: run_release(r, plan, bnb), releases):
            runs.append(run)
            print(f"{run.release.version}: {run.path}, {len(run.rows)} rows, {run.seconds:.1f} s", file=sys.stderr)
            for error in run.errors[:5]:
                print(f"  error: {error}", file=sys.stderr)
            if args.raw:
                for row in run.rows:
                    print(json.dumps(row))
    print(f"{len(runs)} releases in {time.monotonic() - started:.0f} s", file=sys.stderr)
    if args.raw:
        return 0
    out = Path(args.out) if args.out and args.out != "-" else TABLE
    reasons = load_table(TABLE).get("reasons", []) if TABLE.exists() else []
    text = dump_table(build_table(runs, skipped, reasons))
    if args.out == "-":
        sys.stdout.write(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({sum(len(r.rows) for r in runs)} rows)", file=sys.stderr)
    errors = sum(len(r.errors) for r in runs)
    if errors:
        print(f"{errors} rows the harness could not run (outcome 'error'): fix the stand-ins", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
