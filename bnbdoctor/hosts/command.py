"""Running one command with bounded time *and* bounded output: :func:`run_command`.

A probe runs programs it does not trust (the patient interpreter, ``nvidia-smi``, ``ldconfig``,
``nvcc``): one may hang, die on a signal, or print without end. ``subprocess.communicate`` would
keep everything a flooding program prints (a patient that printed ``yes`` for 30 s once took 5 GB),
so each stream is drained by a thread that keeps at most :data:`MAX_OUTPUT` bytes; a program that
prints more is killed with its whole process group and the result says so. A program that is
still running at its time limit is killed the same way.

``on_stderr_line`` hears each line of stderr as it arrives (an engine's "layer 3/16" progress), from
the drain thread, within the same byte limit; a line longer than :data:`MAX_LINE` is passed on cut.

Nothing a command started outlives it: when it ends, whatever it left running in its process group (a
helper a ``.pth`` file started, holding its stdout) is killed, and on every way out of bnbdoctor (an
exception such as Ctrl-C's in any thread, the app quitting with a probe still running, the end of the
interpreter, SIGTERM and SIGHUP through :func:`kill_started`) the commands still running are killed with
their groups. Only a SIGKILL of bnbdoctor itself leaves them to their own devices.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from bnbdoctor.hosts.base import CommandResult

#: Hears one line of a command's output (without its line end) while the command runs.
LineListener = Callable[[str], None]

#: Bytes kept of each of stdout and stderr; a command that prints more is stopped (no probe's
#: answer comes near it: ``ldconfig -p`` on a large machine prints under 1 MiB).
MAX_OUTPUT = 8 * 1024 * 1024
#: Seconds to wait for the pipes to close after the process group was killed (a grandchild that
#: left the group may hold them open; its output is then abandoned).
DRAIN_GRACE_S = 2.0
_CHUNK = 1 << 16
#: The longest line passed to a line listener; a longer one is passed on cut to this many bytes.
MAX_LINE = 4096


#: The commands running now (each the leader of its own process group), for :func:`kill_started`.
_STARTED: set[subprocess.Popen[bytes]] = set()
#: Held from before a command starts until it is recorded, so that :func:`kill_started` (a signal handler, at
#: exit) waits for a command another thread is starting instead of missing it; re-entrant for a handler that
#: interrupts the main thread while it starts one.
_STARTED_LOCK = threading.RLock()


def kill_started() -> None:
    """Kill every command :func:`run_command` started that is still running, with its process group: on
    the way out of bnbdoctor (run at exit, and by the SIGTERM/SIGHUP handler of the command line)."""
    with _STARTED_LOCK:
        running = list(_STARTED)
    for proc in running:
        kill_group(proc)


atexit.register(kill_started)


class _Lines:
    """Splits the bytes a drain keeps into lines for a listener, holding at most :data:`MAX_LINE` bytes of an
    unfinished line. A listener that raises hears nothing more (the drain must keep reading)."""

    def __init__(self, listener: LineListener) -> None:
        self._listener: LineListener | None = listener
        self._partial = bytearray()
        self._cut = False  # the current line was already passed on cut: skip the rest of it

    def feed(self, data: bytes) -> None:
        while data and self._listener is not None:
            end = data.find(b"\n")
            piece, data = (data, b"") if end < 0 else (data[:end], data[end + 1 :])
            if not self._cut:
                self._partial += piece[: MAX_LINE - len(self._partial)]
                if len(self._partial) >= MAX_LINE:
                    self._emit()
                    self._cut = True
            if end >= 0:
                if self._cut:
                    self._cut = False
                else:
                    self._emit()

    def close(self) -> None:
        if self._partial and not self._cut:
            self._emit()

    def _emit(self) -> None:
        line = _decode(self._partial).rstrip("\r")
        self._partial.clear()
        if self._listener is None:
            return
        try:
            self._listener(line)
        except Exception:  # noqa: BLE001 - a failing listener must not stop the drain (the child would block)
            self._listener = None


class _Drain:
    """Reads one pipe to its end in a daemon thread, keeping the first ``limit`` bytes (and passing the lines of
    those to ``on_line``, when given)."""

    def __init__(
        self, pipe: IO[bytes], limit: int, on_overflow: threading.Event, on_line: LineListener | None = None
    ) -> None:
        self.data = bytearray()
        self._pipe, self._limit, self._overflow = pipe, limit, on_overflow
        self._lines = _Lines(on_line) if on_line is not None else None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = self._pipe.read1(_CHUNK) if hasattr(self._pipe, "read1") else self._pipe.read(_CHUNK)
                if not chunk:
                    return
                room = self._limit - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
                    if self._lines is not None:
                        self._lines.feed(chunk[:room])
                if len(chunk) > room:
                    self._overflow.set()
        except (OSError, ValueError):
            return
        finally:
            if self._lines is not None:
                self._lines.close()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc`` and, on POSIX, every process of its group."""
    try:
        if sys.platform != "win32":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def _oserror_text(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return str(exc) or type(exc).__name__


def _decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def run_command(
    argv: list[str], timeout: float, max_output: int = MAX_OUTPUT, on_stderr_line: LineListener | None = None
) -> CommandResult:
    """Run ``argv`` in its own process group; kill the whole group when time is up or when it
    prints more than ``max_output`` bytes on either stream. ``on_stderr_line`` hears stderr line by line
    while it runs (keep it quick: the pipe is not read while it runs)."""
    started = time.perf_counter()
    with _STARTED_LOCK:  # started and recorded as one step: a SIGTERM in between no longer leaves it running
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv is built by bnbdoctor, no shell
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=sys.platform != "win32",  # its own process group, killed as one (POSIX only)
            )
        except (OSError, ValueError) as exc:
            return CommandResult(tuple(argv), None, error=_oserror_text(exc))
        _STARTED.add(proc)
    try:
        return _supervise(proc, argv, started, timeout, max_output, on_stderr_line)
    finally:
        # On every way out (an exception here, Ctrl-C's in the main thread): nothing it started outlives it.
        if proc.returncode is None:
            kill_group(proc)
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.wait(DRAIN_GRACE_S)
        with _STARTED_LOCK:
            _STARTED.discard(proc)


def _supervise(
    proc: subprocess.Popen[bytes],
    argv: list[str],
    started: float,
    timeout: float,
    max_output: int,
    on_stderr_line: LineListener | None,
) -> CommandResult:
    """Wait for ``proc`` within ``timeout`` and ``max_output``; its result."""
    overflow = threading.Event()
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover - both are PIPE above
        raise RuntimeError("no pipes")
    drains = (
        _Drain(proc.stdout, max_output, overflow),
        _Drain(proc.stderr, max_output, overflow, on_stderr_line),
    )
    deadline = started + timeout
    timed_out = False
    # proc.wait polls with a delay that starts at 0.5 ms and grows, so a command that ends in 30 ms is
    # seen within a millisecond or two (a fixed 50 ms poll added up to 50 ms to every probe command);
    # between waits, a flood the drains flagged stops it.
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = proc.poll() is None
            break
        try:
            proc.wait(timeout=min(0.05, remaining))
            break
        except subprocess.TimeoutExpired:
            if overflow.is_set():
                break
    flooded = overflow.is_set() and proc.returncode is None
    finished = proc.returncode is not None
    # Whatever is left in its group is killed, the command too when it is still running: a helper it
    # started (a .pth file's) that holds its stdout would keep the pipes open, and the drains waiting.
    kill_group(proc)
    if not finished:
        proc.wait()
    grace_ends = time.perf_counter() + DRAIN_GRACE_S
    for drain in drains:
        drain.thread.join(max(0.0, grace_ends - time.perf_counter()))
    for drain, pipe in zip(drains, (proc.stdout, proc.stderr), strict=False):
        # A pipe still held by a process that left the group (its own session) is abandoned with its drain:
        # closing it would wait for the drain's read, which waits for that process.
        if not drain.thread.is_alive():
            with contextlib.suppress(OSError):
                pipe.close()
    out, err = _decode(drains[0].data), _decode(drains[1].data)
    duration = time.perf_counter() - started
    if flooded:
        which = "stdout" if len(drains[0].data) >= max_output else "stderr"
        return CommandResult(
            tuple(argv),
            None,
            out,
            err,
            error=f"printed more than {max_output // (1024 * 1024)} MiB on {which}; stopped",
            duration_s=duration,
        )
    if timed_out:
        return CommandResult(tuple(argv), None, out, err, timed_out=True, duration_s=duration)
    return CommandResult(tuple(argv), proc.returncode, out, err, duration_s=duration)
