"""The patient interpreter an engine runs in (fit's placement, merge-check's measurement)."""

from __future__ import annotations

from bnbdoctor.hosts.base import Host


def choose_python(host: Host, python: str | None, error: type[Exception]) -> tuple[str, str]:
    """(executable, why it was chosen), as the doctor chooses it
    (:func:`~bnbdoctor.probes.python_env.choose_interpreter`); a ``--python`` that names nothing raises ``error``."""
    from bnbdoctor.probes.base import ProbeContext, ProbeOptions
    from bnbdoctor.probes.python_env import choose_interpreter, require_python

    if python:
        python = require_python(host, python, error)
    return choose_interpreter(ProbeContext(host, ProbeOptions(python=python)))
