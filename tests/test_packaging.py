"""What an install carries: the recorded machines and the rule pages, and the command that prints a page.

Seen (issue 13, item 2): after ``pip install``, ``bnbdoctor --list-fixtures`` said "no recorded machines",
``bnbdoctor --fixture centos7-cxxabi`` failed, and a finding's ``docs`` line named ``docs/rules/BNB306.md``,
a path that exists only in a checkout. The slow test builds the wheel, installs it into a fresh venv and
runs those commands there; the fast ones check the archive's round trip and ``bnbdoctor rule``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from bnbdoctor.hosts import fixture_store
from bnbdoctor.hosts.fixture import FixtureError, list_fixtures, resolve_fixture
from bnbdoctor.rule_page import command_for, main, page_text
from bnbdoctor.rules import all_rules

ROOT = Path(__file__).resolve().parents[1]


def _tree(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder``: ('link', target), ('file', content digest and exec bit) or ('dir', '')."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            key = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = ("dir", "")
            else:
                content = path.read_bytes()
                found[key] = ("file", f"{content.hex()}:{os.access(path, os.X_OK)}")
    return found


def _machines(tmp_path: Path) -> Path:
    """A small recorded machine with every kind of entry the real ones have."""
    source = tmp_path / "src"
    root = source / "m1" / "root"
    (root / "usr" / "lib64").mkdir(parents=True)
    (source / "m1" / "machine.json").write_text('{"format": 1, "description": "one"}')
    (root / "usr" / "lib64" / "libc-2.17.so").write_bytes(b"\x7fELF stub")
    (root / "usr" / "lib64" / "libc.so.6").symlink_to("libc-2.17.so")
    (root / "lib64").symlink_to("usr/lib64")
    (root / "usr" / "local").mkdir()
    (root / "usr" / "local" / "cuda").symlink_to("/usr/local/cuda-12.1")  # absolute: re-rooted by FixtureHost
    (root / "usr" / "bin").mkdir()
    (root / "usr" / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (root / "usr" / "bin" / "nvcc").chmod(0o755)
    (root / "empty").mkdir()
    (source / "not-a-machine").mkdir()  # no machine.json: left out
    return source


def test_packed_machines_unpack_as_recorded_and_pack_deterministically(tmp_path: Path) -> None:
    source = _machines(tmp_path)
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    fixture_store.pack(source, first)
    fixture_store.pack(source, second)
    assert first.read_bytes() == second.read_bytes()
    folder = fixture_store.unpacked(first, cache=tmp_path / "cache")
    expected = {k: v for k, v in _tree(source).items() if not k.startswith("not-a-machine")}
    assert _tree(folder) == expected
    assert fixture_store.unpacked(first, cache=tmp_path / "cache") == folder  # unpacked once, then reused


def _installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Look up machines as an install does: no checkout beside the package, a packed archive in it."""
    archive = tmp_path / "pkg" / fixture_store.ARCHIVE_NAME
    fixture_store.pack(_machines(tmp_path), archive)
    monkeypatch.delenv("BNBDOCTOR_FIXTURES", raising=False)
    monkeypatch.setenv("BNBDOCTOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fixture_store, "checkout_dir", lambda: None)
    monkeypatch.setattr(fixture_store, "packed_archive", lambda: archive)
    return archive


def test_an_install_lists_and_resolves_its_packed_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(tmp_path, monkeypatch)
    assert list_fixtures() == [("m1", "one")]
    assert resolve_fixture("m1").parent.parent == tmp_path / "cache"


def test_a_machine_that_cannot_be_unpacked_is_a_one_line_fixture_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _installed(tmp_path, monkeypatch)

    def refuse(*_args: object) -> None:
        raise OSError(1314, "A required privilege is not held by the client")

    monkeypatch.setattr(os, "symlink", refuse)
    with pytest.raises(FixtureError, match=r"cannot unpack .*symlink .*privilege"):
        resolve_fixture("m1")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-unpacked is left to be reused


def test_unpack_refuses_names_outside_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        tar.addfile(info)
    with pytest.raises(fixture_store.StoreError, match="refusing"):
        fixture_store.unpack(archive, tmp_path / "out")
    assert not (tmp_path / "escaped").exists()


def test_every_rule_page_is_printed_by_the_command_its_findings_name(capsys: pytest.CaptureFixture[str]) -> None:
    for rule in all_rules():
        assert rule.doc == command_for(rule.id) == f"bnbdoctor rule {rule.id}"
        assert page_text(rule.id).startswith(f"# {rule.id} — {rule.name}")
    assert main(["bnb306"]) == 0
    assert capsys.readouterr().out.startswith("# BNB306 — libstdcxx-too-old")
    assert page_text("libstdcxx-too-old") == page_text("BNB306")


@pytest.mark.parametrize("wanted", ["BNB999", "no-such-rule"])
def test_an_unknown_rule_is_one_line_and_exit_2(wanted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([wanted]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "unknown rule" in captured.err


def _copy_checkout(target: Path) -> Path:
    """The tracked source, symlinks as symlinks, without build outputs or virtualenvs."""
    ignore = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")
    shutil.copytree(ROOT, target, symlinks=True, ignore=ignore)
    return target


@pytest.mark.slow
def test_the_built_wheel_carries_machines_and_rule_pages(tmp_path: Path) -> None:
    """Build the wheel, install it into a fresh venv, run what the README shows there."""
    source = _copy_checkout(tmp_path / "src")
    dist = tmp_path / "dist"
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q"]
    build += ["-w", str(dist)]
    assert subprocess.run(build, capture_output=True, text=True, timeout=600).returncode == 0
    (wheel,) = dist.glob("bnbdoctor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "bnbdoctor/data/platform_fixtures.tar.gz" in names and "bnbdoctor/data/rules/BNB306.md" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    where_to = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(subprocess.check_output([str(python), "-c", where_to], text=True).strip())
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "BNBDOCTOR_FIXTURES"}}
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)]
    assert subprocess.run(install, capture_output=True, text=True, env=clean, timeout=300).returncode == 0
    # Then the dependencies, from the test's own environment (offline); bnbdoctor only from the wheel:
    # a path added by a .pth file is not a site folder, so the editable install's finder there stays off
    # (and written after the install, or pip would find that install's metadata and install nothing).
    (purelib / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = venv / ("Scripts/bnbdoctor.exe" if os.name == "nt" else "bin/bnbdoctor")
    env = {**clean, "BNBDOCTOR_CACHE": str(tmp_path / "cache")}
    other = tmp_path / "elsewhere"
    other.mkdir()

    def bnbdoctor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=other, timeout=300)

    where = subprocess.run(
        [str(python), "-c", "import bnbdoctor; print(bnbdoctor.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=other,
    ).stdout
    assert where.startswith(str(purelib)), where

    listed = bnbdoctor("--list-fixtures")
    assert listed.returncode == 0 and "centos7-cxxabi" in listed.stdout, listed.stderr
    shown = bnbdoctor("--fixture", "centos7-cxxabi", "--json")
    assert shown.returncode == 1, shown.stderr
    findings = {f["rule_id"]: f for f in json.loads(shown.stdout)["findings"]}
    assert findings["BNB306"]["doc"] == "bnbdoctor rule BNB306"
    page = bnbdoctor("rule", "BNB306")
    assert page.returncode == 0 and page.stdout.startswith("# BNB306 — libstdcxx-too-old"), page.stderr


def test_install_hints_name_what_pip_can_install() -> None:
    """Issue 25, item 18: the hints said ``pip install "bnbdoctor[mcp]"``; bnbdoctor is not on PyPI, so that
    names nothing (or, worse, someone else's package). They name the extra's own requirement, as pyproject
    declares it, and the interpreter bnbdoctor runs in."""
    import importlib
    import re

    tomllib = importlib.import_module("tomllib")  # Python 3.11+, which the tests run on

    from bnbdoctor import completion
    from bnbdoctor.mcp_server import INSTALL_HINT, MCP_REQUIREMENT

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["mcp"] == [MCP_REQUIREMENT] and extras["completion"] == [completion.SHTAB]
    assert f'-m pip install "{MCP_REQUIREMENT}"' in INSTALL_HINT
    texts = [INSTALL_HINT, (ROOT / "bnbdoctor" / "completion.py").read_text(encoding="utf-8")]
    texts += [(ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "docs/agents.md")]
    for text in texts:
        assert not re.search(r'pip install "?bnbdoctor\[', text)
