"""Every line that says the run failed, named or not, so that an error no family names is seen.

- A Python exception line of the shape ``ValueError: ...``, ``torch.OutOfMemoryError: ...`` or
  ``[rank1]: KeyError: 'lm_head'`` (:data:`~bnbdoctor.logs.patterns.EXCEPTION`), also named inside a line
  of prose or Markdown (```` `RuntimeError: ...` ````, ``Error: ImportError: ...``); warnings
  (``UserWarning: ...``), a ``SystemExit: 0`` and a ``KeyboardInterrupt`` are not errors.
- How a process ended when it did not end well: ``Killed`` (the kernel's OOM killer, as the shell
  reports it), a fatal signal (``Segmentation fault (core dumped)``, ``Fatal Python error:
  Aborted``, ``SIGKILL``, ``signal 9``), a non-zero exit status (``exit code 1``, ``exited with
  code 137``, ``returned non-zero exit status 1``, torchrun's ``exitcode: -9``).
- ComfyUI's ``!!! Exception during processing !!! <message>`` (the message without the exception's name).
- An installer's ``ERROR: ...`` line (pip prints its failures without an exception).
- A build's or a native program's failure, which bitsandbytes' source builds and pip's builds of it print:
  pip's and setuptools' lower-case ``error: ...``, ``CMake Error``, ``nvcc fatal``, a compiler's ``fatal error:``
  and MSVC's ``error C2065:``/``LNK1181``, the linker's ``cannot find -lcudart`` and ``undefined reference``,
  ``make: *** [...] Error 1``, gcc's ``collect2: error: ld returned``, git's ``fatal:``, C++'s ``terminate called
  after throwing an instance of``, the CUDA driver API's ``CUDA_ERROR_*`` names, and a record an application logged
  at ``ERROR`` (:func:`tool_error`).
- A message torch raises, quoted without its exception's name (a GUI's error box, a wrapper's re-raise, prose):
  ``Error(s) in loading state_dict for Flux`` (:func:`raised_message`); the whole line is kept, as the user
  pasted it. (Others, such as ``Expected all tensors to be on the same device``, are families of their own.)
- ``Traceback (most recent call last):``, kept apart: it is the error only when no exception line
  follows it (a paste cut before its last line).

They are kept with their numbers in :attr:`LogState.errors <bnbdoctor.logs.state.LogState.errors>`
(the traceback in ``LogState.traceback``). Nothing is recorded as a match here:
:mod:`bnbdoctor.logs.build` decides, with the whole log read, which of these lines no message
family names (``unrecognised_error``).
"""

from __future__ import annotations

import re

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import EXCEPTION
from bnbdoctor.logs.state import MAX_TEXT, LogState

COLLECTOR = Collector("errors")
collects = COLLECTOR.collects

#: Leading decoration a copied log puts before an exception line (Markdown quotes, a pytest "E").
_PREFIX = re.compile(r"^(?:>\s?)*(?:E\s{1,8})?")
#: An exception named inside a line, after prose, Markdown or a label: ``**Getting Error : RuntimeError: ...**``,
#: ```` `RuntimeError: ...` ````, ``Error: ImportError: ...``, ``…时报错RuntimeError: ...``. Its message must
#: follow on the line; a letter, digit or dot before the name makes it part of a word, and ``except ImportError:
#: pass`` is code.
_EMBEDDED = re.compile(
    r"(?<![A-Za-z0-9_.])(?<!except )(?:[A-Za-z_][A-Za-z0-9_]{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception):\s?[^\s`*]"
)


def _unprefixed(line: str) -> str:
    """The line without the decoration a copy put before it (Markdown quotes, pytest's ``E``)."""
    return _PREFIX.sub("", line.strip()).strip()


#: Markdown left around an exception taken from inside a line.
_MARKDOWN_END = re.compile(r"[\s`*]+$")
#: A non-zero status: a number other than 0 (and -0).
_NONZERO = r"-?(?!0+\b)\d{1,10}\b"  # Windows' NTSTATUS codes too (-1073741819, 3221225477: an access violation)


@collects(("Error", "Exception"), r"(?:Error|Exception)(?::|\s*$)")
def exception_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    text = _unprefixed(line)
    found = EXCEPTION.match(text)
    if found is None and (inside := _EMBEDDED.search(text)) is not None:
        text = _MARKDOWN_END.sub("", text[inside.start() :])
        found = EXCEPTION.match(text)
    if found is None or found.group("type").endswith("Warning"):
        return
    state.error_line(number, text)


@collects("Exception during processing", r"!!! ?Exception during processing ?!!!\s{0,8}\S")
def comfyui_exception(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """ComfyUI's ``!!! Exception during processing !!! <message>``: the exception's message without its name,
    printed before the traceback (which a paste often cuts)."""
    state.error_line(number, line[m.start() :].strip())


@collects(
    ("Killed", "killed", "fault", "core dumped", "Aborted", "SIG", "ignal", "exit", "Exit", "SystemExit"),
    # the shell's report of a process the kernel killed: "Killed", "bash: line 1:  4321 Killed  python x.py"
    r"^\s{0,8}(?:[\w/.\-]{1,60}: (?:line \d{1,6}: )?)?(?:\s{0,4}\d{1,9}\s{1,20})?Killed(?:\s{1,40}\S.{0,300})?$",
    r"^zsh: killed\s{1,40}\S|Killed process \d{1,9}|\bOOMKilled\b|[\]|]\s{0,4}Killed\s*$",
    # a fatal signal
    r"\b(?:Segmentation fault|Bus error|Illegal instruction|Aborted|Floating point exception)\s{0,4}\(core dumped\)",
    r"^\s{0,8}(?:[\w/.\-]{1,60}: (?:line \d{1,6}: )?)?(?:\s{0,4}\d{1,9}\s{1,20})?(?:Segmentation fault|Bus error)\b",
    r"Fatal Python error: (?:Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception)",
    r"\b(?:SIGSEGV|SIGKILL|SIGABRT|SIGBUS|SIGILL|SIGFPE)\b|\b[Ss]ignal (?:9|11|6|7|4)\b|\bcore dumped\b",
    # a non-zero exit status
    rf"\bexit (?:code|status)\s?[:=]?\s?{_NONZERO}|\bexitcode\s{{0,4}}[:=]\s{{0,4}}{_NONZERO}",
    rf"\bexited with (?:exit )?code\s?{_NONZERO}|returned non-zero exit status \d{{1,4}}",
    rf"^\s{{0,8}}SystemExit: {_NONZERO}",
)
def process_ended(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A line that says the process died or exited with an error: an error line, named or not."""
    state.error_line(number, _unprefixed(line), ending=True)


# pip's own errors (it prints no exception): "ERROR: No matching distribution found for bitsandbyte", "ERROR: Failed
# building wheel for ...", "ERROR: Cannot install ... conflicting dependencies"; its resolver's notice about packages
# it did not take into account ends in a working install, so it is not one.
@collects("ERROR: ", r"^\s{0,8}ERROR: (?!pip's dependency resolver)\S.{0,300}")
def installer_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """An installer's error line (pip's ``ERROR:``): the run failed, whether or not a family names it."""
    state.error_line(number, _unprefixed(line))


#: Each key that is no anchor word of its own costs one more scan of every block (bnbdoctor.logs.patterns), so
#: the build tools' lines are found by the words they share with other errors: make's "*** ... Error 1" by
#: "Error", the linker's undefined references by collect2's "error: ld returned 1 exit status" that follows them,
#: a record logged at CRITICAL or FATAL by the logging format that frames it (bnbdoctor.logs.framing).
@collects(
    ("error", "Error", "fatal", "cannot find", "terminate called", "CUDA_ERROR_", "ERROR"),
    # pip's / setuptools' / cargo's lower-case "error: ...", also after pip's box-drawing and multiplication-sign
    # markers; gcc's collect2 after a failed link
    r"^\s{0,8}(?:[\u00d7\u2570\u2500>|]\s{0,4}){0,3}error(?:\[E\d{1,5}\])?: \S|\bcollect2: error: ld returned",
    r"\bCMake Error\b|\bnvcc fatal\s{0,8}:|\bfatal error(?: [A-Z]{1,4}\d{1,5})?\s?:|\berror [A-Z]{1,3}\d{3,5}\s?:",
    r"\bld(?:\.\w{1,10})?: cannot find -?\S",
    r"^\s{0,8}(?:g?make|ninja)(?:\[\d{1,4}\])?: \*\*\* .{0,300}\bError \d{1,4}",
    # a record an application logged at ERROR, with no timestamp before it (which framing takes off):
    # "[ERROR] Failed to load model", "ERROR:Failed to load the model.", "ERROR conda.cli.main_run:execute(49): …"
    r"^\s{0,8}(?:\[ERROR\] ?|ERROR(?::|\s{1,8}[-|]\s|\s{1,8}[\w.]{1,80}:))(?! ?pip's dependency resolver)\s{0,4}\S",
    r"^\s{0,8}fatal: \S",
    r"terminate called after throwing an instance of",
    r"\bCUDA_ERROR_[A-Z_]{3,40}\b",
)
def tool_error(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A build tool's, a native program's or a thread's failure (see the module's list): an error line, as the log
    shows it, whether or not a family names it."""
    state.error_line(number, _unprefixed(line))


@collects(
    ("Error(s) in loading", "Error loading"),
    r"Error\(s\) in loading state_dict for \w",
    r'Error loading "[^"\n]{1,400}" or one of its dependencies',
)
def raised_message(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    """A message torch raises, quoted without its exception's name: ``load_state_dict``'s RuntimeError
    (torch/nn/modules/module.py), and the OSError torch/__init__.py gives when a DLL of its own fails to load on
    Windows. An error line, as the log shows it (an exception line holding it is kept once, by
    :func:`exception_line`)."""
    state.error_line(number, _unprefixed(line))


@collects("Traceback (most recent call last)", r"Traceback \(most recent call last\)")
def traceback_header(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    state.traceback = (number, line.strip()[:MAX_TEXT])
