"""The patient probe's release facts on real data: site-packages layouts built in tmp dirs from a real
bitsandbytes wheel's RECORD, and transformers' own ``import_utils.py``.

The RECORD is the one the venv's bitsandbytes install wrote (a real manylinux wheel's file list);
the layouts put 0-byte files at its paths, then add what an overlaid install leaves behind. The
patient script is stdlib only, so its functions are loaded from its file and called directly.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from packaging.version import Version

from bnbdoctor.explain import explain_text
from bnbdoctor.knowledge import dependents
from bnbdoctor.knowledge.bad_releases import REGRESSIONS, fixing_release, regressions_in
from bnbdoctor.knowledge.published import published_releases

SCRIPT = Path(__file__).resolve().parents[1] / "bnbdoctor" / "probes" / "patient_script.py"


def _patient() -> ModuleType:
    spec = importlib.util.spec_from_file_location("patient_script_under_test", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PATIENT = _patient()


def _installed(name: str) -> Path | None:
    """The venv's own install of a patient package (its folder), if any."""
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent if spec and spec.origin else None


def _real_record() -> tuple[str, str]:
    """(dist-info folder name, RECORD text) of the venv's bitsandbytes install."""
    package = _installed("bitsandbytes")
    if package is None:
        pytest.skip("bitsandbytes is not installed in this venv")
    infos = sorted(package.parent.glob("bitsandbytes-*.dist-info"))
    if not infos or not (infos[0] / "RECORD").is_file():
        pytest.skip("the venv's bitsandbytes has no RECORD")
    return infos[0].name, (infos[0] / "RECORD").read_text(encoding="utf-8")


def _layout(site: Path, info: str, record: str) -> Path:
    """A site-packages folder holding every file the RECORD lists (0-byte) and the dist-info."""
    for row in csv.reader(io.StringIO(record)):
        if row and not row[0].startswith(".."):
            target = site / row[0]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    (site / info / "RECORD").write_text(record, encoding="utf-8")
    return site / "bitsandbytes"


@pytest.fixture
def wheel_site(tmp_path: Path) -> Path:
    info, record = _real_record()
    return _layout(tmp_path / "site-packages", info, record)


def test_a_clean_install_has_one_claimant_and_no_unlisted_file(wheel_site: Path) -> None:
    record = PATIENT.package_record(str(wheel_site))
    assert record["skipped"] is None and len(record["claims"]) == 1
    assert record["claims"][0]["name"] == "bitsandbytes" and record["claims"][0]["files"] == record["files"]
    assert record["unlisted"] == [] and record["unlisted_count"] == 0 and not record["truncated"]


def test_leftovers_of_an_older_release_are_listed_modules_first(wheel_site: Path) -> None:
    for stale in ("cuda_setup/paths.py", "cuda_setup/main.py", "libbitsandbytes_cuda117.so", "NOTES.txt"):
        (wheel_site / stale).parent.mkdir(exist_ok=True)
        (wheel_site / stale).touch()
    (wheel_site / "__pycache__" / "stale.cpython-311.pyc").touch()  # bytecode is never compared
    record = PATIENT.package_record(str(wheel_site))
    assert record["unlisted"] == [
        "cuda_setup/main.py",
        "cuda_setup/paths.py",
        "libbitsandbytes_cuda117.so",
        "NOTES.txt",
    ]
    assert record["unlisted_count"] == 4


def test_a_forks_dist_info_next_to_pypis_is_a_second_claimant(wheel_site: Path) -> None:
    site = wheel_site.parent
    fork = site / "bitsandbytes_windows-0.37.5.dist-info"
    fork.mkdir()
    (fork / "RECORD").write_text("bitsandbytes/__init__.py,,\nbitsandbytes/cuda_setup/paths.py,,\n", encoding="utf-8")
    unrelated = site / "torchvision-0.20.0.dist-info"  # neither named bitsandbytes nor listing it
    unrelated.mkdir()
    (unrelated / "RECORD").write_text("bitsandbytes/__init__.py,,\n", encoding="utf-8")
    (wheel_site / "cuda_setup").mkdir()
    (wheel_site / "cuda_setup" / "paths.py").touch()
    record = PATIENT.package_record(str(wheel_site))
    assert sorted(c["name"] for c in record["claims"]) == ["bitsandbytes", "bitsandbytes_windows"]
    assert record["unlisted"] == []  # the fork's RECORD lists the file


def test_a_folder_no_record_describes_is_not_compared(tmp_path: Path) -> None:
    package = tmp_path / "src" / "bitsandbytes"
    package.mkdir(parents=True)
    (package / "__init__.py").touch()
    record = PATIENT.package_record(str(package))
    assert record["skipped"] and record["claims"] == [] and record["unlisted"] == []


def test_ten_thousand_files_are_read_bounded_and_fast(wheel_site: Path) -> None:
    junk = wheel_site / "junk"
    junk.mkdir()
    for index in range(10_000):
        (junk / f"f{index:05d}.bin").touch()
    started = time.perf_counter()
    record = PATIENT.package_record(str(wheel_site))
    elapsed = time.perf_counter() - started
    assert record["truncated"] and record["files"] == PATIENT.RECORD_FILE_LIMIT
    assert len(record["unlisted"]) == PATIENT.UNLISTED_SHOWN
    assert elapsed < 2.0  # about 20 ms here; the bound is the file limit, the number only catches a runaway


# ------------------------------------------------------------------------------ transformers' minimum
def _transformers_tree(tmp_path: Path, source: str | None) -> Path:
    package = tmp_path / "transformers"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    if source is not None:
        (package / "utils" / "import_utils.py").write_text(source, encoding="utf-8")
    return package


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in list(sys.modules):
        if name == "transformers" or name.startswith("transformers."):
            monkeypatch.delitem(sys.modules, name)
    return tmp_path


def test_the_minimum_is_read_from_the_installed_transformers_own_file() -> None:
    package = _installed("transformers")
    if package is None:
        pytest.skip("transformers is not installed in this venv")
    source = (package / "utils" / "import_utils.py").read_text(encoding="utf-8")
    found = PATIENT.transformers_bnb_minimum()
    assert found is not None and found["error"] is None
    if f"\n{dependents.TRANSFORMERS_BNB_CONSTANT} = " in source:
        assert found["minimum"] and f'{dependents.TRANSFORMERS_BNB_CONSTANT} = "{found["minimum"]}"' in source
    else:
        assert found["minimum"] is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('import os\nBITSANDBYTES_MIN_VERSION = "0.49.0"\nX = 1\n', "0.49.0"),
        ('BITSANDBYTES_MIN_VERSION: str = "0.47.0"  # annotated\n', "0.47.0"),
        ("BITSANDBYTES_MIN_VERSION = get_min()\n", None),  # not a literal: never evaluated
        ('def f():\n    BITSANDBYTES_MIN_VERSION = "9.9"\n', None),  # not module level
        ("ACCELERATE_MIN_VERSION = '1.1.0'\n", None),  # transformers 4.x: no such constant
    ],
)
def test_the_constant_is_parsed_never_executed(on_path: Path, source: str, expected: str | None) -> None:
    _transformers_tree(on_path, source)
    found = PATIENT.transformers_bnb_minimum()
    assert found is not None and found["minimum"] == expected and found["error"] is None


def test_an_unreadable_file_is_an_honest_unknown(on_path: Path) -> None:
    _transformers_tree(on_path, None)
    found = PATIENT.transformers_bnb_minimum()
    assert found is not None and found["minimum"] is None and "FileNotFoundError" in found["error"]


def test_knowledge_names_the_constant_the_probe_reads() -> None:
    assert dependents.TRANSFORMERS_BNB_CONSTANT == PATIENT.TRANSFORMERS_BNB_CONSTANT
    assert "/".join(("transformers", *PATIENT.TRANSFORMERS_BNB_FILE)) == dependents.TRANSFORMERS_BNB_FILE


# ------------------------------------------------------------------------------ the known-bad table
def test_each_regression_is_sourced_and_fixed_by_a_later_release() -> None:
    for row in REGRESSIONS:
        assert row.references and row.releases.source
        assert row.releases.contains(row.releases.first_text)
        # the fix is a release after the bad range: published, and later than every bad one
        assert Version(row.fixed_in) > Version(row.releases.first_text)
        assert row.fixed_in in {r.version for r in published_releases()}
    assert fixing_release(regressions_in("0.48.0")).pip_spec() == ">=0.48.2"
    assert regressions_in("0.48.1") and not regressions_in("0.48.2") and not regressions_in(None)


# ------------------------------------------------------------------------------ the log side
def test_a_missing_submodule_is_not_a_missing_package() -> None:
    sub = explain_text("ModuleNotFoundError: No module named 'bitsandbytes.cuda_setup.paths'\n")
    assert sub.findings and sub.findings[0].rule_id == "BNB216"
    assert sub.facts.python is not None and sub.facts.python.bitsandbytes.installed
    whole = explain_text("ModuleNotFoundError: No module named 'bitsandbytes'\n")
    assert all(f.rule_id != "BNB216" for f in whole.findings)


def test_transformers_5_message_is_not_the_generic_4x_importerror() -> None:
    v5 = explain_text(
        "ImportError: Using `bitsandbytes` 8-bit quantization requires bitsandbytes: "
        "`pip install -U bitsandbytes>=0.47.0`\n"
    )
    assert [f.rule_id for f in v5.findings] == ["BNB214"]
    assert v5.facts.python and v5.facts.python.transformers_bnb_minimum
    assert v5.facts.python.transformers_bnb_minimum.minimum == "0.47.0"
    v4 = explain_text(
        "ImportError: Using `bitsandbytes` 4-bit quantization requires the latest version of "
        "bitsandbytes: `pip install -U bitsandbytes`\n"
    )
    assert "BNB521" in [f.rule_id for f in v4.findings] and "BNB214" not in [f.rule_id for f in v4.findings]
