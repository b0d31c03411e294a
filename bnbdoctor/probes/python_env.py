"""The python probe: which interpreter is the patient, and what torch/bitsandbytes it has.

The patient is never imported into bnbdoctor. A stdlib-only script (``patient_script.py``) runs in
the patient interpreter through the host, with a time limit, and answers in JSON.
"""

from __future__ import annotations

import json
import signal

from bnbdoctor.facts import PythonFacts
from bnbdoctor.hosts.base import CommandResult, Host
from bnbdoctor.probes.base import ProbeContext, ProbeError, own_script
from bnbdoctor.serde import DecodeError, from_dict

PATIENT_TIMEOUT_S = 20.0


def patient_script() -> str:
    return own_script("patient_script.py")


def _venv_python(host: Host, prefix: str) -> str | None:
    join = host.pathmod.join
    names = (
        ("Scripts/python.exe", "python.exe") if host.os_info().system == "Windows" else ("bin/python", "bin/python3")
    )
    for name in names:
        candidate = join(prefix, *name.split("/"))
        if host.is_file(candidate):
            return candidate
    return None


def resolve_python(host: Host, given: str) -> str | None:
    """The interpreter ``--python`` names: a file as it is, a venv or conda folder's own python, or a
    command found on PATH (``python3.11``); None when it is none of them."""
    if host.is_file(given):
        return given
    if host.is_dir(given):
        return _venv_python(host, given)
    if "/" not in given and "\\" not in given:
        return which(host, (given,))
    return None


def require_python(host: Host, given: str, error: type[Exception]) -> str:
    """:func:`resolve_python` for ``--python``; ``error`` (the command's one-line error) when it names nothing."""
    found = resolve_python(host, given)
    if found is None:
        raise error(f"--python {given}: no such file, venv or conda folder, or command on PATH")
    return found


def which(host: Host, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` found on the host's PATH."""
    windows = host.os_info().system == "Windows"
    sep = ";" if windows else ":"
    for folder in (host.getenv("PATH") or "").split(sep):
        if not folder:
            continue
        for name in names:
            candidate = host.pathmod.join(folder, name + (".exe" if windows and not name.endswith(".exe") else ""))
            if host.is_file(candidate):
                return candidate
    return None


def choose_interpreter(ctx: ProbeContext) -> tuple[str, str]:
    """(executable, why): --python, then the active venv/conda env, then PATH when bnbdoctor
    runs from an isolated tool venv (pipx/uv), else bnbdoctor's own interpreter."""
    executable, why, _stale = _choose(ctx)
    return executable, why


def _choose(ctx: ProbeContext) -> tuple[str, str, list[str]]:
    """:func:`choose_interpreter`'s answer, and the activations it passed over because no Python is in their
    folder ("VIRTUAL_ENV=/gone/venv": an env deleted or moved while a shell kept it active), which the report
    names."""
    host = ctx.host
    if ctx.options.python:
        return ctx.options.python, "--python", []
    stale: list[str] = []
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = host.getenv(variable)
        if not prefix:
            continue
        found = _venv_python(host, prefix)
        if found:
            return found, variable, stale
        stale.append(f"{variable}={prefix}")
    current = host.current_python()
    if current.isolated_tool_env:
        found = which(host, ("python3", "python"))
        if found:
            return found, "PATH", stale
    return current.executable, "current", stale


def _failure(result: CommandResult) -> str:
    """Why the patient did not answer; a signal is named (a crash reads better than "exited with -11")."""
    code = result.returncode
    if code is not None and code < 0 and not result.timed_out and result.error is None:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
        return f"it was killed by signal {-code}{name}" + (f": {tail[0][:160]}" if tail else "")
    return result.describe_failure()


def gather_python(ctx: ProbeContext) -> PythonFacts:
    executable, why, stale = _choose(ctx)
    result = ctx.host.run_python(executable, patient_script(), timeout=PATIENT_TIMEOUT_S)
    if not result.ok:
        raise ProbeError(f"could not examine {executable} (chosen by {why}): {_failure(result)}")
    if not result.stdout.strip():
        raise ProbeError(f"{executable} (chosen by {why}) printed nothing (is it a Python interpreter?)")
    try:
        raw = json.loads(result.stdout.strip().splitlines()[-1])
    except ValueError:
        raise ProbeError(f"{executable} answered with something that is not JSON") from None
    if not isinstance(raw, dict):
        raise ProbeError(f"{executable} answered with a JSON {type(raw).__name__}, not an object")
    raw.pop("script_version", None)
    raw["executable"] = raw.get("executable") or executable
    raw["selected_by"] = why
    raw["stale_activations"] = stale
    try:
        return from_dict(PythonFacts, raw)
    except DecodeError as exc:
        raise ProbeError(f"unexpected answer from {executable}: {exc}") from None
