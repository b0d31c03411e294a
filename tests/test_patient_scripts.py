"""The scripts that run inside the patient interpreter work there, down to Python 3.6.

``patient_script.py`` and ``load_script.py`` run in the user's Python, whatever its version
(an old conda env, a CentOS 7 system Python): they are excluded from mypy and ruff, whose rules
assume Python 3.10, and checked here instead by compiling and running them under the oldest
interpreter found: ``$BNBDOCTOR_OLD_PYTHON``, else pyenv's 3.6, else ``python3.6`` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.probes import ProbeContext, ProbeOptions
from bnbdoctor.probes.load import LOAD_TIMEOUT_S, load_script_for
from bnbdoctor.probes.python_env import gather_python

SCRIPTS = Path(__file__).resolve().parents[1] / "bnbdoctor" / "probes"
PATIENT_SCRIPTS = ("patient_script.py", "load_script.py")
OLDEST = "3.6"


def oldest_python() -> str | None:
    """An interpreter of the oldest Python the patient scripts support, if this machine has one."""
    given = os.environ.get("BNBDOCTOR_OLD_PYTHON")
    if given:
        return given
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(pyenv.glob(f"{OLDEST}.*/bin/python")) if pyenv.is_dir() else []
    if found:
        return str(found[-1])
    return shutil.which(f"python{OLDEST}")


OLD_PYTHON = oldest_python()
needs_old_python = pytest.mark.skipif(
    OLD_PYTHON is None, reason=f"no Python {OLDEST} interpreter on this machine (set BNBDOCTOR_OLD_PYTHON)"
)


def _version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=30
    ).stdout.strip()


@needs_old_python
def test_the_old_interpreter_is_the_oldest_supported() -> None:
    assert OLD_PYTHON is not None
    assert _version(OLD_PYTHON) == OLDEST


@needs_old_python
@pytest.mark.parametrize("script", PATIENT_SCRIPTS)
def test_patient_scripts_compile_under_the_oldest_python(script: str) -> None:
    assert OLD_PYTHON is not None
    source = (SCRIPTS / script).read_text(encoding="utf-8")
    run = subprocess.run(
        [OLD_PYTHON, "-B", "-c", "import sys; compile(sys.stdin.read(), sys.argv[1], 'exec')", script],
        input=source,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr


@needs_old_python
def test_python_probe_examines_the_oldest_python() -> None:
    """The real probe, through the live host, with --python pointing at Python 3.6."""
    assert OLD_PYTHON is not None
    facts = gather_python(ProbeContext(LiveHost(), ProbeOptions(python=OLD_PYTHON)))
    assert facts.version is not None and facts.version.startswith(f"{OLDEST}.")
    assert facts.executable and facts.selected_by == "--python"
    assert not facts.torch.installed and not facts.bitsandbytes.installed


@needs_old_python
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="loads glibc's libc.so.6")
def test_load_script_loads_a_library_under_the_oldest_python() -> None:
    """The load probe's script, as the load probe sends it, loading the C library for real (and a
    missing one, which is an answer, not a crash)."""
    assert OLD_PYTHON is not None
    host = LiveHost()
    for library, ok in (("libc.so.6", True), ("libbitsandbytes_missing.so", False)):
        script = load_script_for({"library": library, "preload": ["libm.so.6"], "dll_directories": []})
        result = host.run_python(OLD_PYTHON, script, timeout=LOAD_TIMEOUT_S, purpose="load", isolated=True)
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        assert answer["ok"] is ok and answer["preloaded"] == ["libm.so.6"]
        assert (answer["error"] is None) is ok
