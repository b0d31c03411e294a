"""Running one tool call's command: bounded, cancellable, and leaving nothing running behind it.

A call's command (``bnbdoctor fit ...``) starts programs of its own -- the patient interpreter, fit's engine --
each in a session of its own, so that its time limit can kill it with its group. When the call ends early (the
client sent ``notifications/cancelled``, closed its end of stdio, or the server was told to stop) the command is
killed at once with its process group (:meth:`Supervisor.run`), and on Linux the server, a child subreaper
(``PR_SET_CHILD_SUBREAPER``, :func:`become_subreaper`), then finds the programs the command started and left
behind -- orphans become the server's children, not init's -- and kills and reaps them too
(:meth:`Supervisor.sweep`). No call's programs outlive the call (issue 25, item 12).

The command's stdout is kept up to :data:`MAX_STDOUT` bytes (a report is well under 10 MiB) and its stderr's last
:data:`STDERR_TAIL` bytes (an error is its last line).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc

MAX_STDOUT = 64 * 1024 * 1024
STDERR_TAIL = 64 * 1024
#: Seconds a killed process is waited for before it is given up on (SIGKILL: it cannot refuse).
REAP_WAIT_S = 2.0
_PR_SET_CHILD_SUBREAPER = 36


class CommandFailed(Exception):
    """The command ran past its time limit or printed more than it may; the message is one line."""


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


class Supervisor:
    """The commands of one server's calls: started bounded, ended with everything they started.

    ``running`` are the commands of the calls now running (their pids), never swept: they are not left behind.
    A sweep holds the same lock as a start, so that it never takes a command that is just starting for one
    left behind."""

    def __init__(self) -> None:
        self.running: set[int] = set()
        self.lock = anyio.Lock()
        self.subreaper = become_subreaper()

    async def sweep(self) -> int:
        """Kill and reap every child of the server that is no call's running command: what finished, killed or
        cancelled calls left behind (given to the server, their subreaper). Returns how many were found."""
        if not self.subreaper:
            return 0
        found = 0
        async with self.lock:
            for _ in range(8):  # killing one may orphan its own children onto the server: look again
                left = [pid for pid in _children() if pid not in self.running]
                if not left:
                    break
                found += len(left)
                for pid in left:
                    try:
                        group = os.getpgid(pid)
                    except OSError:
                        group = -1
                    if group == pid:  # it leads a group of its own (start_new_session): its members go too
                        _kill_group(pid)
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                for pid in left:
                    await _reap(pid)
        return found

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str], timeout_s: float, label: str
    ) -> Finished:
        """Run ``argv`` with ``stdin``; its exit code and output. Raises :class:`CommandFailed` when it runs past
        ``timeout_s`` or prints too much. However the call ends -- answered, timed out, cancelled -- the
        command's process group is killed if it still runs, and what it left behind is swept."""
        async with self.lock:
            process = await anyio.open_process(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                start_new_session=sys.platform != "win32",
            )
            self.running.add(process.pid)
        out, err = _Kept(MAX_STDOUT), _Kept(STDERR_TAIL, tail=True)
        returncode: int | None = None
        try:
            with anyio.move_on_after(timeout_s) as limit:
                async with anyio.create_task_group() as group:
                    group.start_soon(out.drain, process.stdout, group.cancel_scope)
                    group.start_soon(err.drain, process.stderr, group.cancel_scope)
                    if process.stdin is not None:
                        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                            if stdin:
                                await process.stdin.send(stdin)
                            await process.stdin.aclose()
                    returncode = await process.wait()
            if limit.cancelled_caught:
                raise CommandFailed(f"bnbdoctor {label} did not finish in {timeout_s:.0f} s")
            if out.overflowed:
                raise CommandFailed(f"bnbdoctor {label} printed more than {MAX_STDOUT // (1024 * 1024)} MiB")
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    _kill_group(process.pid)
                with anyio.move_on_after(REAP_WAIT_S):
                    await process.wait()
                self.running.discard(process.pid)
                await self.sweep()
        if returncode is None:  # pragma: no cover - only a cancellation leaves the wait unfinished, and it raises
            raise CommandFailed(f"bnbdoctor {label} did not finish")
        return Finished(returncode, out.text(), err.text())


class _Kept:
    """What is kept of one output stream: its first ``limit`` bytes, or (``tail``) its last ones."""

    def __init__(self, limit: int, tail: bool = False) -> None:
        self.data = bytearray()
        self.limit, self.tail = limit, tail
        self.overflowed = False

    async def drain(self, stream: anyio.abc.ByteReceiveStream | None, scope: anyio.CancelScope) -> None:
        if stream is None:
            return
        async for chunk in stream:
            self.data += chunk
            if len(self.data) > self.limit:
                if not self.tail:
                    self.overflowed = True
                    scope.cancel()  # the command is killed on the way out
                    return
                del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def become_subreaper() -> bool:
    """Make this process the one that orphans of its descendants are given to (Linux only); True when it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (its own session), else the process alone."""
    if sys.platform == "win32":  # pragma: no cover - no process groups to signal
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _children() -> list[int]:
    """The pids whose parent is this process (Linux, from /proc)."""
    me, found = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


async def _reap(pid: int) -> None:
    """Wait (a little) for a killed orphan to end, and collect its exit status."""
    with anyio.move_on_after(REAP_WAIT_S):
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return
            if done:
                return
            await anyio.sleep(0.01)
