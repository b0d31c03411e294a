"""End to end, hostile: what a user (or a broken machine) hands bnbdoctor ends in one line and exit 2,
or a normal report, in bounded time and memory; ``-o`` writes whole files where asked and nowhere else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from unprivileged import as_unprivileged, shared_folder

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev/zero and signals are POSIX")


def _run(args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=ROOT,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile")
    fifo = root / "fifo"
    os.mkfifo(fifo)
    sparse = root / "sparse"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 30)
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 400)
    odd = os.fsencode(str(root)) + b"/bad\xff\xfe.log"
    with open(odd, "wb") as handle:
        handle.write(b"OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n")
    (root / "nested.json").write_text('{"tool": "bnbdoctor", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return {
        "/dev/zero": "/dev/zero",
        "fifo": str(fifo),
        "sparse": str(sparse),
        "loop": str(root / "loop1"),
        "directory": str(root),
        "binary": str(root / "binary.bin"),
        "non-utf8-name": os.fsdecode(odd),
        "nested": str(root / "nested.json"),
    }


CASES = ("/dev/zero", "fifo", "sparse", "loop", "directory", "binary", "non-utf8-name", "nested")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", [["explain", "--json"], ["--json", "--from"]])
def test_hostile_files_end_in_one_line_or_a_report(hostile: dict[str, str], command: list[str], case: str) -> None:
    run = _run([*command, hostile[case]])
    assert "Traceback" not in run.stderr
    if run.returncode == 2:
        assert run.stdout == "" and len(run.stderr.strip().splitlines()) == 1, run.stderr
    else:
        assert run.returncode in (0, 1), run.stderr
        json.loads(run.stdout)  # a whole report, whatever the file's name


def test_unreadable_file() -> None:
    """A file the user may not read (run as ``nobody`` when the suite runs as root): one line, exit 2."""
    folder = shared_folder()
    try:
        path = folder / "secret.log"
        path.write_text("x")
        path.chmod(0)
        for command in (["explain"], ["--from"]):
            run = subprocess.run(
                as_unprivileged([sys.executable, "-m", "bnbdoctor", *command, str(path)]),
                capture_output=True,
                text=True,
                errors="replace",
                cwd=ROOT,
                env={**os.environ, "HOME": str(folder)},
                timeout=60,
                check=False,
            )
            assert run.returncode == 2 and "ermission denied" in run.stderr, run.stderr
            assert len(run.stderr.strip().splitlines()) == 1 and run.stdout == ""
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fake(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("kill -SEGV $$", "SIGSEGV"),
        ("exec yes flooding", "printed more than"),
        ("exec yes flooding >&2", "printed more than"),
    ],
)
def test_a_broken_interpreter_is_a_finding(tmp_path: Path, body: str, said: str) -> None:
    python = _fake(tmp_path, "python", body)
    run = _run(["--json", "--no-load", "--python", python], timeout=60)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert any(f["rule_id"] == "BNB001" for f in report["findings"])
    assert said in run.stdout


@pytest.mark.slow
def test_a_hanging_interpreter_times_out(tmp_path: Path) -> None:
    run = _run(["--json", "--no-load", "--python", _fake(tmp_path, "python", "sleep 1000")], timeout=60)
    assert run.returncode == 1 and "timed out" in run.stdout


def test_fake_tools_that_hang_or_print_garbage(tmp_path: Path) -> None:
    garbage = "head -c 200000 /dev/urandom; echo 'release 99999999999999.1'; head -c 9000000 /dev/zero"
    for tool in ("nvidia-smi", "ldconfig", "nvcc"):
        _fake(tmp_path, tool, garbage)
    # Without CUDA_HOME/CUDA_PATH/CUDA_ROOT the nvcc on PATH is the one asked (a real toolkit's would win).
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")}
    env["PATH"] = f"{tmp_path}:{os.environ['PATH']}"
    run = _run(["--json", "--no-load"], env=env, timeout=60)
    assert run.returncode in (0, 1), run.stderr
    toolkit = json.loads(run.stdout)["facts"]["cuda_toolkit"]
    assert toolkit["nvcc_path"] == str(tmp_path / "nvcc")
    # 9 MB against an 8 MiB bound: whether the tool is stopped first or ends first is the scheduler's call (both
    # happen under load); either way no version is made up from the garbage, and the reason is said.
    error = toolkit["nvcc_error"] or ""
    assert toolkit["nvcc_version"] is None
    assert error == "no version in nvcc output" or "printed more than 8 MiB on stdout" in error, error


def test_output_into_a_missing_folder_or_onto_a_directory_is_one_line(tmp_path: Path) -> None:
    for target in (tmp_path / "missing" / "r.json", tmp_path):
        run = _run(["--fixture", "a100-healthy", "--json", "-o", str(target)])
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no partial or temporary file left


def test_output_over_an_existing_file_replaces_it_whole(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o640)
    run = _run(["--fixture", "a100-healthy", "--json", "-o", str(target)])
    assert run.returncode in (0, 1), run.stderr
    json.loads(target.read_text())
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_nothing_is_written_outside_the_output_path(tmp_path: Path) -> None:
    """Run from a read-only copy of nothing: the working folder and HOME are read-only; only -o is written."""
    work, home, out = tmp_path / "work", tmp_path / "home", tmp_path / "out"
    for folder in (work, home, out):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    work.chmod(0o555)
    home.chmod(0o555)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "bnbdoctor", "--fixture", "a100-healthy", "--json", "-o", str(out / "r.json")],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        work.chmod(0o755)
        home.chmod(0o755)
    assert run.returncode in (0, 1), run.stderr
    assert list(work.iterdir()) == [] and list(home.iterdir()) == []
    assert [p.name for p in out.iterdir()] == ["r.json"]
