"""Bad input, through the real command line: one line on stderr and a non-zero exit, never a green result."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT


def bnbdoctor(*args: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], input=stdin, capture_output=True, cwd=ROOT, timeout=timeout
    )
    out, err = run.stdout.decode("utf-8", "replace"), run.stderr.decode("utf-8", "replace")
    return subprocess.CompletedProcess(run.args, run.returncode, out, err)


def one_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused run prints on stderr (nothing on stdout, no traceback)."""
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert run.stdout == ""
    return lines[0]


# --- explain: a file that is not text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (os.urandom(20_000), "holds NUL bytes"),
        (b"\x00" * 100_000, "holds NUL bytes"),
        (bytes(range(128, 256)) * 200, "not UTF-8"),
    ],
    ids=["random", "zeros", "undecodable"],
)
@pytest.mark.parametrize("fmt", [[], ["--json"], ["--markdown"]], ids=["text", "json", "markdown"])
def test_explain_refuses_a_binary_file(tmp_path: Path, data: bytes, said: str, fmt: list[str]) -> None:
    path = tmp_path / "bin.dat"
    path.write_bytes(data)
    run = bnbdoctor("explain", *fmt, str(path))
    assert run.returncode == 2
    line = one_line(run)
    assert line.startswith(f"bnbdoctor: error: {path}: not a text file") and said in line, line
    assert "No error" not in run.stdout + run.stderr


def test_explain_refuses_binary_on_stdin() -> None:
    run = bnbdoctor("explain", "-", stdin=b"\x00\x01\x02\xff" * 5000)
    assert run.returncode == 2 and "stdin: not a text file" in one_line(run)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", 0),  # nothing to explain
        ("caf\xe9 l\xe4uft: a Latin-1 log\nall fine\n".encode("latin-1"), 0),
        (codecs.BOM_UTF16_LE + "OSError: libcusparse.so.11: cannot open shared object file\n".encode("utf-16-le"), 1),
        (
            b"{'loss': 1.23, 'epoch': 0.1}\n" * 100
            + b"\x00" * 200
            + b"\nValueError: Some modules are dispatched on the CPU or the disk.\n",
            1,
        ),
    ],
    ids=["empty", "latin-1", "utf-16", "a-few-nuls"],
)
def test_explain_still_reads_text_that_is_not_plain_utf8(tmp_path: Path, data: bytes, code: int) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(data)
    run = bnbdoctor("explain", str(path))
    assert run.returncode == code, run.stderr
    assert "not a text file" not in run.stderr


# --- lint: a file it cannot parse ---------------------------------------------------------------------

UNPARSEABLE = {
    "py2.py": b'print "hello"\n',
    "nul.py": b"import torch\x00\nx = 1\n",
    "broken.ipynb": b'{"cells": [',
}


@pytest.mark.parametrize("name", sorted(UNPARSEABLE))
@pytest.mark.parametrize("strict", [[], ["--strict"]], ids=["default", "strict"])
def test_lint_fails_on_a_file_it_cannot_parse(tmp_path: Path, name: str, strict: list[str]) -> None:
    (tmp_path / name).write_bytes(UNPARSEABLE[name])
    (tmp_path / "ok.py").write_text("x = 1\n")
    run = bnbdoctor("lint", "--no-python", *strict, str(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{tmp_path / name}: not linted: " in run.stdout
    assert "line None" not in run.stdout
    assert run.stdout.rstrip().endswith(
        "bnbdoctor lint: 1 file, 1 NOT linted (could not be parsed), 0 error(s), 0 warning(s), 0 info"
    )


def test_lint_of_parsed_files_only_still_passes(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    run = bnbdoctor("lint", "--no-python", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("bnbdoctor lint: 1 file, 0 error(s), 0 warning(s), 0 info")


def test_every_lint_format_reports_the_file_not_linted(tmp_path: Path) -> None:
    bad = tmp_path / "py2.py"
    bad.write_bytes(UNPARSEABLE["py2.py"])
    (tmp_path / "ok.py").write_text("x = 1\n")

    run = bnbdoctor("lint", "--no-python", "--json", str(tmp_path))
    assert run.returncode == 1
    document = json.loads(run.stdout)
    assert list(document["facts"]["lint"]["unparsed"]) == [str(bad)]

    run = bnbdoctor("lint", "--no-python", "--sarif", str(tmp_path))
    assert run.returncode == 1
    (invocation,) = json.loads(run.stdout)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error" and notification["message"]["text"].startswith("not linted: line 1: ")
    assert notification["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(bad)

    run = bnbdoctor("lint", "--no-python", "--markdown", str(tmp_path))
    assert run.returncode == 1
    assert "**Not linted:** 1 file could not be parsed" in run.stdout and "should work" not in run.stdout
    assert f"- `{bad}`: line 1: " in run.stdout

    clean = bnbdoctor("lint", "--no-python", "--sarif", str(tmp_path / "ok.py"))
    assert clean.returncode == 0
    assert json.loads(clean.stdout)["runs"][0]["invocations"] == [{"executionSuccessful": True}]


# --- --tui without a terminal ---------------------------------------------------------------------------

NO_TERMINAL = "--tui needs a terminal, but standard input and standard error are not terminals here"


def _without_a_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """bnbdoctor with stdin /dev/null and stdout and stderr pipes: no terminal anywhere."""
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=False,
    )


def test_the_doctor_app_without_a_terminal_is_one_line_and_exit_2() -> None:
    """stdin /dev/null, stdout and stderr pipes: the app used to start and hang writing escape codes."""
    run = _without_a_terminal("--fixture", "a100-healthy", "--tui")
    assert run.returncode == 2
    line = one_line(run)
    assert line.startswith(f"bnbdoctor: error: {NO_TERMINAL}; ") and "--json" in line, line
    assert "\x1b" not in run.stderr


def test_the_fleet_app_without_a_terminal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    saved = bnbdoctor("--fixture", "a100-healthy", "--json", "-o", str(tmp_path / "node1.json"))
    assert saved.returncode == 0, saved.stderr
    run = _without_a_terminal("fleet", str(tmp_path), "--tui")
    assert run.returncode == 2
    line = one_line(run)
    assert line.startswith(f"bnbdoctor: error: {NO_TERMINAL}; ") and "without --tui" in line, line


def _read_all(controller: int) -> str:
    """What a finished child wrote to the pseudo-terminal."""
    import select

    data = b""
    while select.select([controller], [], [], 0.5)[0]:
        data += os.read(controller, 65536)
    return data.decode("utf-8", "replace")


def test_a_terminal_is_asked_of_stdin_and_stderr() -> None:
    """On a pseudo-terminal nothing is missing, stdout redirected included (``--tui > farewell.txt``, as
    docs/tui.md says); with stderr piped, where Textual draws, the message names standard error."""
    import pty

    code = "from bnbdoctor.contract import missing_terminal; import sys; sys.__stderr__.write(repr(missing_terminal()))"
    controller, terminal = pty.openpty()
    try:
        for stdout in (terminal, subprocess.PIPE):
            on_terminal = subprocess.run(
                [sys.executable, "-c", code], stdin=terminal, stdout=stdout, stderr=terminal, cwd=ROOT, timeout=30
            )
            assert on_terminal.returncode == 0
            assert os.read(controller, 4096).decode().strip() == "[]"
        piped = subprocess.run(
            [sys.executable, "-m", "bnbdoctor", "--fixture", "a100-healthy", "--tui"],
            stdin=terminal,
            stdout=terminal,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=30,
        )
        assert piped.returncode == 2
        said = piped.stderr.decode()
        assert "--tui needs a terminal, but standard error is not one here" in said, said
        plain = subprocess.run(  # without --tui the doctor chooses the text report there
            [sys.executable, "-m", "bnbdoctor", "--fixture", "a100-healthy"],
            stdin=terminal,
            stdout=terminal,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=60,
        )
        assert plain.returncode == 0, plain.stderr
        assert "Summary: 0 errors, 0 warnings" in _read_all(controller)  # the text report, not the app
    finally:
        os.close(controller)
        os.close(terminal)


# --- secrets: lint, merge-check and explain redact every format, as the doctor does -------------------

HF = "hf_PlantedHuggingFace0123456789abcd"
AWS = "AKIAPLANTED0123456XY"
URL_PASSWORD = "hunter2planted"  # noqa: S105 - planted, it must never reach a report
USER = "zeldaplanted"
PLANTED = (HF, AWS, URL_PASSWORD, USER)
FORMATS: tuple[list[str], ...] = ([], ["--json"], ["--markdown"])


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A home folder named after the user, holding a project folder named with an HF token and an AWS key."""
    home = tmp_path / USER
    project = home / f"run-{HF}" / AWS
    project.mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "USER": USER, "LOGNAME": USER, "PYTHONPATH": str(ROOT)}
    return project, env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def _leaks(text: str, home: Path) -> list[str]:
    return [secret for secret in (*PLANTED, str(home)) if secret in text]


def _assert_redacted_everywhere(command: list[str], formats: list[list[str]], env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    for fmt in formats:
        run = _run([*command, *fmt], env)
        assert run.returncode in (0, 1), run.stderr
        assert _leaks(run.stdout, home) == [], (fmt, run.stdout)
        assert "redaction is off" not in run.stderr
    kept = _run([*command, "--json", "--no-redact"], env)  # the secrets were there to find
    assert set(_leaks(kept.stdout, home)) >= {HF, AWS, str(home)}, kept.stdout
    assert "redaction is off (--no-redact)" in kept.stderr
    shown = _run([*command, "--json", "--show-redactions"], env)
    assert "redacted [token]: " in shown.stderr and "redacted [home]: " in shown.stderr
    assert _leaks(shown.stdout, home) == []


def test_lint_redacts_every_format(planted: tuple[Path, dict[str, str]]) -> None:
    project, env = planted
    (project / "train.py").write_text(
        "from transformers import AutoModelForCausalLM\n"
        f'm = AutoModelForCausalLM.from_pretrained("https://bob:{URL_PASSWORD}@hub.example.com/m", load_in_4bit=True)\n'
    )
    (project / "old.py").write_text('print "python 2"\n')
    _assert_redacted_everywhere(["lint", "--no-python", str(project)], [*FORMATS, ["--sarif"]], env)
    sarif = json.loads(_run(["lint", "--no-python", "--sarif", str(project)], env).stdout)
    uris = [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in _notifications(sarif)]
    assert uris == ["~/run-<redacted-token>/<redacted-token>/old.py"]


def _notifications(sarif: dict[str, Any]) -> list[Any]:
    notifications: list[Any] = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    return notifications


def _safetensors(path: Path) -> None:
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)


def test_merge_check_redacts_every_format(planted: tuple[Path, dict[str, str]]) -> None:
    """The engine's interpreter fails at once (no torch needed): the document still names every path."""
    project, env = planted
    adapter, base, bin_folder = project / "adapter", project / "base", project / "bin"
    for folder in (adapter, base, bin_folder):
        folder.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8, "lora_alpha": 16}))
    _safetensors(adapter / "adapter_model.safetensors")
    _safetensors(base / "model.safetensors")
    python = bin_folder / "python"
    python.write_text("#!/bin/sh\necho 'no torch here' >&2\nexit 3\n")
    python.chmod(0o755)
    command = ["merge-check", str(adapter), "--base", str(base), "--python", str(python)]
    _assert_redacted_everywhere(command, list(FORMATS), env)
    document = json.loads(_run([*command, "--json"], env).stdout)
    assert document["adapter"] == "~/run-<redacted-token>/<redacted-token>/adapter"
    assert document["error"].startswith("`~/run-<redacted-token>/<redacted-token>/bin/python ")


def test_explain_redacts_every_format(planted: tuple[Path, dict[str, str]]) -> None:
    project, env = planted
    home = env["HOME"]
    log = project / f"{AWS}.log"
    log.write_text(
        f"({USER}) {USER}@gpu-node-07:~/llm$ python train.py\n"
        f"CUDA SETUP: Loading binary {home}/{HF}/libbitsandbytes_cuda118.so...\n"
        f"CUDA SETUP: Loading binary git+https://bob:{URL_PASSWORD}@git.example.com/x/libbitsandbytes_cuda118.so...\n"
        "OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n"
    )
    _assert_redacted_everywhere(["explain", str(log)], list(FORMATS), env)


# --- explain: a pipe whose writer stalls ---------------------------------------------------------------


def _fifo_writer(path: Path, data: bytes, hold: float) -> threading.Thread:
    """A writer that opens the FIFO, writes ``data`` and keeps its end open for ``hold`` seconds (a stalled
    ``tail -f``), then closes it."""

    def write() -> None:
        with open(path, "wb", buffering=0) as end:
            end.write(data)
            time.sleep(hold)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


LOG = b"OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n"


@pytest.mark.parametrize(("data", "said"), [(b"", "nothing more arrived for"), (LOG, f"after {len(LOG)} bytes")])
def test_a_fifo_whose_writer_stalls_is_refused_after_the_idle_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, said: str
) -> None:
    """explain waits READ_IDLE_S for the next bytes of a pipe, then says so: never blocked forever, never a
    diagnosis of a log that has not ended."""
    from bnbdoctor.explain import pipeline

    monkeypatch.setattr(pipeline, "READ_IDLE_S", 0.5)
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    writer = _fifo_writer(fifo, data, hold=30)
    time.sleep(0.2)  # the writer opens its end first: a FIFO without a writer reads as an empty log
    with pytest.raises(pipeline.ExplainError, match=said) as refused:
        pipeline.explain_file(str(fifo))
    assert writer.is_alive(), "refused while the writer still holds its end, not when it closed it"
    assert "save it to a file first" in str(refused.value)


def test_a_fifo_whose_writer_finishes_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bnbdoctor.explain import pipeline

    monkeypatch.setattr(pipeline, "READ_IDLE_S", 3.0)
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    _fifo_writer(fifo, LOG, hold=0.3)
    time.sleep(0.1)
    report = pipeline.explain_file(str(fifo))
    assert any("libcusparse" in e.value for f in report.findings for e in f.evidence)


def test_a_pipe_on_stdin_is_read_whole() -> None:
    """The pipe path reads what has arrived each time (short reads), so a log piped in whole is the same log."""
    run = bnbdoctor("explain", "-", "--json", stdin=LOG * 3)
    assert run.returncode == 1, run.stderr
    assert "libcusparse" in run.stdout


# --- a recorded machine with absurd values -------------------------------------------------------------


@pytest.mark.parametrize("length", [300, 1_200_000])
def test_a_recorded_machine_with_a_huge_host_name_is_diagnosed_and_redacted(tmp_path: Path, length: int) -> None:
    """A user-supplied folder (``--fixture PATH``) whose manifest names a host of 1.2 MB: the redactor built a
    pattern of it for every string of the report (minutes); now a name longer than any real one is replaced as
    it stands, and the report never shows it."""
    import shutil

    machine = tmp_path / "machine"
    shutil.copytree(ROOT / "platform_fixtures" / "a100-healthy", machine, symlinks=True)
    manifest = json.loads((machine / "machine.json").read_text())
    manifest["os"]["hostname"] = "node-" + "x" * length
    (machine / "machine.json").write_text(json.dumps(manifest))
    for fmt in ("--text", "--json", "--markdown"):
        run = bnbdoctor("--fixture", str(machine), fmt, timeout=120)
        assert run.returncode == 0, run.stderr
        assert "x" * 200 not in run.stdout, fmt


def test_a_name_longer_than_any_real_one_is_still_redacted() -> None:
    from bnbdoctor.redact import HOST, Redactor

    name = "node-" + "x" * 300
    redactor = Redactor(host=name)
    assert redactor.text(f"ssh {name}: done; {name}") == f"ssh {HOST}: done; {HOST}"
    assert redactor.summary() == {"host": 2}


# --- which interpreter was examined --------------------------------------------------------------------


def test_a_stale_activation_is_reported_as_what_it_is(tmp_path: Path) -> None:
    """VIRTUAL_ENV names a venv that was deleted: the choice passes over it, and the report says so (BNB003, a
    warning naming the stale variable and what was examined instead), never silently."""
    import shutil

    machine = tmp_path / "machine"
    shutil.copytree(ROOT / "platform_fixtures" / "a100-healthy", machine, symlinks=True)
    manifest = json.loads((machine / "machine.json").read_text())
    manifest["env"]["VIRTUAL_ENV"] = "/home/alice/venvs/gone"
    (machine / "machine.json").write_text(json.dumps(manifest))
    report = json.loads(bnbdoctor("--fixture", str(machine), "--json").stdout)
    assert report["facts"]["python"]["stale_activations"] == ["VIRTUAL_ENV=~/venvs/gone"]
    assert report["facts"]["python"]["selected_by"] == "current"
    [finding] = [f for f in report["findings"] if f["rule_id"] == "BNB003"]
    assert finding["severity"] == "warning" and "stale activation" in finding["title"]
    text = bnbdoctor("--fixture", str(machine), "--text").stdout
    assert "(the interpreter running bnbdoctor)" in text
    # a stale variable the choice never reached (the active venv comes first) is not what was passed over
    manifest["env"].update(VIRTUAL_ENV="/home/alice/venvs/llm", CONDA_PREFIX="/home/alice/miniconda3/envs/gone")
    (machine / "machine.json").write_text(json.dumps(manifest))
    report = json.loads(bnbdoctor("--fixture", str(machine), "--json").stdout)
    assert report["facts"]["python"]["stale_activations"] == []
    assert not [f for f in report["findings"] if f["rule_id"] == "BNB003"]


def test_bnbdoctor_s_own_empty_environment_is_the_root_and_its_installs_follow_from_it() -> None:
    """No env active and bnbdoctor's own venv has neither patient: the error is that the wrong interpreter was
    examined (BNB003); "PyTorch / bitsandbytes is not installed" follow from it (they would install into
    bnbdoctor's venv), listed under it rather than as causes of their own."""
    from bnbdoctor.doctor import diagnose
    from bnbdoctor.facts import BnbFacts
    from bnbdoctor.hosts.fixture import FixtureHost
    from bnbdoctor.rules import all_rules, run_rules

    facts = diagnose(FixtureHost.named("torch-missing")).facts
    assert facts.python is not None
    facts.python.selected_by = "current"
    facts.python.bitsandbytes = BnbFacts(installed=False)
    findings = run_rules(facts, all_rules()).findings
    roots = [f.rule_id for f in findings if f.severity.value == "error"]
    assert roots == ["BNB003"], roots
    followers = {follow.rule_id for follow in findings[0].follows}
    assert {"BNB201", "BNB203"} <= followers, followers
