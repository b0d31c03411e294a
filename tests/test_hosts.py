"""The host seam: the live host reads this machine calmly; the fixture host stays in its folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.environment import EnvNotAllowed, check_allowed, looks_secret
from bnbdoctor.hosts.command import kill_started, run_command
from bnbdoctor.hosts.fixture import FixtureError, FixtureHost
from bnbdoctor.hosts.live import LiveHost


def test_live_reads_files_and_reports_missing_ones(tmp_path: Path) -> None:
    host = LiveHost()
    target = tmp_path / "f.txt"
    target.write_bytes(b"hello\xff")
    assert host.read_bytes(str(target)) == b"hello\xff"
    assert host.read_text(str(target)) == "hello\ufffd"
    assert host.read_bytes(str(tmp_path / "missing")) is None
    assert host.read_bytes(str(tmp_path)) is None  # a directory is not a file
    assert host.list_dir(str(tmp_path)) == ["f.txt"]
    assert host.list_dir(str(tmp_path / "missing")) is None
    (tmp_path / "link").symlink_to(target)
    assert host.realpath(str(tmp_path / "link")) == str(target.resolve())


def test_live_command_timeout_kills_the_whole_group() -> None:
    host = LiveHost()
    started = time.perf_counter()
    # the child spawns a grandchild that would outlive a plain kill of the child
    result = host.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert result.timed_out and result.returncode is None
    assert time.perf_counter() - started < 5
    assert "timed out" in result.describe_failure()


def _alive(pid: int) -> bool:
    """The process runs (a zombie, killed but not yet reaped by whoever adopted it, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pid_from(path: Path, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


pytestmark_posix = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


@pytestmark_posix
def test_a_helper_left_holding_stdout_neither_delays_the_answer_nor_outlives_it(tmp_path: Path) -> None:
    """Issue 25, item 8: an interpreter that answered in milliseconds but left a helper (a .pth file's) holding
    its stdout was reported "timed out after 30s", and the helper was never killed."""
    pid_file = tmp_path / "helper"
    box: list[Any] = []
    script = f"sleep 60 & echo $! > {pid_file}; echo answer"
    worker = threading.Thread(target=lambda: box.append(run_command(["sh", "-c", script], timeout=30)), daemon=True)
    started = time.perf_counter()
    worker.start()
    worker.join(10)
    assert box, "run_command still waits for the helper"
    result = box[0]
    assert result.ok and result.stdout == "answer\n" and time.perf_counter() - started < 5
    assert _gone(_pid_from(pid_file))


@pytestmark_posix
def test_a_helper_in_a_session_of_its_own_is_left_behind_not_waited_for(tmp_path: Path) -> None:
    pid_file = tmp_path / "helper"
    helper = f"import os, time; os.setsid(); open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    script = f'{sys.executable} -c "{helper}" & while [ ! -s {pid_file} ]; do sleep 0.05; done; echo answer'
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(run_command(["sh", "-c", script], timeout=30)), daemon=True)
    worker.start()
    worker.join(10)
    try:
        assert box and box[0].ok and box[0].stdout == "answer\n"  # was: blocked closing the pipe
    finally:
        os.kill(_pid_from(pid_file), signal.SIGKILL)


@pytestmark_posix
def test_kill_started_kills_what_still_runs_with_its_group(tmp_path: Path) -> None:
    """What runs at exit and on SIGTERM/SIGHUP: a probe still running in an abandoned thread dies with bnbdoctor."""
    pid_file = tmp_path / "grandchild"
    box: list[Any] = []
    script = f"sleep 60 & echo $! > {pid_file}; sleep 60"
    worker = threading.Thread(target=lambda: box.append(run_command(["sh", "-c", script], timeout=60)), daemon=True)
    worker.start()
    grandchild = _pid_from(pid_file)
    kill_started()
    worker.join(10)
    assert box and not box[0].ok and _gone(grandchild)


#: bnbdoctor as started from a terminal: under nohup, or as a background job, the test runner inherits SIGHUP and
#: SIGINT ignored, and bnbdoctor rightly keeps a signal its caller ignores; the dispositions are put back to their
#: defaults before exec (which keeps them), so the test sees what a user's terminal sends.
AS_ON_A_TERMINAL = (
    "import os, signal, sys\n"
    "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


@pytestmark_posix
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_stopping_bnbdoctor_stops_the_patient_it_runs(tmp_path: Path, signum: int) -> None:
    """SIGTERM, SIGHUP (a closed terminal, a CI job's timeout) and Ctrl-C while a probe ran left the patient's
    process group running with no time limit (it runs in a session of its own)."""
    pid_file = tmp_path / "pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nsleep 300 & echo $! > {pid_file}\nwait\n")
    python.chmod(0o755)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    bnbdoctor = ["-m", "bnbdoctor", "--python", str(python), "--json", "--no-load"]
    command = [sys.executable, "-c", AS_ON_A_TERMINAL, *bnbdoctor]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    try:
        patient = _pid_from(pid_file)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _gone(patient), "the patient outlived bnbdoctor"
    if signum == signal.SIGINT:
        assert proc.returncode == 2 and b"interrupted" in err, err.decode(errors="replace")[-2000:]
    else:
        assert proc.returncode == 128 + signum
        assert err.decode().strip().splitlines()[-1] == f"bnbdoctor: stopped by {signal.Signals(signum).name}"


def test_live_command_not_found_is_an_answer() -> None:
    result = LiveHost().run(["definitely-not-a-command-bnbdoctor"], timeout=5)
    assert not result.ok and result.error == "not found"


def test_live_run_python_hides_the_script_in_argv() -> None:
    result = LiveHost().run_python(sys.executable, "print('x' * 3)", timeout=30)
    assert result.ok and result.stdout.strip() == "xxx"
    assert result.argv[-1] == "<facts script>"


def test_live_nvml_on_this_machine_is_a_fact_not_a_crash() -> None:
    answer = LiveHost().nvml(timeout=5)
    if answer.available:  # pragma: no cover - only on a GPU machine
        assert answer.driver_version
    else:
        assert answer.error and answer.error_kind


def test_live_os_info_is_what_platform_and_socket_say() -> None:
    """os_info reads os.uname() on Linux instead of importing platform and socket: the same answer."""
    import platform
    import socket

    info = LiveHost().os_info()
    assert (info.system, info.machine, info.release, info.version) == (
        platform.system(),
        platform.machine(),
        platform.release(),
        platform.version(),
    )
    assert info.hostname == (socket.gethostname() or None)
    assert info.mac_version == (platform.mac_ver()[0] or None)


@pytest.mark.parametrize("name", ["HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "HOME", "USER"])
def test_env_outside_allowlist_is_refused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, "s3cr3t")
    with pytest.raises(EnvNotAllowed):
        LiveHost().getenv(name)


def test_secret_looking_names_are_refused_even_if_listed() -> None:
    assert looks_secret("HF_TOKEN") and looks_secret("MY_API_KEY") and looks_secret("PASSWORD")
    assert not looks_secret("KEYBOARD_LAYOUT") and not looks_secret("LD_LIBRARY_PATH")
    assert check_allowed("ld_library_path") == "LD_LIBRARY_PATH"


def _write_fixture(folder: Path, manifest: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine.json").write_text(json.dumps({"format": 1, **manifest}))
    (folder / "root").mkdir(exist_ok=True)
    return folder


def test_fixture_windows_paths_are_case_insensitive(tmp_path: Path) -> None:
    folder = _write_fixture(
        tmp_path / "win", {"os": {"system": "Windows", "machine": "AMD64"}, "env": {"Path": "C:\\Python310"}}
    )
    dll = folder / "root" / "C" / "Windows" / "System32" / "nvcuda.dll"
    dll.parent.mkdir(parents=True)
    dll.write_bytes(b"MZ")
    host = FixtureHost(folder)
    assert host.is_file("c:\\windows\\system32\\NVCUDA.DLL")
    assert host.read_bytes("C:/Windows/System32/nvcuda.dll") == b"MZ"
    assert host.getenv("PATH") == "C:\\Python310"
    assert host.pathmod.join("C:\\a", "b") == "C:\\a\\b"


def test_fixture_symlinks_are_rerooted_and_cannot_escape(tmp_path: Path) -> None:
    folder = _write_fixture(tmp_path / "lnx", {"os": {"system": "Linux", "machine": "x86_64"}})
    root = folder / "root"
    (root / "usr/local/cuda-12.1").mkdir(parents=True)
    (root / "usr/local/cuda-12.1/version.json").write_text("{}")
    os.symlink("/usr/local/cuda-12.1", root / "usr/local/cuda")
    os.symlink("/etc/passwd", root / "passwd_abs")  # absolute: resolves inside the fixture
    os.symlink("../../../../../../etc/passwd", root / "passwd_rel")
    host = FixtureHost(folder)
    assert host.realpath("/usr/local/cuda") == "/usr/local/cuda-12.1"
    assert host.is_file("/usr/local/cuda/version.json")
    assert host.read_bytes("/passwd_abs") is None
    assert host.read_bytes("/passwd_rel") is None


def test_fixture_commands_and_missing_commands(tmp_path: Path) -> None:
    folder = _write_fixture(
        tmp_path / "cmd",
        {
            "os": {"system": "Linux", "machine": "x86_64"},
            "commands": [
                {"argv": ["/usr/local/cuda/bin/nvcc", "--version"], "stdout": "release 12.1, V12.1.105"},
                {"argv": ["ldconfig", "-p"], "timed_out": True},
            ],
        },
    )
    host = FixtureHost(folder)
    assert host.run(["/usr/local/cuda/bin/nvcc", "--version"]).stdout.startswith("release 12.1")
    assert host.run(["/opt/other/nvcc", "--version"]).ok  # matched by base name
    assert host.run(["ldconfig", "-p"]).timed_out
    assert host.run(["nvidia-smi"]).error == "not found"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ("[]", "must hold a JSON object"),
        ('{"format": 7, "os": {"system": "Linux", "machine": "x86_64"}}', "format 7"),
        ('{"format": 1}', "'os' needs"),
        ('{"format": 1, "os": {"system": "Linux", "machine": "x", "colour": 1}}', "unknown 'os' keys"),
        (
            '{"format": 1, "os": {"system": "Linux", "machine": "x"}, "nvml": {"devices": [{"name": 1}]}}',
            "malformed 'nvml'",
        ),
    ],
)
def test_malformed_fixtures_raise_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "machine.json").write_text(content)
    with pytest.raises(FixtureError, match=message):
        FixtureHost(tmp_path)


def test_unknown_fixture_names_known_ones() -> None:
    with pytest.raises(FixtureError, match="no recorded machine named 'nope'"):
        FixtureHost.named("nope")


def test_reading_a_small_file_does_not_reserve_the_read_limit(tmp_path: Path) -> None:
    """read_bytes(limit=256 MiB) on a 4 KiB library allocated 256 MiB first (found by the fuzz campaign:
    every diagnosis of a recorded machine peaked at 256-512 MiB); it reads what the file holds."""
    import tracemalloc

    from bnbdoctor.hosts.base import DEFAULT_READ_LIMIT, read_at_most
    from bnbdoctor.hosts.live import LiveHost

    small = tmp_path / "libsmall.so"
    small.write_bytes(b"\x7fELF" + b"\0" * 4092)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        assert LiveHost().read_bytes(str(small)) == small.read_bytes()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    with open(small, "rb") as handle:
        assert read_at_most(handle, 10) == small.read_bytes()[:10]
    with open("/proc/self/status", "rb") as handle:  # a file that reports no size
        assert b"Name:" in read_at_most(handle, DEFAULT_READ_LIMIT)


SLOW_STDERR = r"""
import sys, time
for i in range(3):
    sys.stderr.write(f"line {i}\n"); sys.stderr.flush()
    time.sleep(0.3)
sys.stderr.write("x" * 10000 + "\n")
sys.stderr.write("no line end")
print("done")
"""


def test_stderr_lines_are_heard_while_the_command_runs() -> None:
    from bnbdoctor.hosts.command import MAX_LINE, run_command

    heard: list[tuple[float, str]] = []
    started = time.monotonic()

    def listener(line: str) -> None:
        heard.append((time.monotonic(), line))

    result = run_command([sys.executable, "-c", SLOW_STDERR], timeout=30, on_stderr_line=listener)
    ended = time.monotonic()
    assert result.ok and result.stdout == "done\n"
    lines = [line for _, line in heard]
    assert lines == ["line 0", "line 1", "line 2", "x" * MAX_LINE, "no line end"]  # a long line is passed on cut
    assert result.stderr.startswith("line 0\nline 1\n")  # and the whole stderr is still kept
    # line 0 came while the child still had 0.9 s of sleeping ahead of it, not at the end
    assert heard[0][0] - started < ended - started - 0.5
    assert heard[0][0] < heard[1][0] < heard[2][0] <= ended


def test_a_failing_stderr_listener_does_not_stop_the_command() -> None:
    from bnbdoctor.hosts.command import run_command

    calls: list[str] = []

    def listener(line: str) -> None:
        calls.append(line)
        raise RuntimeError("boom")

    result = run_command([sys.executable, "-c", SLOW_STDERR.replace("0.3", "0")], timeout=30, on_stderr_line=listener)
    assert result.ok and calls == ["line 0"]  # heard once, then left alone; the output is still read to its end


def test_stderr_listener_stays_within_the_output_limit() -> None:
    from bnbdoctor.hosts.command import run_command

    heard: list[str] = []
    flood = "import sys\nwhile True: sys.stderr.write('y' * 99 + '\\n')"
    result = run_command([sys.executable, "-c", flood], timeout=30, max_output=10_000, on_stderr_line=heard.append)
    assert result.error and "stderr" in result.error
    assert len(heard) <= 100 and all(line == "y" * 99 for line in heard)


def test_live_run_python_streams_stderr_and_fixtures_replay_theirs(tmp_path: Path) -> None:
    heard: list[str] = []
    script = "import sys; sys.stderr.write('a\\nb\\n'); print('ok')"
    result = LiveHost().run_python(sys.executable, script, timeout=30, on_stderr_line=heard.append)
    assert result.ok and heard == ["a", "b"]
    folder = _write_fixture(tmp_path / "py", {"os": {"system": "Linux", "machine": "x86_64"}})
    (folder / "root" / "usr" / "bin").mkdir(parents=True)
    (folder / "root" / "usr" / "bin" / "python3").write_bytes(b"")
    replayed: list[str] = []
    host = FixtureHost(folder)
    answer = host.run_python("/usr/bin/python3", "", purpose="merge-check", on_stderr_line=replayed.append)
    assert replayed == [answer.stderr] == ["recorded machine has no answer for this interpreter"]
    # a recorded run's own stderr is replayed, line by line
    layers = "merge-check: layer 1/2 model.layers.0.q_proj\nmerge-check: layer 2/2 model.layers.0.v_proj\n"
    record = {"executable": "/usr/bin/python3", "merge-check": {"result": {"ok": True}, "stderr": layers}}
    recorded = FixtureHost(
        _write_fixture(tmp_path / "rec", {"os": {"system": "Linux", "machine": "x86_64"}, "python": record})
    )
    heard_again: list[str] = []
    answer = recorded.run_python("/usr/bin/python3", "", purpose="merge-check", on_stderr_line=heard_again.append)
    assert json.loads(answer.stdout) == {"ok": True}
    assert heard_again == layers.splitlines()
