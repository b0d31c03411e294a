"""``bnbdoctor mcp`` against hostile clients and hostile folders (issue 25, items 9-12).

The server is started as the console script starts it (a launcher file, so that ``sys.path[0]`` is its folder and
not the working folder) with ``PYTHONPATH`` naming this checkout, and driven two ways: with the SDK's own client,
and with raw JSON-RPC lines (malformed, hostile, cancelled, disconnected). Every test checks that the server
answers (no client waits forever), that nothing the calls started is left running, and that nothing is written
outside what the call names. The scripts in /work/shared/reliability/end_to_end/mcp_*.py are where these began.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the mcp extra is not installed")

LINT_SCRIPT = ROOT / "tests" / "data" / "lint" / "qlora_merge_notebook_style.py"
TINY_MODEL = ROOT / "tests" / "data" / "fit" / "tiny-llama.json"
PLANTED_TOKEN = "hf_PlantedPlantedPlantedPlanted01"  # noqa: S105 - planted, to be redacted
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def launcher(folder: Path) -> Path:
    """A ``bnbdoctor`` command like the one pip writes: its own folder, not the working folder, is sys.path[0]."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bnbdoctor"
    path.write_text(f"#!{sys.executable}\nimport sys\nfrom bnbdoctor.cli import main\nsys.exit(main())\n")
    path.chmod(0o755)
    return path


def server_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.pop("VIRTUAL_ENV", None)
    env.pop("CONDA_PREFIX", None)
    return env


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return False


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


class Raw:
    """``bnbdoctor mcp`` spoken to line by line."""

    def __init__(self, tmp: Path, *args: str, cwd: Path | None = None, **env: str) -> None:
        command = launcher(tmp / "bin")
        self.process = subprocess.Popen(
            [str(command), "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=server_env(**env),
            cwd=cwd or tmp,
        )
        self.buffer = b""
        self.kept: dict[Any, dict[str, Any]] = {}  # responses read while waiting for another

    def send(self, raw: bytes | dict[str, Any]) -> None:
        data = json.dumps(raw).encode() if isinstance(raw, dict) else raw
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """The next message from the server, or None when none comes in ``timeout`` seconds."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def answer_to(self, request_id: int | str | None, timeout: float = 60.0) -> dict[str, Any]:
        """The response with this id (notifications and other responses are passed over)."""
        deadline = time.monotonic() + timeout
        while request_id not in self.kept:
            message = self.receive(max(0.1, deadline - time.monotonic()))
            assert message is not None, f"no answer to request {request_id!r} in {timeout} s"
            if "method" not in message:
                self.kept[message.get("id")] = message
        return self.kept.pop(request_id)

    def initialize(self) -> None:
        self.send(INIT)
        assert "result" in self.answer_to(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )

    def close(self, timeout: float = 20.0) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[Raw]:
    server = Raw(tmp_path)
    server.initialize()
    yield server
    if server.process.poll() is None:
        server.close()


def tool_text(answer: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in answer["result"]["content"])


# -- item 12: every message is answered -------------------------------------------------------------------------

HOSTILE = {
    "a lone surrogate in explain's log": (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explain","arguments":{"log":"a\\ud800b"}}}',
        1,
        -32602,
    ),
    "a lone surrogate in a lint path": (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lint","arguments":{"paths":["/tmp/\\udce9.py"]}}}',
        2,
        -32602,
    ),
    "nesting 100,000 deep": (
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"explain","arguments":{"log":"x","rules":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}}",
        3,
        -32700,
    ),
    "params that is a string": (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}', 4, -32600),
    "text that is not JSON": (b'{"jsonrpc":"2.0","id":5,"method":', 5, -32700),
    "a batch": (b'[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]', 6, -32600),
    "an id that is a float": (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, -32600),
    "bytes that are not UTF-8": (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"\xff\xfe"}}', 8, -32700),
    "a number of 5,000 digits": (
        b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":' + b"9" * 5000 + b"}}",
        9,
        -32700,
    ),
    "a JSON string, not an object": (b'"hello"', None, -32600),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_message_it_cannot_take_is_answered_with_a_json_rpc_error(raw: Raw, case: str) -> None:
    line, request_id, code = HOSTILE[case]
    raw.send(line)
    answer = raw.answer_to(request_id, timeout=30)
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"]
    if case == "a batch":  # each request of the batch is answered
        assert raw.answer_to(7, timeout=30)["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "id": 99, "method": "ping"})  # and the server goes on
    assert raw.answer_to(99)["result"] == {}


def test_arguments_of_the_wrong_type_or_with_a_nul_are_answered(raw: Raw) -> None:
    raw.call(1, "lint", {"paths": "x.py"})
    assert raw.answer_to(1)["result"]["isError"] is True
    raw.call(2, "lint", {"paths": ["a\x00b.py"]})
    answer = raw.answer_to(2)
    assert answer["result"]["isError"] is True and "NUL" in tool_text(answer)
    raw.call(3, "fit", {"model": "x", "timeout_s": "soon"})
    assert raw.answer_to(3)["result"]["isError"] is True
    raw.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 7}})
    assert "error" in raw.answer_to(4)


def test_a_line_without_end_is_not_kept(tmp_path: Path) -> None:
    """300 MiB without a newline: refused once it passes 32 MiB, never held (the server stays near its size)."""
    server = Raw(tmp_path)
    server.initialize()
    assert server.process.stdin is not None
    server.process.stdin.write(
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"explain","arguments":{"log":"'
    )
    block = b"x" * (1 << 20)
    for _ in range(300):
        server.process.stdin.write(block)
    server.process.stdin.flush()
    assert server.answer_to(5, timeout=60)["error"]["code"] == -32600
    with open(f"/proc/{server.process.pid}/status") as handle:
        peak_mib = next(int(line.split()[1]) // 1024 for line in handle if line.startswith("VmHWM"))
    assert peak_mib < 250, f"the server's peak resident size was {peak_mib} MiB"
    server.send(b'"}}}')  # the end of that line, then a request that is answered
    server.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
    assert server.answer_to(6)["result"] == {}
    assert server.close() == 0


# -- item 12: a call that ends early leaves nothing running -------------------------------------------------------


def hanging_interpreter(tmp: Path) -> tuple[Path, Path]:
    """An "interpreter" that records its pid and sleeps: fit's engine that never answers."""
    pids = tmp / "pids"
    hang = tmp / "hang" / "python"
    hang.parent.mkdir()
    hang.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 100000\n")
    hang.chmod(0o755)
    return hang, pids


def started(pids: Path, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pids.exists() and pids.read_text().split():
            return [int(pid) for pid in pids.read_text().split()]
        time.sleep(0.1)
    raise AssertionError("the engine never started")


def gone(pids: list[int], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["cancelled", "disconnected", "terminated"])
def test_a_call_that_ends_early_leaves_nothing_running(tmp_path: Path, ending: str) -> None:
    hang, pids = hanging_interpreter(tmp_path)
    server = Raw(tmp_path, "--allow-python", str(hang))
    server.initialize()
    server.call(1, "fit", {"model": str(TINY_MODEL), "python": str(hang), "gpus": "24GiB", "remedies": False})
    engines = started(pids)
    try:
        if ending == "cancelled":
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
            assert gone(engines), "the cancelled call's engine is still running"
            server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            assert server.answer_to(2)["result"] == {}
            assert server.close() == 0
        elif ending == "disconnected":
            started_at = time.monotonic()
            assert server.close() == 0
            assert time.monotonic() - started_at < 10, "the server waited for the call after its client left"
        else:
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(10) == 128 + signal.SIGTERM
        assert gone(engines), f"left running after the call was {ending}: {engines}"
    finally:
        kill_all(engines)
        if server.process.poll() is None:
            server.process.kill()


# -- item 10: only the interpreters the server allows run ----------------------------------------------------------


def client_program(tmp: Path) -> tuple[Path, Path]:
    """Not an interpreter: a program that records that it ran and prints a secret of the environment on stderr."""
    marker = tmp / "ran"
    program = tmp / "not-python"
    program.write_text(f'#!/bin/sh\necho ran >> {marker}\necho "env: HF=$HF_TOKEN" >&2\nexit 3\n')
    program.chmod(0o755)
    return program, marker


def test_an_interpreter_the_server_does_not_allow_never_runs(tmp_path: Path) -> None:
    program, marker = client_program(tmp_path)
    server = Raw(tmp_path, HF_TOKEN=PLANTED_TOKEN)
    server.initialize()
    calls: dict[int, tuple[str, dict[str, Any]]] = {
        1: ("diagnose", {"python": str(program), "load": False}),
        2: ("lint", {"paths": [str(LINT_SCRIPT)], "python": str(program)}),
        3: ("fit", {"model": str(TINY_MODEL), "python": str(program)}),
        4: ("diagnose", {"python": str(tmp_path)}),  # a folder holding no interpreter
    }
    for request_id, (tool, arguments) in calls.items():
        server.call(request_id, tool, arguments)
        answer = server.answer_to(request_id)
        assert answer["result"]["isError"] is True, answer
        assert "not an interpreter this server may run" in tool_text(answer) or request_id == 4
    assert not marker.exists(), "the client's program ran"
    assert server.close() == 0


def test_an_allowed_interpreter_runs_and_every_answer_is_redacted(tmp_path: Path) -> None:
    program, marker = client_program(tmp_path)
    server = Raw(tmp_path, "--allow-python", str(program), HF_TOKEN=PLANTED_TOKEN)
    server.initialize()
    server.call(1, "diagnose", {"python": str(program), "load": False})
    server.call(2, "lint", {"paths": [str(LINT_SCRIPT)], "python": str(program)})
    answers = [server.answer_to(1, timeout=120), server.answer_to(2, timeout=120)]
    assert marker.exists(), "the allowed program did not run"
    for answer in answers:
        text = json.dumps(answer)
        assert PLANTED_TOKEN not in text, "a secret of the server's environment came back"
        assert str(Path.home()) not in text or str(Path.home()) in ("/", "/root")
    assert server.close() == 0


def test_an_allow_python_that_names_nothing_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(launcher(tmp_path / "bin")), "mcp", "--allow-python", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "--allow-python" in done.stderr and "Traceback" not in done.stderr


# -- items 9 and 11: nothing a client sends is an option, nothing in the working folder runs ----------------------


def test_lint_paths_are_paths_never_options(tmp_path: Path) -> None:
    victim = tmp_path / "important.conf"
    victim.write_text("precious contents\n")
    program, marker = client_program(tmp_path)
    server = Raw(tmp_path)
    server.initialize()
    server.call(1, "lint", {"paths": ["-o", str(victim), str(LINT_SCRIPT)]})
    server.call(2, "lint", {"paths": ["--python", str(program), str(LINT_SCRIPT)]})
    server.call(3, "fit", {"model": "--help"})
    server.call(4, "diagnose", {"fixture": "--no-redact"})
    for request_id in (1, 2, 3, 4):
        answer = server.answer_to(request_id, timeout=120)
        assert answer["result"]["isError"] is True, answer  # "-o" (and "--help") are files that do not exist
    assert victim.read_text() == "precious contents\n"
    assert not marker.exists()
    assert server.close() == 0


def test_the_command_lines_keep_client_values_out_of_the_options() -> None:
    """Each tool's command line, parsed by the command's own parser: every value lands where it was meant to."""
    from bnbdoctor.explain.cli import build_parser as explain_parser
    from bnbdoctor.fit.cli import build_parser as fit_parser
    from bnbdoctor.lint.cli import build_parser as lint_parser
    from bnbdoctor.mcp_server.commands import diagnose_argv, explain_argv, fit_argv, lint_argv

    lint = lint_parser().parse_args(lint_argv(["-o", "FILE", "--python=/bin/true", "--strict"], "-x")[1:])
    assert lint.paths == ["-o", "FILE", "--python=/bin/true", "--strict"]
    assert lint.python == "-x" and lint.output is None and not lint.strict
    fit = fit_parser().parse_args(fit_argv("--trust-remote-code", {"gpus": "-o x", "dtype": "--help"})[1:])
    assert fit.model == "--trust-remote-code" and not fit.trust_remote_code
    assert fit.gpus == "-o x" and fit.dtype == "--help"
    explain = explain_parser().parse_args(explain_argv(["-o"])[1:])
    assert explain.file == "-" and explain.output is None and explain.rule == ["-o"]
    from bnbdoctor.cli import build_parser as doctor_parser

    doctor = doctor_parser().parse_args(diagnose_argv(fixture="--no-redact", rules=["--tui"]))
    assert doctor.fixture == "--no-redact" and not doctor.no_redact and doctor.rule == ["--tui"]


def forged_package(folder: Path) -> Path:
    """A ``bnbdoctor/`` package in a folder, as a repository an agent has open may hold: it leaves a marker."""
    package = folder / "bnbdoctor"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        "import os\nopen(os.path.join(os.getcwd(), 'RAN'), 'w').write('the repo code ran')\n"
        'print(\'{"summary": {"errors": 0}, "findings": [], "source": {"label": "forged"}}\')\n'
    )
    (package / "cli.py").write_text("import os\nopen(os.path.join(os.getcwd(), 'RAN'), 'w').write('cli ran')\n")
    return folder / "RAN"


def test_a_bnbdoctor_package_in_the_working_folder_never_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    marker = forged_package(repo)
    before = sorted(p.name for p in repo.rglob("*"))
    server = Raw(tmp_path, cwd=repo)
    server.initialize()
    server.call(1, "diagnose", {"fixture": "centos7-cxxabi"})
    answer = server.answer_to(1, timeout=120)
    document = answer["result"]["structuredContent"]
    assert [f["rule_id"] for f in document["findings"] if f["severity"] == "error"] == ["BNB306"]
    assert not marker.exists(), "the working folder's bnbdoctor package ran"
    assert sorted(p.name for p in repo.rglob("*")) == before  # nothing written in the working folder
    assert server.close() == 0


def test_the_sdk_client_gets_answers_from_a_hostile_folder(tmp_path: Path) -> None:
    """The SDK's own client, started in a folder holding a forged package: the real tools answer."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    repo = tmp_path / "repo"
    marker = forged_package(repo)
    command = launcher(tmp_path / "bin")

    async def main() -> list[Any]:
        params = StdioServerParameters(command=str(command), args=["mcp"], env=server_env(), cwd=str(repo))
        with anyio.fail_after(240):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [
                    await session.call_tool("lint", {"paths": ["-o", str(repo / "out.txt"), str(LINT_SCRIPT)]}),
                    await session.call_tool("lint", {"paths": [str(LINT_SCRIPT)]}),
                    await session.call_tool("lint", {"paths": "not a list"}),
                ]

    injected, linted, wrong_type = anyio.run(main)
    assert injected.is_error and not (repo / "out.txt").exists()
    assert not linted.is_error and linted.structured_content["source"]["kind"] == "lint"
    assert wrong_type.is_error
    assert not marker.exists()


def test_on_a_terminal_it_says_what_it_is_answers_typed_lines_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    import fcntl
    import pty
    import termios

    command = launcher(tmp_path / "bin")
    leader, follower = pty.openpty()

    def own_terminal() -> None:  # a session of its own, the pty its controlling terminal: Ctrl-C is its SIGINT
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [str(command), "mcp"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=server_env(),
        cwd=tmp_path,
        preexec_fn=own_terminal,  # noqa: PLW1509 - a test, no threads of its own here
    )
    os.close(follower)
    seen = b""

    def read_until(needle: bytes, timeout: float = 30.0) -> bytes:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while needle not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.2)[0]:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    break
        return seen

    try:
        assert b"MCP server" in read_until(b"Ctrl-C ends it")
        os.write(leader, b"hello\n")
        assert b"-32700" in read_until(b"-32700")
        os.write(leader, b"\x03")  # Ctrl-C, as the terminal sends it
        assert process.wait(20) == 130
        read_until(b"\n", timeout=1)
        assert b"Traceback" not in seen
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
