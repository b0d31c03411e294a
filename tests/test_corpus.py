"""The development corpus of real threads (tests/data/corpus/threads.jsonl) is well formed and holds no held-out thread.

Accuracy on the corpus is measured by bench/corpus_accuracy.py, not asserted here: these tests only keep
the data honest (fields, unique threads, families the catalog knows or marked as new/outside, the error
line quoted from the pasted text, and the held-out exclusion).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.catalog import catalog_ids

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "threads.jsonl"
# The held-out list lives beside the checkout (../shared), outside the repository.
SHARED_TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"

FIELDS = ["url", "repo", "year", "platform", "family", "error_line", "resolution", "pasted"]
PLATFORMS = {"linux", "windows", "wsl", "macos", "rocm", "jetson", "colab", "kaggle", "xpu", "docker", "unknown"}
THREAD_URL = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(issues|pull|discussions)/\d+$")
NEW_OR_OUTSIDE = re.compile(r"^(new:[a-z0-9][a-z0-9_]*|outside:[A-Za-z_][A-Za-z0-9_.]*)$")
MIN_RECORDS = 300


def _records() -> list[dict[str, Any]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _thread(url: str) -> str:
    """One spelling per thread: pull requests and issues share their numbers."""
    return url.lower().replace("/pull/", "/issues/")


def test_corpus_is_large_enough() -> None:
    assert len(_records()) >= MIN_RECORDS


def test_every_record_has_the_fields_in_order() -> None:
    for record in _records():
        assert list(record) == FIELDS, record.get("url")
        url = record["url"]
        match = THREAD_URL.match(url)
        assert match, f"not a GitHub thread URL: {url}"
        assert record["repo"] == match.group(1), url
        assert record["year"] is None or (isinstance(record["year"], int) and 2020 <= record["year"] <= 2026), url
        assert record["platform"] in PLATFORMS, url
        for field in ("error_line", "resolution", "pasted"):
            assert isinstance(record[field], str) and record[field].strip(), f"{url}: empty {field}"


def test_each_thread_appears_once() -> None:
    threads = [_thread(record["url"]) for record in _records()]
    duplicates = sorted({t for t in threads if threads.count(t) > 1})
    assert not duplicates, duplicates


def test_families_are_catalog_ids_or_marked_new_or_outside() -> None:
    known = set(catalog_ids())
    for record in _records():
        family = record["family"]
        assert family in known or NEW_OR_OUTSIDE.match(family), f"{record['url']}: unknown family {family!r}"


def test_error_line_is_quoted_from_the_pasted_text() -> None:
    for record in _records():
        lines = record["pasted"].splitlines()
        assert any(record["error_line"] in line for line in lines), record["url"]


def _is_heldout() -> Callable[[str], bool]:
    if not (SHARED_TOOLS / "heldout_check.py").is_file():
        pytest.skip(f"the held-out list is not here ({SHARED_TOOLS} is absent): nothing to check against")
    sys.path.insert(0, str(SHARED_TOOLS))
    try:
        from heldout_check import is_heldout  # type: ignore[import-not-found,unused-ignore]
    finally:
        sys.path.remove(str(SHARED_TOOLS))
    checker: Callable[[str], bool] = is_heldout
    return checker


def test_no_record_is_held_out() -> None:
    is_heldout = _is_heldout()
    held = [record["url"] for record in _records() if is_heldout(record["url"])]
    assert not held, held
