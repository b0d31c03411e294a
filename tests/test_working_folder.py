"""Nothing bnbdoctor runs imports from the folder it was started in (issue 25, item 11).

The patient script, the load check and fit's and merge-check's engines run as ``python -c`` in the examined
interpreter, which would put the working folder first on ``sys.path``: a ``json.py`` there would run in place of
the standard library's, and a ``bitsandbytes/`` checkout there would be what gets diagnosed. The patient's own
``PYTHONPATH`` still counts (it is the user's). The MCP server's half is in tests/test_mcp_hostile.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from bnbdoctor.hosts.live import LiveHost


def hostile_folder(folder: Path) -> Path:
    """A folder holding a json.py that leaves a marker and a bitsandbytes/ that is not the installed one."""
    marker = folder / "RAN"
    (folder / "json.py").write_text(
        f"open({str(marker)!r}, 'a').write('json.py ran\\n')\nraise ImportError('the folder json.py')\n"
    )
    (folder / "bitsandbytes").mkdir()
    (folder / "bitsandbytes" / "__init__.py").write_text('__version__ = "0.0.1"\n')
    return marker


def test_a_script_run_in_the_patient_never_imports_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = hostile_folder(tmp_path)
    elsewhere = tmp_path / "on-pythonpath"
    (elsewhere / "mine").mkdir(parents=True)
    (elsewhere / "mine" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))
    script = (
        "from __future__ import annotations\n"  # a script may start with future imports
        "import importlib.util, json, sys\n"
        "print(json.dumps({'path0': sys.path[0], 'argv': sys.argv, 'bnb': importlib.util.find_spec('bitsandbytes')"
        " and importlib.util.find_spec('bitsandbytes').origin, 'mine': bool(importlib.util.find_spec('mine'))}))\n"
    )
    result = LiveHost().run_python(sys.executable, script, timeout=60)
    assert result.ok, result.stderr
    answer = json.loads(result.stdout)
    assert not marker.exists(), "the working folder's json.py ran"
    assert answer["path0"] not in ("", str(tmp_path)) and answer["argv"] == ["-c"]
    assert not str(answer["bnb"] or "").startswith(str(tmp_path))
    assert answer["mine"], "the patient's own PYTHONPATH no longer counts"


def test_the_doctor_in_a_folder_holding_bitsandbytes_and_json_py(tmp_path: Path) -> None:
    marker = hostile_folder(tmp_path)
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    command = bin_folder / "bnbdoctor"  # as pip writes it: its folder is sys.path[0], not the working folder
    command.write_text(f"#!{sys.executable}\nimport sys\nfrom bnbdoctor.cli import main\nsys.exit(main())\n")
    command.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    env.pop("VIRTUAL_ENV", None)
    env.pop("CONDA_PREFIX", None)
    done = subprocess.run(
        [str(command), "--json", "--no-load", "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode in (0, 1), done.stderr
    bnb = json.loads(done.stdout)["facts"]["python"]["bitsandbytes"]
    assert not str(bnb.get("location") or "").startswith(str(tmp_path)), bnb
    assert not marker.exists(), "the working folder's json.py ran in the patient"
