"""How bitsandbytes was installed, as the patient script reads it (``bnb_install_origin``), and what the rules
make of it: an egg built on the board, a local ``pip install .``, and PyPI's wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bnbdoctor.derive import built_locally
from bnbdoctor.facts import BnbFacts
from bnbdoctor.probes.python_env import patient_script


def _patient(path: Path) -> dict[str, Any]:
    """The patient script's bitsandbytes answer with ``path`` first on sys.path."""
    env = {**os.environ, "PYTHONPATH": str(path)}
    out = subprocess.run(
        [sys.executable, "-B", "-c", patient_script()], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    answer: dict[str, Any] = json.loads(out.stdout)["bitsandbytes"]
    return answer


def test_an_egg_built_on_the_board_is_an_egg(tmp_path: Path) -> None:
    egg = tmp_path / "bitsandbytes-0.45.5-py3.10-linux-aarch64.egg"
    (egg / "bitsandbytes").mkdir(parents=True)
    (egg / "EGG-INFO").mkdir()
    (egg / "bitsandbytes" / "__init__.py").write_text('__version__ = "0.45.5"\n')
    (egg / "bitsandbytes" / "libbitsandbytes_cuda126.so").write_bytes(b"")
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: bitsandbytes\nVersion: 0.45.5\n")
    answer = _patient(egg)
    assert (answer["dist_format"], answer["has_metadata"], answer["version"]) == ("egg", True, "0.45.5")
    assert answer["native_libraries"] == ["libbitsandbytes_cuda126.so"]
    assert built_locally(BnbFacts(**answer)) == "installed as an egg (setup.py), not from a wheel"


def test_a_pip_install_from_a_checkout_names_its_folder(tmp_path: Path) -> None:
    (tmp_path / "bitsandbytes").mkdir()
    (tmp_path / "bitsandbytes" / "__init__.py").write_text("")
    info = tmp_path / "bitsandbytes-0.46.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bitsandbytes\nVersion: 0.46.1\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp310-cp310-linux_aarch64\n")
    (info / "direct_url.json").write_text(json.dumps({"url": "file:///home/kim/src/bitsandbytes", "dir_info": {}}))
    answer = _patient(tmp_path)
    assert (answer["dist_format"], answer["direct_url"]) == ("wheel", "file:///home/kim/src/bitsandbytes")
    assert "linux_aarch64" in (built_locally(BnbFacts(**answer)) or "")


def test_pypi_wheel_is_not_a_local_build() -> None:
    tag = "py3-none-manylinux_2_24_aarch64"
    wheel = BnbFacts(True, "0.46.1", has_metadata=True, wheel_tag=tag, dist_format="wheel")
    assert built_locally(wheel) is None
