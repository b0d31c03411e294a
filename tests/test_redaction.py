"""Secrets never leave the machine: planted credentials and identities must not appear in any
output format of the live doctor."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import ROOT

from bnbdoctor.facts import OsInfo
from bnbdoctor.redact import Redactor

PLANTED = {
    "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123456789",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "OPENAI_API_KEY": "sk-proj-0123456789abcdefghijklmn",
}
# allowlisted variables carrying credentials by accident
LEAKY_PATH = "/opt/cuda/lib64:https://builder:hunter2secret@mirror.example.com/lib:/srv/password=Tr0ub4dor"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home-of-zelda")
    env = {
        **os.environ,
        **PLANTED,
        "LD_LIBRARY_PATH": LEAKY_PATH,
        "HOME": str(home),
        "CUDA_VISIBLE_DEVICES": "GPU-3958746a-913c-9afd-4404-ceb9083fcaeb",
    }
    results = {}
    for fmt in ("--json", "--text", "--markdown"):
        run = subprocess.run(
            [sys.executable, "-m", "bnbdoctor", fmt, "--no-load"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert run.returncode in (0, 1), run.stderr
        results[fmt] = run.stdout
    return results


@pytest.mark.parametrize("fmt", ["--json", "--text", "--markdown"])
def test_planted_secrets_never_appear(outputs: dict[str, str], fmt: str) -> None:
    text = outputs[fmt]
    for name, value in PLANTED.items():
        assert value not in text, f"{name} leaked into {fmt}"
        assert name not in text, f"{name} was read at all ({fmt})"
    assert "hunter2secret" not in text and "Tr0ub4dor" not in text
    assert "3958746a-913c-9afd-4404-ceb9083fcaeb" not in text


def test_identity_is_replaced_in_paths(outputs: dict[str, str]) -> None:
    user, host = getpass.getuser(), socket.gethostname()
    for fmt, text in outputs.items():
        if len(user) >= 3 and user not in ("root", "user", "runner"):
            assert f"/{user}/" not in text, fmt
        if len(host) >= 3 and host != "localhost":
            assert host not in text.replace("localhost", ""), fmt


def test_redactor_units() -> None:
    r = Redactor.for_machine(
        OsInfo(system="Linux", machine="x86_64", home="/home/alice", username="alice", hostname="gpu-node-07")
    )
    assert r.text("/home/alice/venv/lib") == "~/venv/lib"
    assert r.text("/data/alice/models and alice@gpu-node-07:~$") == "/data/<user>/models and <user>@<host>:~$"
    # another user's folder is not ours (not ~), and their name is an identity too (issue 25 item 17)
    assert r.text("/home/alicesmith/x") == "/home/<user>/x"
    assert r.text("ls /Users/bob_other/proj; cd /home/<user>/y") == "ls /Users/<user>/proj; cd /home/<user>/y"
    for token in (
        "glpat-ReproGitlab0000aaaaBB",
        "npm_ReproNpm0000aaaaBBBBccccDDDDeeeeFF",
        "sk_live_ReproStripe0000aaaaBBBBcc",
        "AIzaSyReproGoogle0000aaaaBBBBccccDDD",
    ):
        assert r.text(f"a {token} b") == "a <redacted-token> b", token
    assert r.text("peer fd12:3456:789a::77 up") == "peer <ip> up"
    assert r.text("c10::Error at::Tensor x[::2] 12:34:56") == "c10::Error at::Tensor x[::2] 12:34:56"
    assert r.text("/nfs/db7.internal-secret.example/lib") == "/nfs/<host>/lib"
    assert r.text("https://download.pytorch.org/whl/cu121") == "https://download.pytorch.org/whl/cu121"
    # a private network's host names in prose (a pasted log's line), never a module, a file or ~/.local
    assert r.text("connect to db7.internal-secret.example failed") == "connect to <host> failed"
    assert r.text("gpu07.corp:8080 and host.docker.internal") == "<host>:8080 and <host>"
    kept = "~/.local/bin/pip torch.testing settings.local.py pytest.ini huggingface.co"
    assert r.text(kept) == kept
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----"
    assert r.text(f"the key {key} done") == "the key <redacted-private-key> done"
    assert r.text("https://bob:pw@host/x") == "https://<redacted>@host/x"
    assert r.text("token=abc123 password: s3cret") == "token=<redacted> password: <redacted>"
    assert r.walk({"uuid": "GPU-1234", "name": "A100"}) == {"uuid": None, "name": "A100"}
    # A specific host name is replaced inside a hyphenated word too; a short user name is not.
    assert r.text("/scratch/qlora-gpu-node-07/out") == "/scratch/qlora-<host>/out"
    assert r.text("gpu-node-070 gpu-node-07.log") == "gpu-node-070 <host>.log"
    short = Redactor.for_machine(
        OsInfo(system="Linux", machine="x86_64", home="/home/ai", username="ai", hostname="dgx")
    )
    assert short.text("qlora-ai-demo on dgx-b") == "qlora-ai-demo on dgx-b"
    root = Redactor.for_machine(OsInfo(system="Linux", machine="x86_64", home="/root", username="root", hostname="vm"))
    assert root.text("/root/.cache and the root cause") == "~/.cache and the root cause"
    assert set(r.summary()) >= {"home", "user", "host", "url-credentials", "key-value", "gpu-id"}


def test_no_redact_says_so_on_stderr() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "--json", "--no-redact", "--no-load"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert "redaction is off" in run.stderr and '"redaction": null' in run.stdout


def test_show_redactions_lists_on_stderr_only() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "--fixture", "a100-healthy", "--json", "--show-redactions"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert "redacted [home]" in run.stderr
    home = next(line for line in run.stderr.splitlines() if "redacted [home]" in line).split(": ", 1)[1]
    assert home not in run.stdout


@pytest.mark.parametrize("user", ["arch", "version", "platform", "gpu"])
def test_a_user_named_like_a_report_field_keeps_the_report_readable(user: str) -> None:
    """Redaction rewrites values, never the report's own field names: a log whose user is called
    `arch` once turned `platform.arch` into `platform.<user>`, and `explain --json` crashed."""
    log = (
        f"[{user}@box llm]$ python -m bitsandbytes\n"
        f"CUDA SETUP: Loading binary /home/{user}/llm/.venv/lib/python3.11/site-packages/bitsandbytes/"
        "libbitsandbytes_cuda118.so...\n"
        "OSError: libcusparse.so.11: cannot open shared object file: No such file or directory\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", "explain", "--json", "-"],
        input=log,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert {"os", "arch", "libc_version"} <= set(report["facts"]["platform"])
    assert f"/home/{user}/" not in run.stdout
    assert report["redaction"]
