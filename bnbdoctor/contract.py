"""The command-line contract every bnbdoctor command shares (the doctor, explain, fit).

stdout is data; messages go to stderr as one line; user errors exit 2 without a traceback;
bnbdoctor's own bugs are reported in one line too (``--debug`` shows the traceback).
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from bnbdoctor.report import ExitCode


def note(message: str) -> None:
    """A message for the person at the terminal: stderr, never stdout (stdout is data)."""
    print(f"bnbdoctor: {message}", file=sys.stderr)


def use_color(text_format: bool, output: str | None) -> bool:
    """Colour only for text on a terminal, never into a file, and never with NO_COLOR set."""
    return text_format and not output and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def write_output(text: str, output: str | None, error: type[Exception]) -> None:
    """The rendered report to ``output`` (a path the user asked for) or to stdout."""
    if output:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise error(f"cannot write {output}: {exc.strerror or exc}") from None
        note(f"report written to {output}")
    else:
        sys.stdout.write(text)
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
    except Exception as exc:  # noqa: BLE001 - a diagnostic tool must never crash with a traceback
        if debug:
            raise
        print(f"bnbdoctor: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
              file=sys.stderr)
        return int(ExitCode.FAILURE)
