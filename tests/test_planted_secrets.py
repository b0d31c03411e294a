"""Planted secrets: every kind of secret a user really carries, planted where it really sits (values
of allowlisted variables, paths, a pasted log), must not appear in any output format of the doctor,
``explain``, or a ``--from`` replay of a report saved with ``--no-redact``; the report says what was
redacted. Redaction does not depend on a variable's name: these sit in PATH-like values."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from bnbdoctor.redact import _GENERIC_NAMES, Redactor

#: kind -> a value of that kind. Each must vanish from every output.
SECRETS = {
    "hf": "hf_PlantedHuggingFace0123456789abcd",
    "ghp": "ghp_PlantedGithub0123456789abcdefghijkl",
    "github_pat": "github_pat_11PLANTED0123456789_abcdefghijklmnop",
    "openai": "sk-proj-Planted0123456789abcdefgh",
    "akia": "AKIAPLANTED0123456XY",
    "asia": "ASIAPLANTED0123456XY",
    "slack-bot": "xoxb-1234567890-planted-slackbot",
    "slack-user": "xoxp-1234567890-planted-slackusr",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxhbnRlZA",
    "bearer": "PlantedBearerOpaque0123456789",
    "url-password": "hunter2planted",
    "password": "Tr0ub4dorPlanted",
    "token": "tokPlanted98765",
    "custom-key": "svcKeyPlanted4242",
    "email": "zelda.planted@example.org",
    "ip-nfs": "192.168.77.21",
    "ip-wsl": "10.44.3.9",
    "ipv6": "fd12:3456:789a:1:0:0:0:77",
    "user": "zeldaplanted",
    "log-host": "gpu-planted-node",
}


def _environment(home: Path) -> dict[str, str]:
    s = SECRETS
    return {
        **os.environ,
        "HOME": str(home),
        "USER": s["user"],
        "LOGNAME": s["user"],
        "LD_LIBRARY_PATH": f"/net/{s['ip-nfs']}/cuda/lib64:https://builder:{s['url-password']}@mirror.example.com/lib"
        f":/srv/password={s['password']}:/srv/{s['hf']}/lib:[{s['ipv6']}]:/export",
        "PYTHONPATH": f"{ROOT}:/srv/{s['email']}/lib:/srv/{s['ghp']}:/srv/{s['user']}/site"
        f":/srv/{socket.gethostname()}/x:/srv/{s['github_pat']}",
        "CUDA_HOME": f"/opt/cuda-{s['akia']}/token={s['token']}",
        "CUDA_PATH": f"/opt/{s['asia']}/{s['openai']}/MY_SERVICE_KEY={s['custom-key']}",
        "ROCM_PATH": f"/opt/{s['slack-bot']}/{s['slack-user']}/{s['jwt']}",
        "WSL_DISTRO_NAME": f"Ubuntu-{s['ip-wsl']}",
        "CONDA_DEFAULT_ENV": f"Bearer {s['bearer']}",
    }


def _log(home: str) -> str:
    """A pasted log: a prompt and ``uname -a`` name the machine; each secret sits on a line that
    explain keeps (the binary bitsandbytes said it loads), so it reaches the report unless redacted."""
    s = SECRETS
    carried = (
        f"/srv/{s['user']} (a notebook cell echoed {s['user']}@{s['log-host']}:~/llm$)",
        f"Authorization: Bearer {s['bearer']} ",
        f"HF_TOKEN={s['hf']} GH={s['ghp']} PAT {s['github_pat']} OPENAI {s['openai']} ",
        f"aws {s['akia']} {s['asia']} slack {s['slack-bot']} {s['slack-user']} jwt {s['jwt']} ",
        f"git+https://builder:{s['url-password']}@git.example.com/x.git password={s['password']} ",
        f"token={s['token']} X-Service-Key: {s['custom-key']} contact {s['email']} ",
        f"mount {s['ip-nfs']}:/export/cuda WSL_DISTRO_NAME=Ubuntu-{s['ip-wsl']} peer {s['ipv6']} ",
    )
    return (
        f"({s['user']}) {s['user']}@{s['log-host']}:~/llm$ python train.py\n"
        f"Linux {s['log-host']} 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux\n"
        + "".join(f"CUDA SETUP: Loading binary {line}/libbitsandbytes_cuda118.so...\n" for line in carried)
        + f"CUDA SETUP: Loading binary {home}/llm/.venv/lib/python3.11/site-packages/bitsandbytes/"
        "libbitsandbytes_cuda118.so...\n"
        "OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n"
    )


def _run(
    args: list[str], env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    return run


def _leaks(text: str, home: str) -> list[str]:
    found = [kind for kind, value in SECRETS.items() if value in text]
    if home in text:
        found.append("home")
    host = socket.gethostname()
    if len(host) >= 3 and host.lower() not in _GENERIC_NAMES and f"/{host}/" in text:
        found.append("machine-host")
    return found


FORMATS = ("--json", "--text", "--markdown")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home") / SECRETS["user"]
    home.mkdir()
    env = _environment(home)
    results: dict[str, str] = {"home": str(home)}
    for fmt in FORMATS:
        results[f"doctor {fmt}"] = _run([fmt, "--no-load"], env).stdout
    saved = tmp_path_factory.mktemp("saved") / "report.json"
    saved.write_text(_run(["--json", "--no-load", "--no-redact"], env).stdout, encoding="utf-8")
    # the unredacted report does carry them: the replay below has something to redact
    assert len(_leaks(saved.read_text(encoding="utf-8"), str(home))) >= 10
    log = _log(f"/home/{SECRETS['user']}")
    # the unredacted explanation does carry them
    assert len(_leaks(_run(["explain", "--json", "--no-redact", "-"], env, stdin=log).stdout, str(home))) >= 18
    for fmt in FORMATS:
        results[f"replay {fmt}"] = _run(["--from", str(saved), fmt], env).stdout
        results[f"explain {fmt}"] = _run(["explain", fmt, "-"], env, stdin=log).stdout
    return results


@pytest.mark.parametrize("command", ["doctor", "replay", "explain"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_planted_secret_in_any_output(outputs: dict[str, str], command: str, fmt: str) -> None:
    text = outputs[f"{command} {fmt}"]
    assert text.strip()
    assert _leaks(text, outputs["home"]) == [], f"{command} {fmt} leaks"


@pytest.mark.parametrize("command", ["doctor", "replay", "explain"])
def test_the_report_says_what_was_redacted(outputs: dict[str, str], command: str) -> None:
    redaction = json.loads(outputs[f"{command} --json"])["redaction"]
    assert {"token", "email", "ip-address", "key-value", "jwt", "bearer", "url-credentials"} <= set(redaction)
    assert all(isinstance(count, int) and count >= 1 for count in redaction.values())


def test_every_kind_is_caught_by_the_value_scanner_alone() -> None:
    """No name to go by: each secret on its own, in a bare value, is replaced."""
    redactor = Redactor(user=SECRETS["user"], host=SECRETS["log-host"])
    for kind, value in SECRETS.items():
        carried = {
            "bearer": f"Bearer {value}",
            "url-password": f"https://u:{value}@h.example.com/",
            "password": f"password={value}",
            "token": f"token: {value}",
            "custom-key": f"acme_service_key={value}",
        }.get(kind, f"/srv/{value}/lib")
        assert value not in redactor.text(carried), kind


@pytest.mark.parametrize(
    "value",
    [
        "nvidia-cublas-cu12==12.1.3.1",
        "torch==2.1.0.1",
        "cuDNN version 8.9.2.26",
        "5.15.153.1-microsoft-standard-WSL2",
        "sm_80,sm_90",
    ],
)
def test_versions_are_not_addresses(value: str) -> None:
    assert Redactor().text(value) == value


def test_a_version_field_keeps_its_dotted_quad() -> None:
    assert Redactor().walk({"version": "12.1.3.1", "host": "10.0.0.1"}) == {"version": "12.1.3.1", "host": "<ip>"}


@pytest.mark.parametrize("unit", ["a", "-", "1.", "a:", "a=", "x://a:", "eyJa.", "a@", "key=", "Bearer ", "hf_"])
def test_redaction_is_linear_on_hostile_strings(unit: str) -> None:
    import time

    text = unit * (200_000 // len(unit))
    started = time.perf_counter()
    Redactor(home="/home/alice", user="alice", host="node7.example.com").text(text)
    assert time.perf_counter() - started < 2.0
