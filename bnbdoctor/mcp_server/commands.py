"""What each MCP tool runs: the bnbdoctor command line itself, and a short summary of its JSON document.

Every tool that makes a report runs ``python -m bnbdoctor ... --json`` in a subprocess of the server's own
interpreter, so a tool returns exactly the document the command line prints (redacted, as the command line
redacts by default; this module never passes ``--no-redact``), with the same exit codes. A subprocess also
keeps the server's stdout (the MCP stdio channel) free of anything a pipeline might write, and a probe that
hangs or crashes costs one call, not the server.

This module knows nothing of MCP: :func:`run_report` returns a :class:`CommandResult` or raises
:class:`ToolInputError` (bad input: what the command line reports as exit 2, one line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def diagnose_argv(
    python: str | None = None, fixture: str | None = None, rules: Sequence[str] = (), load: bool = True
) -> list[str]:
    """``bnbdoctor --json`` for this machine, another interpreter (``python``) or a recorded machine."""
    if python and fixture:
        raise ToolInputError("give `python` (an interpreter here) or `fixture` (a recorded machine), not both")
    argv = ["--json"]
    if fixture:
        argv += ["--fixture", fixture]
    if python:
        argv += ["--python", python]
    if not load:
        argv.append("--no-load")
    return argv + _rule_args(rules)


def explain_argv(rules: Sequence[str] = ()) -> list[str]:
    """``bnbdoctor explain - --json``: the log comes on stdin."""
    return ["explain", "-", "--json", *_rule_args(rules)]


def lint_argv(paths: Sequence[str], python: str | None = None, rules: Sequence[str] = ()) -> list[str]:
    """``bnbdoctor lint PATH... --json``: static analysis of the caller's files (never imported or run)."""
    if not paths:
        raise ToolInputError("lint needs at least one path: a .py file, a .ipynb notebook or a folder")
    argv = ["lint", *paths, "--json"]
    if python:
        argv += ["--python", python]
    return argv + _rule_args(rules)


def fit_argv(model: str, options: Mapping[str, Any]) -> list[str]:
    """``bnbdoctor fit MODEL --json`` with the options a caller set (None, False and empty mean "not given").

    ``options`` keys are the command's long options with ``_`` for ``-`` (``max_memory``, ``gpus``, ...);
    booleans are flags. A model's own code never runs from here: ``--trust-remote-code`` is not offered.
    """
    if not model.strip():
        raise ToolInputError("`model` is empty: give a Hugging Face model id, a model folder or a config.json")
    argv = ["fit", model, "--json"]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False or value in ("", []):
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, ",".join(str(item) for item in value)]
        else:
            argv += [flag, str(value)]
    return argv


def _rule_args(rules: Sequence[str]) -> list[str]:
    return [arg for rule_id in rules for arg in ("--rule", rule_id)]


def run_report(argv: Sequence[str], *, stdin: str | None = None, timeout_s: float, label: str) -> CommandResult:
    """Run ``python -m bnbdoctor ARGV`` and read its JSON document; exit 2 becomes :class:`ToolInputError`."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter running our own command line
            [sys.executable, "-m", "bnbdoctor", *argv],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolInputError(f"bnbdoctor {label} did not finish in {timeout_s:.0f} s") from None
    if done.returncode not in (0, 1):
        raise ToolInputError(_last_line(done.stderr) or f"bnbdoctor {label} failed (exit {done.returncode})")
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise ToolInputError(f"bnbdoctor {label} printed no JSON document: {_last_line(done.stderr)}") from None
    if not isinstance(document, dict):
        raise ToolInputError(f"bnbdoctor {label} printed JSON that is not a report")
    return CommandResult(document, done.returncode, summarize(document, done.returncode, label))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("bnbdoctor: ") if lines else ""


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
