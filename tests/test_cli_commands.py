"""Finding every command (issue 13, item 8), as a new user tried them, through real subprocesses.

Seen: ``bnbdoctor --help`` never mentioned ``explain`` or ``fit``; ``bnbdoctor exlpain`` said
"unrecognized arguments" with no "did you mean"; ``bnbdoctor help`` failed; ``explain`` without a
file dumped the usage while ``fit`` gave one line; ``--python`` took only the interpreter's path;
``explain -`` on a terminal waited without a word. And tab completion, for bash, zsh and fish.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from bnbdoctor.cli import COMMANDS, main


def bnbdoctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one stderr line of a usage error (exit 2, nothing on stdout, no usage block)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bnbdoctor: error: "), result.stderr
    return lines[0]


def test_help_lists_every_command_with_one_line_each() -> None:
    result = bnbdoctor("--help")
    assert result.returncode == 0 and result.stderr == ""
    text = result.stdout
    assert text.startswith("usage: bnbdoctor [COMMAND] [OPTIONS]")
    for name, command in COMMANDS.items():
        rows = [line for line in text.splitlines() if line.strip().startswith(f"{name} {command.arguments}")]
        assert len(rows) == 1 and command.summary in rows[0], name
    assert "explain" in text and "fit" in text


def test_help_command_shows_the_help_of_bnbdoctor_or_of_a_command() -> None:
    assert bnbdoctor("help").stdout == bnbdoctor("--help").stdout
    for name in COMMANDS:
        shown = bnbdoctor("help", name)
        assert shown.returncode == 0, (name, shown.stderr)
        assert shown.stdout.startswith("usage: bnbdoctor") and shown.stdout == bnbdoctor(name, "--help").stdout
    assert "did you mean `bnbdoctor explain`" in one_line_error(bnbdoctor("help", "exlpain"))


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["exlpain", "log.txt"], "did you mean `bnbdoctor explain`?"),
        (["fitt", "model"], "did you mean `bnbdoctor fit`?"),
        (["--jsno"], "did you mean --json?"),
        (["--json", "exlpain"], "did you mean `bnbdoctor explain`?"),
        (["--fixtrue=a100-healthy"], "did you mean --fixture=a100-healthy?"),
        (["explain", "log.txt", "--markdwn"], "did you mean --markdown?"),
        (["fit", "model", "--quant", "4bt"], "did you mean '4bit'?"),
        (["fit", "model", "--devce-map", "auto"], "did you mean --device-map?"),
        (["completion", "fsh"], "did you mean 'fish'?"),
        (["lint", "x.py", "--jsno"], "did you mean --json?"),
        (["fleet", "reports", "--jsno"], "did you mean --json?"),
        (["merge-check", "adapter", "--jsno"], "did you mean --json?"),
        (["rule", "--outptu", "x"], "did you mean --output?"),
        (["mcp", "--verison"], "did you mean --version?"),
    ],
)
def test_a_misspelt_command_option_or_choice_suggests_the_closest(argv: list[str], meant: str) -> None:
    line = one_line_error(bnbdoctor(*argv))
    assert meant in line and "--help" in line


def test_a_word_nothing_is_close_to_lists_the_commands() -> None:
    line = one_line_error(bnbdoctor("xyzzy"))
    assert "unknown command 'xyzzy'" in line and "did you mean" not in line
    assert all(name in line for name in COMMANDS)


@pytest.mark.parametrize(("command", "what"), [("explain", "FILE"), ("fit", "MODEL")])
def test_a_command_without_its_argument_is_one_line(command: str, what: str) -> None:
    line = one_line_error(bnbdoctor(command))
    assert f"required: {what}" in line and f"bnbdoctor {command} --help" in line


@pytest.mark.slow
def test_explain_stdin_on_a_terminal_says_how_to_end_the_paste() -> None:
    log = (ROOT / "tests" / "data" / "real_logs" / "cxxabi_not_found.txt").read_bytes()
    primary, secondary = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "bnbdoctor", "explain", "--json", "-"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    os.close(secondary)
    try:
        assert child.stderr is not None
        ready, _, _ = select.select([child.stderr], [], [], 60)
        assert ready, "no prompt on stderr"
        prompt = os.read(child.stderr.fileno(), 4096).decode()
        assert "paste the log, then Ctrl-D (Ctrl-Z Enter on Windows)" in prompt
        for line in log.splitlines():  # as typed or pasted: the terminal echoes, the program reads lines
            os.write(primary, line[:1000] + b"\n")
            time.sleep(0.001)
        os.write(primary, b"\x04")  # Ctrl-D at the start of a line: end of input
        out, _ = child.communicate(timeout=60)
    finally:
        os.close(primary)
        if child.poll() is None:
            child.kill()
    assert child.returncode == 1 and b'"BNB306"' in out


def test_explain_from_a_pipe_says_nothing_about_pasting() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "explain", "-"], input=b"", capture_output=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0 and b"Ctrl-D" not in result.stderr


# -- --python: an interpreter, a venv or conda folder, or a command on PATH ------------------------


def _venv(root: Path) -> Path:
    """A folder laid out as a venv (and a conda env): bin/python, which runs the tests' interpreter."""
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # a symlink would lose the venv's packages
    python.chmod(0o755)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("given", ["folder", "command"])
def test_python_takes_a_venv_folder_or_a_command_on_path(tmp_path: Path, given: str) -> None:
    import json

    venv = _venv(tmp_path / "env")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    value = str(venv) if given == "folder" else "python"
    result = bnbdoctor("--json", "--no-load", "--rule", "BNB101", "--python", value, env=env)
    assert result.returncode in (0, 1), result.stderr
    python = json.loads(result.stdout)["facts"]["python"]
    assert python["selected_by"] == "--python" and python["torch"]["installed"]


def test_python_names_what_it_accepts_when_it_is_none_of_them(tmp_path: Path) -> None:
    line = one_line_error(bnbdoctor("--python", str(tmp_path / "nope")))
    assert "no such file, venv or conda folder, or command on PATH" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "--python" in one_line_error(bnbdoctor("--python", str(empty)))
    assert "no-such-python-3.99" in one_line_error(bnbdoctor("--python", "no-such-python-3.99"))


def test_fit_resolves_python_as_the_doctor_does(tmp_path: Path) -> None:
    from bnbdoctor.fit.options import FitInputError
    from bnbdoctor.hosts.live import LiveHost
    from bnbdoctor.modelfiles.interpreter import choose_python

    venv = _venv(tmp_path / "env")
    assert choose_python(LiveHost(), str(venv), FitInputError) == (str(venv / "bin" / "python"), "--python")


# -- tab completion (shtab) ------------------------------------------------------------------------


def test_completion_without_shtab_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "shtab", None)  # import shtab raises ImportError
    assert main(["completion", "bash"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and 'pip install "shtab>=1.13"' in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("shell", ["zsh", "fish", "tcsh", "powershell"])
def test_completion_scripts_name_every_command(shell: str) -> None:
    pytest.importorskip("shtab")
    result = bnbdoctor("completion", shell)
    assert result.returncode == 0, result.stderr
    assert all(name in result.stdout for name in [*COMMANDS, "json", "device-map", "a100-healthy", "BNB101"])


def test_completion_picks_the_shell_from_SHELL() -> None:
    pytest.importorskip("shtab")
    fish = bnbdoctor("completion", env={**os.environ, "SHELL": "/usr/bin/fish"})
    assert fish.returncode == 0 and fish.stdout == bnbdoctor("completion", "fish").stdout
    assert "did you mean fish?" in one_line_error(bnbdoctor("completion", env={**os.environ, "SHELL": "/bin/fissh"}))


_BASH = """
source "$1"
complete_words() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}; COMPREPLY=()
    _shtab_bnbdoctor bnbdoctor "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
    echo "${COMPREPLY[*]}"
}
complete_words bnbdoctor ""
complete_words bnbdoctor ex
complete_words bnbdoctor --js
complete_words bnbdoctor explain --mark
complete_words bnbdoctor fit model --quant ""
complete_words bnbdoctor --fixture a100-heal
complete_words bnbdoctor help fi
complete_words bnbdoctor --rule BNB10
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_options_choices_and_names(tmp_path: Path) -> None:
    pytest.importorskip("shtab")
    script = tmp_path / "bnbdoctor.bash"
    result = bnbdoctor("completion", "bash")
    assert result.returncode == 0, result.stderr
    script.write_text(result.stdout)
    run = subprocess.run(["bash", "-c", _BASH, "bash", str(script)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    answers = run.stdout.splitlines()
    assert answers[:7] == [
        " ".join(COMMANDS),
        "explain",
        "--json",
        "--markdown",
        "4bit 8bit",
        "a100-healthy",
        "fit",
    ]
    assert "BNB101" in answers[7].split()


def test_completion_without_recorded_machines_completes_any_fixture_path(tmp_path: Path) -> None:
    """An installed bnbdoctor has no platform_fixtures/: --fixture then takes any name or path."""
    pytest.importorskip("shtab")
    result = bnbdoctor("completion", "bash", env={**os.environ, "BNBDOCTOR_FIXTURES": str(tmp_path / "none")})
    assert result.returncode == 0, result.stderr
    assert "a100-healthy" not in result.stdout and "explain" in result.stdout
