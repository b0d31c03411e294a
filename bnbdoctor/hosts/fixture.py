"""FixtureHost: answers from a machine recorded in ``platform_fixtures/<name>/``.

A fixture is a ``machine.json`` manifest (OS, environment, NVML answers, command outputs, the
patient interpreter's facts) plus a ``root/`` folder holding the machine's files at their paths.
Windows paths map drive letters to top folders (``C:\\Windows`` is ``root/C/Windows``) and are
matched case-insensitively, as Windows does. Symlinks inside ``root/`` with absolute targets are
re-rooted, so a recorded ``/usr/local/cuda -> /usr/local/cuda-12.1`` resolves inside the fixture.
The format is documented in ``platform_fixtures/README.md``.
"""

from __future__ import annotations

import json
import ntpath
import os
import posixpath
from dataclasses import fields
from pathlib import Path
from typing import Any

from bnbdoctor.environment import check_allowed
from bnbdoctor.facts import OsInfo
from bnbdoctor.hosts.base import (
    DEFAULT_READ_LIMIT,
    DEFAULT_TIMEOUT_S,
    CommandResult,
    CurrentPython,
    FileReader,
    Host,
    NvmlAnswer,
    NvmlDevice,
    PythonRun,
    open_file_reader,
    read_at_most,
)

MANIFEST = "machine.json"
FORMAT_VERSION = 1
_MAX_LINK_HOPS = 40


class FixtureError(ValueError):
    """A fixture that is missing or malformed; the message is one line for the user."""


def fixtures_dir() -> Path:
    """Where recorded machines live: ``$BNBDOCTOR_FIXTURES``, the checkout's ``platform_fixtures/``, or the
    copy an install carries (:mod:`bnbdoctor.hosts.fixture_store`)."""
    from bnbdoctor.hosts.fixture_store import fixtures_dir as located

    try:
        return located()
    except OSError as exc:  # the packed copy could not be unpacked (a full disk, no symlinks on Windows)
        raise FixtureError(f"cannot unpack the recorded machines this install carries: {exc}") from None


def list_fixtures() -> list[tuple[str, str]]:
    """(name, description) of every recorded machine, sorted by name."""
    base = fixtures_dir()
    found = []
    for manifest in sorted(base.glob(f"*/{MANIFEST}")):
        try:
            description = json.loads(manifest.read_text(encoding="utf-8")).get("description", "")
        except (OSError, ValueError):
            description = "(unreadable manifest)"
        found.append((manifest.parent.name, str(description)))
    return found


def resolve_fixture(name_or_path: str) -> Path:
    """A fixture folder from a name in ``platform_fixtures/`` or a path to a folder/manifest."""
    candidate = Path(name_or_path)
    if candidate.name == MANIFEST:
        candidate = candidate.parent
    if not (candidate / MANIFEST).is_file():
        candidate = fixtures_dir() / name_or_path
    if not (candidate / MANIFEST).is_file():
        known = ", ".join(name for name, _ in list_fixtures()) or "none"
        raise FixtureError(f"no recorded machine named {name_or_path!r} (known: {known})")
    return candidate


class FixtureHost(Host):
    """A recorded machine. Nothing here touches the real machine beyond the fixture folder."""

    kind = "fixture"

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.name = self.folder.name
        self.label = f"fixture {self.name}"
        self.root = self.folder / "root"
        try:
            raw = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        except OSError as exc:
            raise FixtureError(f"cannot read {self.folder / MANIFEST}: {exc.strerror}") from None
        except RecursionError:
            raise FixtureError(f"{self.folder / MANIFEST} is nested too deeply to be a manifest") from None
        except ValueError as exc:  # also UnicodeDecodeError, and an integer of thousands of digits
            why = " ".join(str(exc).split())[:200]
            raise FixtureError(f"{self.folder / MANIFEST} is not valid JSON: {why}") from None
        if not isinstance(raw, dict):
            raise FixtureError(f"{self.folder / MANIFEST} must hold a JSON object")
        _check_records(raw, self.folder)
        if raw.get("format") != FORMAT_VERSION:
            raise FixtureError(f"{self.folder / MANIFEST}: format {raw.get('format')!r} is not {FORMAT_VERSION}")
        self.manifest: dict[str, Any] = raw
        self._os = _os_info_from(raw.get("os"), self.folder)
        env = raw.get("env") or {}
        if not isinstance(env, dict):
            raise FixtureError(f"{self.folder / MANIFEST}: 'env' must be an object")
        windows = self._os.system == "Windows"
        self._env = {(k.upper() if windows else k): str(v) for k, v in env.items()}
        self._nvml = _nvml_from(raw.get("nvml"), self.folder)
        commands = raw.get("commands") or []
        if not isinstance(commands, list) or not all(isinstance(c, dict) for c in commands):
            raise FixtureError(f"{self.folder / MANIFEST}: 'commands' must be a list of objects")
        self._commands: list[dict[str, Any]] = commands

    @classmethod
    def named(cls, name_or_path: str) -> FixtureHost:
        return cls(resolve_fixture(name_or_path))

    @property
    def expectations(self) -> dict[str, Any]:
        return dict(self.manifest.get("expect") or {})

    # -- Host --------------------------------------------------------------------------------

    def os_info(self) -> OsInfo:
        return self._os

    def getenv(self, name: str) -> str | None:
        canonical = check_allowed(name)
        if self._os.system == "Windows":
            return self._env.get(canonical)
        return self._env.get(canonical) if canonical in self._env else self._env.get(name)

    def read_bytes(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> bytes | None:
        local = self._local(path)
        if local is None or not local.is_file():
            return None
        try:
            with open(local, "rb") as handle:
                return read_at_most(handle, limit)
        except OSError:
            return None

    def open_reader(self, path: str) -> FileReader | None:
        local = self._local(path)
        return open_file_reader(str(local)) if local is not None and local.is_file() else None

    def is_file(self, path: str) -> bool:
        local = self._local(path)
        return local is not None and local.is_file()

    def is_dir(self, path: str) -> bool:
        local = self._local(path)
        return local is not None and local.is_dir()

    def list_dir(self, path: str) -> list[str] | None:
        local = self._local(path)
        if local is None or not local.is_dir():
            return None
        return sorted(entry.name for entry in local.iterdir())

    def realpath(self, path: str) -> str:
        resolved = self._resolve(path)
        return path if resolved is None else resolved

    def run(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        record = self._find_command(argv)
        if record is None:
            return CommandResult(tuple(argv), None, error="not found")
        return _command_from(record, argv)

    def _run_python(self, run: PythonRun) -> CommandResult:
        return self.replay_stderr(self._recorded_python(run.executable, run.purpose, run.timeout), run.on_stderr_line)

    def _recorded_python(self, executable: str, purpose: str, timeout: float) -> CommandResult:
        """The recorded answer of ``executable`` to the ``purpose`` script."""
        argv = (executable, "-B", "-c", f"<{purpose} script>")
        pythons = [self.manifest.get("python") or {}, *(self.manifest.get("other_pythons") or [])]
        for python in pythons:
            if python.get("executable") not in (executable, self.realpath(executable)):
                continue
            if purpose != "facts":
                record = python.get(purpose)
                if record is None:
                    return CommandResult(argv, None, error=f"no {purpose} answer recorded for this machine")
                if record.get("timed_out"):
                    return CommandResult(argv, None, timed_out=True, duration_s=timeout)
                stdout = json.dumps(record.get("result", record))
                return CommandResult(argv, int(record.get("returncode", 0)), stdout, str(record.get("stderr", "")))
            if python.get("timed_out"):
                return CommandResult(argv, None, timed_out=True, duration_s=timeout)
            if python.get("error"):
                return CommandResult(argv, None, error=str(python["error"]))
            if "stdout" in python:
                stderr = str(python.get("stderr", ""))
                return CommandResult(argv, int(python.get("returncode", 0)), str(python["stdout"]), stderr)
            return CommandResult(argv, 0, json.dumps(python.get("facts") or {}))
        if self.is_file(executable):
            return CommandResult(argv, 1, "", "recorded machine has no answer for this interpreter")
        return CommandResult(argv, None, error="not found")

    def nvml(self, timeout: float = 5.0) -> NvmlAnswer:
        return self._nvml

    def current_python(self) -> CurrentPython:
        record = self.manifest.get("python") or {}
        return CurrentPython(str(record.get("executable") or "python3"), bool(record.get("isolated_tool_env")))

    # -- path mapping ------------------------------------------------------------------------

    def _split(self, path: str) -> list[str]:
        """A host path as components below ``root/`` (drive letter first on Windows)."""
        if self._os.system == "Windows":
            drive, rest = ntpath.splitdrive(ntpath.normpath(path))
            parts = [p for p in rest.replace("/", "\\").split("\\") if p not in ("", ".")]
            return ([drive.rstrip(":").upper()] if drive else []) + parts
        return [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]

    def _join(self, parts: list[str]) -> str:
        if self._os.system == "Windows":
            return (parts[0] + ":\\" + "\\".join(parts[1:])) if parts else "C:\\"
        return "/" + "/".join(parts)

    def _resolve(self, path: str) -> str | None:
        """Resolve symlinks inside the fixture; None when a component does not exist."""
        pending = self._split(path)
        done: list[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            actual = self._match(done, part)
            if actual is None:
                return None
            local = self.root.joinpath(*done, actual)
            if local.is_symlink():
                hops += 1
                if hops > _MAX_LINK_HOPS:
                    return None
                target = os.readlink(local)
                if target.startswith("/") or (self._os.system == "Windows" and ntpath.isabs(target)):
                    pending = self._split(target) + pending
                    done = []
                else:
                    pending = self._split_relative(target) + pending
                continue
            done.append(actual)
        return self._join(done)

    def _split_relative(self, target: str) -> list[str]:
        sep = "\\" if self._os.system == "Windows" else "/"
        return [p for p in target.replace("/", sep).split(sep) if p not in ("", ".")]

    def _match(self, parts: list[str], name: str) -> str | None:
        parent = self.root.joinpath(*parts)
        candidate = parent / name
        try:
            if candidate.exists() or candidate.is_symlink():
                return name
        except OSError:  # a name no file system holds (too long): not in the fixture
            return None
        if self._os.system == "Windows" and parent.is_dir():
            for entry in parent.iterdir():
                if entry.name.lower() == name.lower():
                    return entry.name
        return None

    def _local(self, path: str) -> Path | None:
        if not path:
            return None
        resolved = self._resolve(path)
        if resolved is None:
            return None
        local = self.root.joinpath(*self._split(resolved))
        try:
            local.resolve().relative_to(self.root.resolve())
        except ValueError:
            return None  # never read outside the fixture
        return local

    def _find_command(self, argv: list[str]) -> dict[str, Any] | None:
        wanted = list(argv)
        for record in self._commands:
            if list(record.get("argv") or []) == wanted:
                return record
        base = self.pathmod.basename(argv[0]) if argv else ""
        for record in self._commands:
            recorded = list(record.get("argv") or [])
            if recorded and self.pathmod.basename(recorded[0]) == base and recorded[1:] == wanted[1:]:
                return record
        return None


#: The type each recorded field may have (a manifest is checked once, when it is read, so that the
#: probes asking the host never meet a wrong type).
_COMMAND_FIELDS: dict[str, tuple[type, ...]] = {
    "argv": (list,),
    "returncode": (int, type(None)),
    "stdout": (str,),
    "stderr": (str,),
    "timed_out": (bool,),
    "error": (str, type(None)),
    "duration_s": (int, float),
}
_PYTHON_FIELDS: dict[str, tuple[type, ...]] = {
    "executable": (str,),
    "returncode": (int,),
    "stdout": (str,),
    "timed_out": (bool,),
    "isolated_tool_env": (bool,),
    "facts": (dict, type(None)),
}
_DEVICE_FIELDS: dict[str, tuple[type, ...]] = {
    "memory_total_bytes": (int, type(None)),
    "memory_free_bytes": (int, type(None)),
    "uuid": (str, type(None)),
    "pci_bus_id": (str, type(None)),
}
#: No recorded number (a return code, a byte count, seconds) comes near this.
_MAX_NUMBER = 2**64


def _check_fields(record: object, fields_: dict[str, tuple[type, ...]], where: str) -> None:
    if not isinstance(record, dict):
        raise FixtureError(f"{where} must be an object")
    for key, types in fields_.items():
        if key not in record:
            continue
        value = record[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise FixtureError(f"{where}: {key!r} must be {' or '.join(t.__name__ for t in types)}")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) < _MAX_NUMBER:
            raise FixtureError(f"{where}: {key!r} is not a plausible number")


def _check_records(raw: dict[str, Any], folder: Path) -> None:
    """Types of the recorded commands, interpreters and GPUs, checked before any probe reads them."""
    where = f"{folder / MANIFEST}"
    commands = raw.get("commands") or []
    if isinstance(commands, list):
        for index, record in enumerate(commands):
            _check_fields(record, _COMMAND_FIELDS, f"{where}: commands[{index}]")
            if not all(isinstance(a, str) for a in record.get("argv") or []):
                raise FixtureError(f"{where}: commands[{index}]: 'argv' must be a list of strings")
    others = raw.get("other_pythons") or []
    if not isinstance(others, list):
        raise FixtureError(f"{where}: 'other_pythons' must be a list of objects")
    for index, python in enumerate([raw.get("python") or {}, *others]):
        _check_fields(python, _PYTHON_FIELDS, f"{where}: python[{index}]")
        for purpose, record in python.items():
            if purpose not in _PYTHON_FIELDS and purpose != "error" and record is not None:
                _check_fields(record, {"returncode": (int,), "timed_out": (bool,)}, f"{where}: python.{purpose}")
    nvml = raw.get("nvml")
    if isinstance(nvml, dict) and isinstance(nvml.get("devices"), list):
        for index, device in enumerate(nvml["devices"]):
            _check_fields(device, _DEVICE_FIELDS, f"{where}: nvml.devices[{index}]")
    if "expect" in raw and not isinstance(raw["expect"], (dict, type(None))):
        raise FixtureError(f"{where}: 'expect' must be an object")


def _os_info_from(raw: object, folder: Path) -> OsInfo:
    if not isinstance(raw, dict) or raw.get("system") is None or raw.get("machine") is None:
        raise FixtureError(f"{folder / MANIFEST}: 'os' needs at least 'system' and 'machine'")
    known = {f.name for f in fields(OsInfo)}
    unknown = set(raw) - known
    if unknown:
        raise FixtureError(f"{folder / MANIFEST}: unknown 'os' keys {sorted(unknown)}")
    return OsInfo(**{k: str(v) for k, v in raw.items() if v is not None})  # null: the field's default


def _pair(value: Any) -> tuple[int, int] | None:
    """A recorded ``[major, minor]`` compute capability."""
    return (int(value[0]), int(value[1])) if value else None


def _nvml_from(raw: object, folder: Path) -> NvmlAnswer:
    if raw is None:
        return NvmlAnswer(False, "NVML Shared Library Not Found", "library_not_found")
    if not isinstance(raw, dict):
        raise FixtureError(f"{folder / MANIFEST}: 'nvml' must be an object")
    try:
        devices = tuple(
            NvmlDevice(
                index=int(d["index"]),
                name=str(d["name"]),
                compute_capability=_pair(d.get("compute_capability")),
                memory_total_bytes=d.get("memory_total_bytes"),
                memory_free_bytes=d.get("memory_free_bytes"),
                uuid=d.get("uuid"),
                pci_bus_id=d.get("pci_bus_id"),
            )
            for d in raw.get("devices") or []
        )
        return NvmlAnswer(
            available=bool(raw.get("available", bool(devices) or "driver_version" in raw)),
            error=raw.get("error"),
            error_kind=raw.get("error_kind"),
            driver_version=raw.get("driver_version"),
            cuda_driver_version=raw.get("cuda_driver_version"),
            devices=devices,
        )
    except (KeyError, IndexError, TypeError, ValueError, OverflowError) as exc:
        why = " ".join(str(exc).split())[:200]
        raise FixtureError(f"{folder / MANIFEST}: malformed 'nvml' device ({why})") from None


def _command_from(record: dict[str, Any], argv: list[str]) -> CommandResult:
    return CommandResult(
        argv=tuple(argv),
        returncode=record.get("returncode", 0) if not record.get("timed_out") and not record.get("error") else None,
        stdout=str(record.get("stdout", "")),
        stderr=str(record.get("stderr", "")),
        timed_out=bool(record.get("timed_out", False)),
        error=record.get("error"),
        duration_s=float(record.get("duration_s", 0.0)),
    )
