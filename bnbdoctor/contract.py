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
import stat
import sys
from collections.abc import Callable

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


def note(message: str) -> None:
    """A message for the person at the terminal: stderr, never stdout (stdout is data)."""
    print(f"bnbdoctor: {message}", file=sys.stderr)


def no_color() -> bool:
    """NO_COLOR is set and not empty (no-color.org): no colour anywhere, the spinner's included."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(text_format: bool, output: str | None) -> bool:
    """Colour only for text on a terminal, never into a file. NO_COLOR (set and not empty, no-color.org) turns
    it off; FORCE_COLOR (set and not empty, force-color.org) turns it on off a terminal (a CI log, ``less -R``)."""
    if not text_format or output or no_color():
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def write_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all; raises OSError.

    The text goes to a temporary file in the same folder, which then replaces ``path``
    (``os.replace``), so an interrupted write never leaves a partial report, and a file written
    again keeps its permissions. A read-only file stays unwritten. What is not a plain file is
    written in place, as ``open`` would: a symlink (``/dev/stdout`` is one, and may name the file
    the shell redirects to), a device or a pipe; a folder fails with "Is a directory".
    """
    try:
        found: os.stat_result | None = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        found = None  # a new file; a missing folder fails below with open's error
    if os.path.islink(path) or (found is not None and not stat.S_ISREG(found.st_mode)):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    if found is not None and not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)  # new: the umask applies, as in open
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if found is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
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
            raise error(f"cannot write {output}: {exc.strerror or exc}") from None
        note(f"report written to {output}")
    else:
        from bnbdoctor.charset import fit_to_encoding, stream_encoding

        sys.stdout.write(fit_to_encoding(text, stream_encoding(sys.stdout), json=json))
        sys.stdout.flush()


def guarded(run: Callable[[], int], user_errors: tuple[type[Exception], ...], debug: bool) -> int:
    """Run a command body under the contract: exit codes, one-line errors, no tracebacks."""
    try:
        return int(run())
    except user_errors as exc:
        print(f"bnbdoctor: error: {exc}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    except KeyboardInterrupt:
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
