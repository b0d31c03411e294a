"""What each MCP tool runs: the bnbdoctor command line itself, and a short summary of its JSON document.

Every tool that makes a report runs bnbdoctor's own command line (``--json``) in a subprocess of the server's
interpreter (:func:`own_command`), so a tool returns exactly the document the command line prints (redacted, as
the command line redacts by default; this module never passes ``--no-redact``), with the same exit codes. A
subprocess also keeps the server's stdout (the MCP stdio channel) free of anything a pipeline might write, and a
probe that hangs or crashes costs one call, not the server.

Nothing a client sends is ever parsed as an option (issue 25, item 9): every value travels as ``--option=VALUE``
(one word, whatever it starts with) and every path after ``--``. Nothing in the server's working folder runs
either (item 11): :func:`own_command` imports the server's own ``bnbdoctor`` package by its file, never by a
search of ``sys.path`` that starts with the working folder. And an interpreter a client names runs only when the
server's configuration allows it (item 10, :class:`Interpreters`).

This module knows nothing of MCP: it builds command lines, checks what a client sent and reads what the command
line answered (:func:`read_answer`), raising :class:`ToolInputError` (bad input: what the command line reports as
exit 2, one line). :mod:`~bnbdoctor.mcp_server.process` runs the command.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bnbdoctor

#: Seconds a doctor run or an explain may take; fit adds its own engine time limit to this.
DIAGNOSE_TIMEOUT_S = 300.0
EXPLAIN_TIMEOUT_S = 120.0
FIT_OVERHEAD_S = 60.0
#: The most findings a summary lists one by one (the document carries them all).
SUMMARY_FINDINGS = 8


class ToolInputError(ValueError):
    """What the user (the agent) asked for cannot be run; the message is one line."""


@dataclass(frozen=True)
class CommandResult:
    """A report the command line made: its JSON document, its exit code and a short summary."""

    document: dict[str, Any]
    exit_code: int
    summary: str


#: ``python -c BOOTSTRAP ARGS...``: the server's own command line, whatever folder the server runs in.
#: ``python -m bnbdoctor`` would search the working folder first (``-m`` puts it on ``sys.path[0]``), so a
#: ``bnbdoctor/`` package there -- the repository an agent has open -- would run and forge the answer. The
#: bootstrap drops that entry (``''`` for ``-c``) and loads the package from the server's own files.
_BOOTSTRAP = """\
import sys, importlib.util
if sys.path[:1] == [""]:
    del sys.path[0]
spec = importlib.util.spec_from_file_location("bnbdoctor", {init!r}, submodule_search_locations=[{package!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["bnbdoctor"] = module
spec.loader.exec_module(module)
from bnbdoctor.cli import main
sys.exit(main(sys.argv[1:]))
"""


def own_command(argv: Sequence[str]) -> list[str]:
    """The command line that runs ``bnbdoctor ARGV`` with the server's interpreter and the server's own package."""
    init = os.path.abspath(bnbdoctor.__file__ or "")
    script = _BOOTSTRAP.format(init=init, package=os.path.dirname(init))
    return [sys.executable, "-c", script, *argv]


def _text(name: str, value: str) -> str:
    """A string a client sent, as it may travel in a command line: no NUL, valid Unicode."""
    if "\x00" in value:
        raise ToolInputError(f"`{name}` holds a NUL character, which no path or option can hold")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolInputError(f"`{name}` is not valid Unicode (it holds a lone surrogate escape)") from None
    return value


def _option(flag: str, name: str, value: object) -> str:
    """``--flag=VALUE``: one word, never read as another option, whatever VALUE starts with."""
    return f"{flag}={_text(name, str(value))}"


def _rule_args(rules: Sequence[str]) -> list[str]:
    return [_option("--rule", "rules", rule_id) for rule_id in rules]


def diagnose_argv(
    python: str | None = None, fixture: str | None = None, rules: Sequence[str] = (), load: bool = True
) -> list[str]:
    """``bnbdoctor --json`` for this machine, another interpreter (``python``) or a recorded machine."""
    if python and fixture:
        raise ToolInputError("give `python` (an interpreter here) or `fixture` (a recorded machine), not both")
    argv = ["--json"]
    if fixture:
        argv.append(_option("--fixture", "fixture", fixture))
    if python:
        argv.append(_option("--python", "python", python))
    if not load:
        argv.append("--no-load")
    return argv + _rule_args(rules)


def explain_argv(rules: Sequence[str] = ()) -> list[str]:
    """``bnbdoctor explain --json -- -``: the log comes on stdin."""
    return ["explain", "--json", *_rule_args(rules), "--", "-"]


def lint_argv(paths: Sequence[str], python: str | None = None) -> list[str]:
    """``bnbdoctor lint --json -- PATH...``: static analysis of the caller's files (never imported or run). lint
    runs every BNB6xx rule (it has no ``--rule``)."""
    if not paths:
        raise ToolInputError("lint needs at least one path: a .py file, a .ipynb notebook or a folder")
    argv = ["lint", "--json"]
    if python:
        argv.append(_option("--python", "python", python))
    return [*argv, "--", *(_text("paths", path) for path in paths)]


def fit_argv(model: str, options: Mapping[str, Any]) -> list[str]:
    """``bnbdoctor fit --json ... -- MODEL`` with the options a caller set (None, False and empty mean "not given").

    ``options`` keys are the command's long options with ``_`` for ``-`` (``max_memory``, ``gpus``, ...);
    booleans are flags. A model's own code never runs from here: ``--trust-remote-code`` is not offered.
    """
    if not model.strip():
        raise ToolInputError("`model` is empty: give a Hugging Face model id, a model folder or a config.json")
    argv = ["fit", "--json"]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False or value in ("", []):
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv.append(_option(flag, key, ",".join(_text(key, str(item)) for item in value)))
        else:
            argv.append(_option(flag, key, value))
    return [*argv, "--", _text("model", model)]


class Interpreters:
    """The interpreters a client may name in ``python`` (issue 25, item 10: the server's trust model).

    A client of the server (a coding agent) is not the person who configured it: an interpreter runs code, so a
    path the client names runs only when it is one the server was told to trust. Those are the interpreter the
    doctor would examine in the server's own environment (the active virtualenv or conda env, else ``python3`` on
    PATH) and each ``--allow-python`` of the server's configuration: an interpreter file, a venv or conda folder
    (its python) or a command on PATH. Two spellings are the same interpreter when they name the same file from
    the same folder: a venv's ``bin/python`` and ``bin/python3`` are one, the base interpreter the venv links to
    is another (it would not read the venv's site-packages).
    """

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = list(dict.fromkeys(allowed))
        self._keys = {_identity(path) for path in self.allowed}

    def check(self, given: str | None, resolve: Callable[[str], str | None]) -> str | None:
        """``given`` (a client's ``python``) when the server allows it; None when the client named none.
        ``resolve`` finds the interpreter a ``--python`` value names (None: it names nothing)."""
        if not given:
            return None
        _text("python", given)
        found = resolve(given)
        if found is None:
            raise ToolInputError(f"`python` {given}: no such file, venv or conda folder, or command on PATH")
        if _identity(found) not in self._keys:
            allowed = ", ".join(self.allowed) or "none"
            raise ToolInputError(
                f"`python` {given} is not an interpreter this server may run (allowed: {allowed}); "
                "add it to the server's configuration with `bnbdoctor mcp --allow-python PATH`"
            )
        return found


def _identity(path: str) -> tuple[str, str]:
    absolute = os.path.abspath(path)
    return os.path.realpath(os.path.dirname(absolute)), os.path.realpath(absolute)


def read_answer(
    returncode: int, stdout: str, stderr: str, label: str, redact: Callable[[Any], Any] = lambda value: value
) -> CommandResult:
    """What the command line answered: its JSON document, passed through ``redact`` (the summary is made from the
    redacted document); exit 2 (or no document) is :class:`ToolInputError`."""
    if returncode not in (0, 1):
        raise ToolInputError(_last_line(stderr) or f"bnbdoctor {label} failed (exit {returncode})")
    try:
        document = json.loads(stdout)
    except json.JSONDecodeError:
        raise ToolInputError(f"bnbdoctor {label} printed no JSON document: {_last_line(stderr)}") from None
    if not isinstance(document, dict):
        raise ToolInputError(f"bnbdoctor {label} printed JSON that is not a report")
    document = redact(document)
    return CommandResult(document, returncode, summarize(document, returncode, label))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("bnbdoctor: ")[:500] if lines else ""


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summarize(document: Mapping[str, Any], exit_code: int, label: str) -> str:
    """A few lines an agent reads first: the counts, each finding's id and title, its first command."""
    counts = document.get("summary") or {}
    source = (document.get("source") or {}).get("label") or label
    head = ", ".join(
        [
            _count(int(counts.get("errors", 0)), "error"),
            _count(int(counts.get("warnings", 0)), "warning"),
            f"{counts.get('info', 0)} info",
            f"{counts.get('passed', 0)} passed",
            f"{counts.get('skipped', 0)} skipped",
        ]
    )
    verdict = "error findings" if exit_code == 1 else "no error findings"
    lines = [f"bnbdoctor {label} ({source}): {head}; exit {exit_code} ({verdict})."]
    findings = list(document.get("findings") or [])
    for finding in findings[:SUMMARY_FINDINGS]:
        lines.append(
            f"- {finding.get('severity')} {finding.get('rule_id')} {finding.get('rule_name')}: {finding.get('title')}"
        )
        commands = (finding.get("remediation") or {}).get("commands") or []
        if commands:
            lines.append(f"  first step: {commands[0]}")
    if len(findings) > SUMMARY_FINDINGS:
        lines.append(f"- ... and {len(findings) - SUMMARY_FINDINGS} more in the document")
    if not findings:
        lines.append("No findings.")
    lines.append(
        "The whole report is the JSON document (structured content); a rule's page: the `rule` tool "
        "or the resource bnbdoctor://rules/ID."
    )
    return "\n".join(lines)
