"""The under-packing bug (transformers #46823): fixed by #47203 (5.14.0) and #47211 (5.18.0).

Llama-3-8B in 4-bit on 8 x 4 GiB raises with transformers 5.13.1 and fits with the current release.
transformers 5.13.1 is installed once into .pytest_cache (``pip install --no-deps --target``, with
the few packages its import-time version check demands: huggingface-hub < 2 with its httpx client,
tokenizers <= 0.23.0) and put first on PYTHONPATH for the patient interpreter, as a user's older
install would be. The engine runs that transformers; its upgrade check finds the venv's newer
transformers behind it and verifies that it changes the verdict. The oracle (the real
from_pretrained under 5.13.1) must agree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from bnbdoctor.facts import FitFacts
from bnbdoctor.fit import FitOptions, run_fit
from bnbdoctor.fit.core import _upgrade_check
from bnbdoctor.fit.engine import EngineAnswer
from bnbdoctor.hosts.base import CommandResult
from bnbdoctor.hosts.live import LiveHost

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fit"
OLD = "5.13.1"
TARGET = ROOT / ".pytest_cache" / "bnbdoctor-fit" / f"transformers-{OLD}"
#: 5.13.1's import checks huggingface-hub<2 and tokenizers<=0.23.0; hub 1.x talks through httpx.
PACKAGES = [
    f"transformers=={OLD}",
    "huggingface-hub>=1.5,<2",
    "tokenizers>=0.22,<=0.23.0",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "certifi",
    "idna",
]
GiB = 1 << 30
EIGHT_BY_FOUR = ",".join(f"{i}=4GiB" for i in range(8)) + ",cpu=64GiB"


def _works(target: Path) -> bool:
    proc = subprocess.run(
        [sys.executable, "-c", "import transformers; print(transformers.__version__)"],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    return proc.returncode == 0 and proc.stdout.strip().endswith(OLD)


@pytest.fixture(scope="module")
def old_transformers() -> Path:
    marker = TARGET / ".bnbdoctor-import-ok"  # written once the install imported; later runs trust it
    if marker.is_file() and (TARGET / f"transformers-{OLD}.dist-info").is_dir():
        return TARGET
    shutil.rmtree(TARGET, ignore_errors=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(TARGET),
            *PACKAGES,
        ],
        capture_output=True,
        check=False,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["pip failed"]
        pytest.skip(f"cannot install transformers {OLD} (registry unreachable?): {last[0][:200]}")
    if not _works(TARGET):
        pytest.skip(f"transformers {OLD} installed into {TARGET} does not import here")
    marker.write_text(OLD, encoding="utf-8")
    return TARGET


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fit-versions") / "llama-3-8b"
    folder.mkdir()
    shutil.copy(DATA / "llama-3-8b.json", folder / "config.json")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    return folder


@pytest.fixture(scope="module")
def results(old_transformers: Path, model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cases = tmp_path_factory.mktemp("fit-versions-oracle") / "cases.json"
    cases.write_text(
        json.dumps(
            [
                {
                    "id": "8x4",
                    "folder": str(model),
                    "device_map": "auto",
                    "max_memory": {**{str(i): 4 * GiB for i in range(8)}, "cpu": 64 * GiB},
                }
            ]
        )
    )

    def oracle() -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-B", str(DATA / "oracle.py"), str(cases)],
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(old_transformers)},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        answer: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return answer

    def fit() -> Any:
        # the patient interpreter sees the old transformers first, as with a user's PYTHONPATH
        return run_fit(FitOptions(model=str(model), max_memory=EIGHT_BY_FOUR), host=_PythonPathHost(old_transformers))

    with ThreadPoolExecutor(max_workers=2) as pool:
        got_oracle, got_fit = pool.submit(oracle), pool.submit(fit)
        return {"oracle": got_oracle.result(), "report": got_fit.result()}


class _PythonPathHost(LiveHost):
    """This machine, with PYTHONPATH set for the patient interpreter only."""

    def __init__(self, pythonpath: Path) -> None:
        super().__init__()
        self.pythonpath = str(pythonpath)

    def run_python(
        self,
        executable: str,
        script: str,
        timeout: float = 10.0,
        *,
        purpose: str = "facts",
        isolated: bool = False,
        on_stderr_line: Callable[[str], None] | None = None,
    ) -> CommandResult:
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = self.pythonpath
        try:
            return super().run_python(
                executable, script, timeout, purpose=purpose, isolated=isolated, on_stderr_line=on_stderr_line
            )
        finally:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved


@pytest.mark.network  # results: pip installs transformers {OLD} (cached in .pytest_cache)
@pytest.mark.slow
def test_old_release_raises_like_from_pretrained(results: dict[str, Any]) -> None:
    fit = results["report"].facts.fit
    expected = results["oracle"]["results"][0]
    assert results["oracle"]["transformers"] == OLD == fit.versions["transformers"]
    assert fit.verdict == expected["verdict"] == "raises"
    assert fit.placement == expected["device_map"]
    assert fit.error_text == expected["error"]
    # everything collapses onto the last GPU: the caps (0.78 GiB) are below embed_tokens (0.98 GiB)
    assert set(fit.placement.values()) == {7, "cpu"}


@pytest.mark.network  # results: pip installs transformers {OLD} (cached in .pytest_cache)
@pytest.mark.slow
def test_current_release_fits_and_the_upgrade_is_verified(results: dict[str, Any]) -> None:
    report = results["report"]
    fit = report.facts.fit
    upgrade = next(r for r in fit.remedies if r.kind == "upgrade_transformers")
    assert upgrade.status == "passes" and upgrade.verdict == "fits"
    assert Version(upgrade.transformers_version) == Version(transformers.__version__) >= Version("5.18")
    assert set(upgrade.device_map.values()) <= set(range(8))
    ids = [f.rule_id for f in report.findings]
    assert "BNB402" in ids and "BNB407" in ids
    assert next(f for f in report.findings if f.rule_id == "BNB407").severity.value == "warning"


@pytest.mark.network  # results: pip installs transformers {OLD} (cached in .pytest_cache)
@pytest.mark.slow
def test_sequential_passes_on_the_old_release_too(results: dict[str, Any]) -> None:
    fit = results["report"].facts.fit
    sequential = next(r for r in fit.remedies if r.kind == "sequential")
    assert sequential.status == "passes" and set(sequential.device_map.values()) == {0, 1}


def test_upgrade_without_a_newer_transformers_is_not_claimed() -> None:
    fit = FitFacts(
        model="m", config_path="m/config.json", device_map="auto", verdict="raises", versions={"transformers": "5.13.1"}
    )
    answer = EngineAnswer(data={"ok": True, "other_transformers": []})
    remedy = _upgrade_check(LiveHost(), FitOptions(model="m"), fit, answer, sys.executable, {}, None)
    assert remedy is not None and remedy.status == "unverified"
    assert "cannot be verified offline" in remedy.detail and "#47203" in remedy.title and "#47211" in remedy.title


def test_no_upgrade_remedy_on_a_fixed_release() -> None:
    fit = FitFacts(
        model="m", config_path="m/config.json", device_map="auto", verdict="raises", versions={"transformers": "5.18.0"}
    )
    answer = EngineAnswer(data={"ok": True, "other_transformers": [{"version": "5.24.0", "location": "/x"}]})
    assert _upgrade_check(LiveHost(), FitOptions(model="m"), fit, answer, sys.executable, {}, None) is None
