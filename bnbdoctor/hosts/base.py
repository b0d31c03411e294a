"""The host interface: the one seam between bnbdoctor and a machine.

Probes never touch ``os``, ``pathlib``, ``subprocess`` or NVML. They ask a :class:`Host`, so the
same probe runs against this machine (:class:`~bnbdoctor.hosts.live.LiveHost`) or a recorded one
(:class:`~bnbdoctor.hosts.fixture.FixtureHost`). Every answer is plain data; a missing file is
``None``, a command that could not run is a :class:`CommandResult` with ``error`` set.
"""

from __future__ import annotations

import json
import ntpath
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol, TypeVar

from bnbdoctor.facts import OsInfo

#: How long a command may run before it is killed, unless a probe asks for less.
DEFAULT_TIMEOUT_S = 10.0
#: The most bytes a probe reads from one file (ELF libraries are read in full up to this).
DEFAULT_READ_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What running a command produced. ``returncode`` is None when it never finished."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    def describe_failure(self) -> str:
        """One line saying why the command did not succeed."""
        if self.timed_out:
            return f"`{' '.join(self.argv)}` timed out after {self.duration_s:.1f}s"
        if self.error:
            return f"`{' '.join(self.argv)}` could not run: {self.error}"
        tail = (self.stderr or self.stdout).strip().splitlines()[-1:] or [""]
        return f"`{' '.join(self.argv)[:200]}` exited with {self.returncode}: {tail[0][:160]}"

    def marked_answer(self, marker: str) -> dict[str, Any] | None:
        """The JSON object on the last stdout line that starts with ``marker``: how the engine scripts
        run in the patient interpreter (fit, merge-check) answer, among whatever else they print."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith(marker):
                try:
                    data = json.loads(line[len(marker) :])
                except ValueError:
                    return None
                return data if isinstance(data, dict) else None
        return None


@dataclass(frozen=True)
class PythonRun:
    """One stdlib-only script to run in the patient interpreter, in its own process, and how.

    ``purpose`` names the script ("facts": the patient script, "load": the dlopen check) so a recorded
    machine can answer each; ``isolated`` adds ``-I -S`` (no site, no user paths); ``on_stderr_line``
    hears each line the script writes to stderr while it runs (an engine's per-layer progress), a
    recorded machine replays its recorded stderr."""

    executable: str
    script: str
    timeout: float = DEFAULT_TIMEOUT_S
    purpose: str = "facts"
    isolated: bool = False
    on_stderr_line: Callable[[str], None] | None = None


_Answer = TypeVar("_Answer", bound="EngineAnswer")


@dataclass
class EngineAnswer:
    """What an engine script run in the patient interpreter answered (its marked JSON line), or why it
    did not (``failure``): fit's engine and merge-check's read their answers the same way."""

    data: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    duration_s: float = 0.0
    timed_out: bool = False  # the failure is the time limit

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.data.get("ok"))

    @property
    def error(self) -> str | None:
        return self.failure or self.data.get("error")

    @classmethod
    def from_result(cls: type[_Answer], result: CommandResult, marker: str, what: str) -> _Answer:
        """The answer ``result`` carries after ``marker``; else why there is none (``what`` names the engine)."""
        data = result.marked_answer(marker)
        if data is not None:
            return cls(data=data, duration_s=result.duration_s)
        failure = f"{what} printed no answer" if result.ok else result.describe_failure()
        return cls(failure=failure, duration_s=result.duration_s, timed_out=result.timed_out)


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML reports it (NVML enumerates all GPUs; CUDA masks are applied later)."""

    index: int
    name: str
    compute_capability: tuple[int, int] | None
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class NvmlAnswer:
    """The whole NVML query, answered at once so that it can be time-boxed as one unit."""

    available: bool
    error: str | None = None
    # library_not_found | driver_not_loaded | no_permission | timeout | unknown
    error_kind: str | None = None
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # e.g. 12020 for CUDA 12.2
    devices: tuple[NvmlDevice, ...] = field(default_factory=tuple)


class Host(ABC):
    """A machine that probes can ask questions of."""

    #: "live" or "fixture"; reported so that a reader knows where the facts came from.
    kind: str = "abstract"
    #: A human label: "this machine", "fixture centos7-cxxabi".
    label: str = ""

    @abstractmethod
    def os_info(self) -> OsInfo: ...

    @abstractmethod
    def getenv(self, name: str) -> str | None:
        """An allowlisted environment variable (see :mod:`bnbdoctor.environment`)."""

    @abstractmethod
    def read_bytes(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> bytes | None:
        """A file's first ``limit`` bytes, or None when it is missing or unreadable."""

    @abstractmethod
    def is_file(self, path: str) -> bool: ...

    @abstractmethod
    def is_dir(self, path: str) -> bool: ...

    @abstractmethod
    def list_dir(self, path: str) -> list[str] | None:
        """Sorted entry names, or None when the directory is missing or unreadable."""

    @abstractmethod
    def realpath(self, path: str) -> str:
        """The path with every symlink resolved (the path itself when nothing resolves)."""

    @abstractmethod
    def run(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        """Run a command without a shell; never raises, never waits past ``timeout``."""

    def run_python(
        self,
        executable: str,
        script: str,
        timeout: float = DEFAULT_TIMEOUT_S,
        *,
        purpose: str = "facts",
        isolated: bool = False,
        on_stderr_line: Callable[[str], None] | None = None,
    ) -> CommandResult:
        """Run a stdlib-only script in the patient interpreter, in its own process (see :class:`PythonRun`)."""
        return self._run_python(PythonRun(executable, script, timeout, purpose, isolated, on_stderr_line))

    @abstractmethod
    def _run_python(self, run: PythonRun) -> CommandResult:
        """:meth:`run_python`'s work: each host answers one :class:`PythonRun`, so the signature and its
        defaults are written once, here."""

    @abstractmethod
    def nvml(self, timeout: float = 5.0) -> NvmlAnswer:
        """Ask NVML about the driver and every GPU; an NVML error is an answer, not a raise."""

    @abstractmethod
    def current_python(self) -> CurrentPython:
        """The interpreter running bnbdoctor (the fallback patient)."""

    # -- helpers shared by every host -------------------------------------------------------

    @property
    def pathmod(self) -> PathModule:
        """``ntpath`` on Windows, ``posixpath`` elsewhere: pure string path functions."""
        return ntpath if self.os_info().system == "Windows" else posixpath

    def open_reader(self, path: str) -> FileReader | None:
        """A file for bounded reads at offsets (a ~1 GB library is never read whole), or None.

        Hosts that can map ``path`` to a real file override this; the default reads nothing."""
        return None

    def read_text(self, path: str, limit: int = 4 * 1024 * 1024) -> str | None:
        """A text file decoded leniently (undecodable bytes never raise)."""
        data = self.read_bytes(path, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    @staticmethod
    def replay_stderr(result: CommandResult, on_stderr_line: Callable[[str], None] | None) -> CommandResult:
        """``result``, after passing its stderr to ``on_stderr_line`` line by line: how a host that answers at
        once (a recorded machine) keeps the streaming contract of :meth:`run_python`."""
        if on_stderr_line is not None:
            for line in result.stderr.splitlines():
                on_stderr_line(line)
        return result

    def exists(self, path: str) -> bool:
        return self.is_file(path) or self.is_dir(path)

    def describe(self) -> dict[str, Any]:
        """Where facts came from, for the report header."""
        return {"kind": self.kind, "label": self.label}


_PREAD = getattr(os, "pread", None)  # POSIX only


class FileReader:
    """An open binary file read only in bounded pieces at given offsets; close it (or use ``with``)."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._handle = handle
        self.size = size  # bytes in the file

    def read_at(self, offset: int, count: int) -> bytes:
        """Up to ``count`` bytes from ``offset`` (fewer at the end of the file, none past it)."""
        if offset < 0 or count <= 0 or offset >= self.size:
            return b""
        count = min(count, self.size - offset)
        if _PREAD is not None:  # one system call instead of seek + read
            data: bytes = _PREAD(self._handle.fileno(), count, offset)
            return data
        self._handle.seek(offset)
        return self._handle.read(count)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_file_reader(path: str) -> FileReader | None:
    """A :class:`FileReader` on a local file, or None when it is missing or unreadable."""
    try:
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by FileReader.close
    except (OSError, ValueError):
        return None
    try:
        size = os.fstat(handle.fileno()).st_size
    except OSError:
        handle.close()
        return None
    return FileReader(handle, size)


class PathModule(Protocol):
    """The pure string path functions bnbdoctor uses, as ``posixpath`` and ``ntpath`` provide them."""

    def join(self, a: str, /, *paths: str) -> str: ...

    def basename(self, p: str, /) -> str: ...

    def dirname(self, p: str, /) -> str: ...


@dataclass(frozen=True)
class CurrentPython:
    """The interpreter bnbdoctor itself runs in, and whether it is a tool's private venv."""

    executable: str
    isolated_tool_env: bool  # pipx / uv tool: its site-packages are not the user's


def read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """The file's bytes, at most ``limit`` of them, without reserving ``limit`` bytes first.

    ``handle.read(limit)`` allocates a buffer of ``limit`` bytes before it reads (256 MiB for every small
    library the native probe opens); this asks for the file's size instead, and reads files that report
    none (``/proc``, pipes) in 1 MiB chunks."""
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        size = 0
    if size > 0:
        return handle.read(min(limit, size + 1))[:limit]
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = handle.read(min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
