"""The command-line contract every bnbdoctor command shares (the doctor, explain, fit).

stdout is data; messages go to stderr as one line; user errors exit 2 without a traceback;
bnbdoctor's own bugs are reported in one line too (``--debug`` shows the traceback); a report
written to a file (``-o``, the app's export) is written whole or not at all; in its name ``%N`` is the
node's name and ``%h`` the host name (:func:`expand_output_path`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from bnbdoctor.environment import check_allowed
from bnbdoctor.report import ExitCode

#: Where a node's name comes from, first set wins: Slurm's, then the one a Kubernetes pod spec
#: passes from the downward API (``env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]``).
NODE_NAME_VARIABLES = ("SLURMD_NODENAME", "NODE_NAME")
_PLACEHOLDER = re.compile(r"%([Nh%])")
_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._-]")


def host_name() -> str:
    """This machine's host name as ``socket.gethostname`` gives it ("localhost" when it gives none)."""
    import socket  # only -o's %h and %N need it

    return socket.gethostname() or "localhost"


def node_name() -> str:
    """The cluster's name for this node (:data:`NODE_NAME_VARIABLES`), else the host name."""
    for variable in NODE_NAME_VARIABLES:
        value = os.environ.get(check_allowed(variable))
        if value:
            return value
    return host_name()


def expand_output_path(path: str) -> str:
    """``path`` with ``%N`` the node name, ``%h`` the host name and ``%%`` a ``%`` (``-o DIR/%N.json``).

    A name's characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_``, so that a
    name never adds a folder to the path.
    """
    if "%" not in path:
        return path

    def name(match: re.Match[str]) -> str:
        if match.group(1) == "%":
            return "%"
        value = node_name() if match.group(1) == "N" else host_name()
        return _UNSAFE_IN_NAME.sub("_", value).lstrip(".") or "_"

    return _PLACEHOLDER.sub(name, path)


def shown_path(path: str) -> str:
    """``path`` as a message to the terminal shows it: the home folder as ``~`` (a pasted message names no user)."""
    home = os.path.expanduser("~").rstrip("/\\")
    if len(home) > 1 and (path == home or path.startswith((home + "/", home + os.sep))):
        return "~" + path[len(home) :]
    return path


def note(message: str) -> None:
    """A message for the person at the terminal: stderr, never stdout (stdout is data)."""
    print(f"bnbdoctor: {message}", file=sys.stderr)


def missing_terminal() -> list[str]:
    """The standard streams the app needs that are not a terminal: it reads keys from stdin and draws on
    stderr (Textual's driver). stdout may be redirected (``--tui > farewell.txt``): only the farewell goes there."""
    streams = (("standard input", sys.stdin), ("standard error", sys.stderr))
    missing = []
    for name, stream in streams:
        try:
            terminal = stream is not None and stream.isatty()
        except (AttributeError, ValueError, OSError):  # closed, or replaced by something without isatty
            terminal = False
        if not terminal:
            missing.append(name)
    return missing


def require_terminal(error: type[Exception], instead: str) -> None:
    """Raise ``error`` (one line, exit 2) when the app cannot run here: it needs a terminal on stdin and stderr,
    and off one it would hang writing escape codes. ``instead`` says what works without one."""
    missing = missing_terminal()
    if missing:
        what = " and ".join(missing)
        verb = "are not terminals" if len(missing) > 1 else "is not one"
        raise error(f"--tui needs a terminal, but {what} {verb} here; {instead}")


def no_color() -> bool:
    """NO_COLOR is set and not empty (no-color.org): no colour anywhere, the spinner's included."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(text_format: bool, output: str | None) -> bool:
    """Colour only for text on a terminal, never into a file. NO_COLOR (set and not empty, no-color.org) turns
    it off; FORCE_COLOR (set and not empty, force-color.org) turns it on off a terminal (a CI log, ``less -R``)."""
    if not text_format or output or no_color():
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


#: Links that are not files: ``/dev/stdout`` names ``/proc/self/fd/1``, which names whatever the shell
#: opened (a terminal, a pipe, a file it appends to); a report goes there in place, as ``open`` would.
_IN_PLACE_LINKS = ("/proc/", "/dev/")
#: The longest part of the target's name that its temporary file's name repeats: with the pid and a random
#: part the temporary name stays under NAME_MAX (255 bytes) for any name that itself fits.
_TEMPORARY_STEM = 40
_MAX_LINKS = 40  # as the kernel's ELOOP limit


def _link_target(path: str) -> str | None:
    """The file a symlink ``path`` finally names (it may not exist yet), or None when a link in the chain
    lies in ``/proc`` or ``/dev`` (``/dev/stdout``: written in place)."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        if current.startswith(_IN_PLACE_LINKS):
            return None
        if not os.path.islink(current):
            return current
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return None  # a loop: open() below fails with "Too many levels of symbolic links"


def _temporary_name(name: str) -> str:
    """``.NAME.<pid>.<hex>.tmp``, with NAME cut to :data:`_TEMPORARY_STEM` characters."""
    return f".{name[:_TEMPORARY_STEM]}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def _write_synced(descriptor: int, text: str) -> None:
    with os.fdopen(descriptor, "w", encoding="utf-8", closefd=False) as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _anonymous_file(folder: str, mode: int) -> int | None:
    """A file in ``folder`` with no name yet (Linux's ``O_TMPFILE``): a kill before it is named leaves
    nothing behind. None where the system or the file system has none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or os.link not in os.supports_dir_fd or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY, mode)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP):
            return None  # an old kernel or a file system without it: a named temporary file
        raise


def _name_anonymous(descriptor: int, name: str) -> None:
    """Give the ``O_TMPFILE`` file open as ``descriptor`` its ``name``: ``linkat`` of ``/proc/self/fd/N``,
    following that link (a directory descriptor makes ``os.link`` call ``linkat``, not ``link``)."""
    fds = os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.link(str(descriptor), name, src_dir_fd=fds, follow_symlinks=True)
    finally:
        os.close(fds)


def write_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all; raises OSError.

    The text goes to a temporary file in the same folder, which then replaces ``path``
    (``os.replace``), so an interrupted write never leaves a partial report, two runs writing one
    file leave one report or the other, and a file written again keeps its permissions. On Linux the
    temporary file has no name until it is whole (``O_TMPFILE``), so a kill leaves nothing behind;
    elsewhere a ``.NAME.<pid>.<hex>.tmp`` is removed on every way out Python sees. A read-only file
    stays unwritten. Through a symlink, the file it names is replaced the same way and the link kept.
    What is not a plain file is written in place, as ``open`` would: a device, a pipe, or a link into
    ``/proc`` or ``/dev`` (``/dev/stdout``, which may name the file the shell redirects to); a folder
    fails with "Is a directory".
    """
    target = os.fspath(path)
    if os.path.islink(target):
        final = _link_target(target)
        if final is None:
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
            return
        target = final
    try:
        found: os.stat_result | None = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        found = None  # a new file; a missing folder fails below with open's error
    if found is not None and not stat.S_ISREG(found.st_mode):
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    if found is not None and not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
    folder, name = os.path.split(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666
    temporary = os.path.join(folder, _temporary_name(name))
    named = False
    descriptor = _anonymous_file(folder, mode)  # new: the umask applies, as in open
    if descriptor is None:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        named = True
    try:
        try:
            _write_synced(descriptor, text)
            if found is not None:  # the file's own mode, whatever the umask
                if named:
                    os.chmod(temporary, mode)
                else:
                    os.fchmod(descriptor, mode)
            if not named:
                _name_anonymous(descriptor, temporary)
                named = True
        finally:
            os.close(descriptor)
        os.replace(temporary, target)
    except BaseException:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise


def write_output(text: str, output: str | None, error: type[Exception], *, json: bool = False) -> None:
    """The rendered report to ``output`` (a path the user asked for) or to stdout.

    A file is written whole in UTF-8. On stdout the text is fitted to the stream's encoding
    (:mod:`bnbdoctor.charset`: cp1252, latin-1 or ASCII get ASCII symbols; ``json`` text gets
    escapes), so no command ends in a UnicodeEncodeError on a non-UTF-8 terminal."""
    if output:
        output = expand_output_path(output)
        try:
            write_file(output, text)
        except OSError as exc:
            raise error(f"cannot write {shown_path(output)}: {exc.strerror or exc}") from None
        note(f"report written to {shown_path(output)}")
    else:
        from bnbdoctor.charset import fit_to_encoding, stream_encoding

        sys.stdout.write(fit_to_encoding(text, stream_encoding(sys.stdout), json=json))
        sys.stdout.flush()


_INTERRUPTED: list[bool] = []  # one entry once a command body was stopped by Ctrl-C (see interrupted())


def interrupted() -> bool:
    """Whether a command body of this process was stopped by Ctrl-C (:func:`guarded` said "interrupted")."""
    return bool(_INTERRUPTED)


def _ignore_further_interrupts() -> None:
    """After the first Ctrl-C the command is ending: a second SIGINT (a key held down, a supervisor that
    repeats it) must not kill it half-way through its cleanup or during interpreter shutdown, when
    Python has put SIGINT's default action back, which ended the run by the signal instead of exit 2."""
    with contextlib.suppress(ValueError, OSError):  # ValueError: not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def guarded(run: Callable[[], int], user_errors: tuple[type[Exception], ...], debug: bool) -> int:
    """Run a command body under the contract: exit codes, one-line errors, no tracebacks."""
    try:
        return int(run())
    except user_errors as exc:
        print(f"bnbdoctor: error: {exc}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    except KeyboardInterrupt:
        _INTERRUPTED.append(True)
        _ignore_further_interrupts()
        print("bnbdoctor: interrupted", file=sys.stderr)
        return int(ExitCode.FAILURE)
    except BrokenPipeError:
        return int(ExitCode.OK)
    except Exception as exc:
        if debug:
            raise
        print(
            f"bnbdoctor: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)", file=sys.stderr
        )
        return int(ExitCode.FAILURE)


#: Signals that end a command the way Ctrl-C does: ``kill``, a closed terminal, a CI job's timeout.
TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def ended_by_signals(cleanup: Callable[[], None]) -> Iterator[None]:
    """While the command runs, SIGTERM and SIGHUP run ``cleanup`` (kill what bnbdoctor started), say so in
    one line, and end it through every ``finally`` with the shell's status, 128 + the signal's number. A
    signal the caller ignores (``nohup``) stays ignored; the handlers in place before are put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        cleanup()
        with contextlib.suppress(OSError, ValueError):  # a closed terminal (SIGHUP) has no stderr left
            print(f"bnbdoctor: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)
        raise SystemExit(128 + signum)

    previous = {}
    for signum in TERMINATING:
        if signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
