"""scripts/doctor.sh finds bnbdoctor's own interpreter on old systems, or says exactly what to install.

Seen (issue 13, item 3): with Python 3.8 first on PATH (Ubuntu 20.04's default), ``bash scripts/doctor.sh``
stopped at pip's "requires a different Python". The examined interpreter may be as old as 3.6; only the
tool's own must be 3.10+. Each test puts one of pyenv's interpreters (3.6-3.13, where this machine has them)
first on a PATH that holds nothing else, as ``python3``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"
PYENV = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"


def _interpreters() -> dict[str, Path]:
    """'3.8' -> pyenv's python3.8 binary, for 3.6 to 3.13."""
    found: dict[str, Path] = {}
    for folder in sorted(PYENV.glob("3.*")):
        major_minor = ".".join(folder.name.split(".")[:2])
        binary = folder / "bin" / f"python{major_minor}"
        if binary.is_file() and 6 <= int(major_minor.split(".")[1]) <= 13:
            found[major_minor] = binary
    return found


PYTHONS = _interpreters()
needs_pyenv = pytest.mark.skipif(not PYTHONS, reason="no pyenv interpreters on this machine")


def _bin(tmp_path: Path, links: dict[str, Path | str]) -> Path:
    """A PATH folder holding only ``links`` (name -> target) and the two tools doctor.sh needs."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in ("dirname", "rm"):
        links.setdefault(tool, shutil.which(tool) or f"/bin/{tool}")
    for name, target in links.items():
        (folder / name).symlink_to(target)
    return folder


def _lib(function: str, path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = f'. "{ROOT}/scripts/lib/tool_python.sh"; {function}'
    return subprocess.run(
        [BASH, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(path), "HOME": str(path.parent), **env},
    )


@needs_pyenv
@pytest.mark.parametrize("version", sorted(PYTHONS, key=lambda v: int(str(v).split(".")[1])))
def test_python3_alone_on_path(version: str, tmp_path: Path) -> None:
    path = _bin(tmp_path, {"python3": PYTHONS[version]})
    found = _lib("find_tool_python", path)
    if int(version.split(".")[1]) >= 10:
        assert found.returncode == 0 and found.stdout.strip() == str(path / "python3")
        return
    assert found.returncode == 1 and found.stdout == ""
    helped = _lib("tool_python_help", path)
    assert f"{path / 'python3'} ({version})" in helped.stderr
    assert "needs Python 3.10 or newer" in helped.stderr
    assert "uv" in helped.stderr and "BNBDOCTOR_PYTHON" in helped.stderr


@needs_pyenv
def test_a_newer_python3_x_beside_an_old_python3_is_used(tmp_path: Path) -> None:
    old = PYTHONS.get("3.8") or PYTHONS[min(PYTHONS)]
    newer = {f"python{v}": p for v, p in PYTHONS.items() if int(v.split(".")[1]) >= 10}
    if not newer:
        pytest.skip("no Python 3.10+ in pyenv")
    path = _bin(tmp_path, {"python3": old, **newer})
    found = _lib("find_tool_python", path)
    newest = max(newer, key=lambda name: int(name.split(".")[1]))
    assert found.returncode == 0 and found.stdout.strip() == str(path / newest)
    chosen = _lib("find_tool_python", path, BNBDOCTOR_PYTHON=str(old))
    assert chosen.returncode == 1  # an explicit choice that is too old is refused, not replaced


def _checkout(tmp_path: Path) -> Path:
    """doctor.sh and its library in a folder of their own (its default tool venv lands there)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    return repo


def _doctor(repo: Path, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(repo / "scripts" / "doctor.sh"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": str(path), "HOME": str(repo.parent)},
    )


@needs_pyenv
def test_only_an_old_python_stops_with_what_to_install_and_makes_nothing(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    old = PYTHONS.get("3.8") or PYTHONS[min(PYTHONS)]
    # The venv an earlier run made with that Python (the run that stopped at "requires a different Python").
    subprocess.run([str(old), "-m", "venv", "--without-pip", str(repo / ".venv-doctor")], check=True, timeout=120)
    done = _doctor(repo, _bin(tmp_path, {"python3": old}))
    assert done.returncode == 2
    assert "making it again" in done.stderr and "install one of these" in done.stderr
    assert not (repo / ".venv-doctor").exists() and done.stdout == ""


@needs_pyenv
def test_uv_provides_the_tool_python_when_path_has_none(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    record = tmp_path / "uv-args"
    uv = tmp_path / "uv"
    uv.write_text(f'#!{BASH}\nprintf "%s\\n" "$@" > "{record}"\nexit 3\n')
    uv.chmod(0o755)
    old = PYTHONS.get("3.8") or PYTHONS[min(PYTHONS)]
    done = _doctor(repo, _bin(tmp_path, {"python3": old, "uv": uv}))
    assert done.returncode == 3  # the stub's failure, passed on
    assert record.read_text().split("\n")[:5] == ["venv", "--quiet", "--seed", "--python", ">=3.10"]


@pytest.mark.slow
@pytest.mark.network
@needs_pyenv
def test_doctor_sh_with_python_3_8_first_on_path_diagnoses_it(tmp_path: Path) -> None:
    """The Quick start as seen: 3.8 is ``python3``, a newer python3.X is on PATH too; pip needs PyPI."""
    if "3.8" not in PYTHONS or not any(v in PYTHONS for v in ("3.10", "3.11", "3.12", "3.13")):
        pytest.skip("needs pyenv's 3.8 and a 3.10+")
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")
    shutil.copytree(ROOT, repo, symlinks=True, ignore=ignore)
    newer = {f"python{v}": p for v, p in PYTHONS.items() if int(v.split(".")[1]) >= 10}
    path = _bin(tmp_path, {"python3": PYTHONS["3.8"], **newer})
    path = Path(f"{path}{os.pathsep}/usr/bin{os.pathsep}/bin")  # pip's build needs the usual tools
    done = subprocess.run(
        [BASH, str(repo / "scripts" / "doctor.sh"), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        env={"PATH": str(path), "HOME": str(tmp_path)},
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["facts"]["python"]["version"].startswith("3.8"), report["facts"]["python"]


@needs_pyenv
def test_setup_sh_with_only_an_old_python_says_what_to_install(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    old = PYTHONS.get("3.8") or PYTHONS[min(PYTHONS)]
    done = subprocess.run(
        [BASH, str(repo / "scripts" / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(_bin(tmp_path, {"python3": old})), "HOME": str(tmp_path)},
    )
    assert done.returncode == 2 and "install one of these" in done.stderr
    assert not (repo / ".venv").exists()


@pytest.mark.slow
@pytest.mark.network
def test_doctor_sh_reinstalls_only_when_the_checkout_changed(tmp_path: Path) -> None:
    """Issue 26 item 3: a second run with nothing changed skips pip (the stamp stays, the run is quick); an edit
    to the package is picked up (installed again)."""
    import time

    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")
    shutil.copytree(ROOT, repo, symlinks=True, ignore=ignore)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BNBDOCTOR_VENV": str(tmp_path / "tool")}

    def run() -> float:
        started = time.perf_counter()
        done = subprocess.run(
            [BASH, str(repo / "scripts" / "doctor.sh"), "--version"],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return time.perf_counter() - started

    run()
    stamp = tmp_path / "tool" / ".bnbdoctor-installed"
    first = stamp.stat().st_mtime_ns
    run()
    assert stamp.stat().st_mtime_ns == first  # pip did not run
    time.sleep(0.05)
    (repo / "bnbdoctor" / "__init__.py").write_text((repo / "bnbdoctor" / "__init__.py").read_text() + "\n")
    run()
    assert stamp.stat().st_mtime_ns > first  # the edit was installed
    edited = stamp.stat().st_mtime_ns
    (repo / "bnbdoctor" / "knowledge" / "shipped.py").unlink()  # a deleted file is a change too
    run()
    assert stamp.stat().st_mtime_ns > edited


@pytest.mark.slow
@pytest.mark.network
def test_setup_sh_installs_the_cpu_torch_and_says_which(tmp_path: Path) -> None:
    """Issue 25 item 19: the test command's setup asks for PyTorch's CPU build explicitly (PyPI's Linux torch is the
    CUDA one) and says in one line which torch it installed."""
    done = subprocess.run(
        [BASH, str(ROOT / "scripts" / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "VENV": str(tmp_path / "venv")},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("scripts/setup.sh: torch ")]
    assert said == ["scripts/setup.sh: torch 2.13.0+cpu, CUDA none (the CPU build)"], done.stdout[-2000:]
