"""The failure catalog ships with the package: the shared reference copy it is taken from, then the families
found in the development corpus (tests/data/corpus, issue 24), which the shared copy does not have yet.

Those entries carry ``"origin": "corpus"``: each names at least two corpus threads labelled with it, quotes
its log excerpt from one of them, and cites no held-out thread."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.catalog import catalog, catalog_entry, catalog_ids, entry_url

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "failure_catalog.json"
SHARED_TOOLS = SHARED.parents[1] / "tools"
CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "threads.jsonl"
#: The ``origin`` of an entry the packaged copy adds to the shared reference: a family found in the corpus.
CORPUS_ORIGIN = "corpus"


def test_packaged_catalog_is_present_and_well_formed() -> None:
    ids = catalog_ids()
    assert len(ids) >= 67
    assert len(ids) == len(set(ids)), "duplicate catalog ids"
    for entry in catalog():
        assert entry["id"].isidentifier() and entry["id"] == entry["id"].lower(), entry["id"]
        assert entry.get("title") and entry.get("root_cause"), entry["id"]


def _shared_and_own() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The packaged catalog split into the shared reference's entries and the families found in the corpus."""
    shared = json.loads(SHARED.read_text(encoding="utf-8"))
    packaged = list(catalog())
    return packaged[: len(shared)], packaged[len(shared) :]


def test_packaged_catalog_starts_with_the_shared_reference_when_present() -> None:
    if not SHARED.is_file():  # a checkout without ../shared: the packaged copy is the reference
        return
    head, own = _shared_and_own()
    assert head == json.loads(SHARED.read_text(encoding="utf-8")), (
        "bnbdoctor/data/failure_catalog.json does not start with ../shared/reference/failure_catalog.json: copy it"
    )
    not_ours = [entry["id"] for entry in own if entry.get("origin") != CORPUS_ORIGIN]
    assert not not_ours, f"entries after the shared ones must be families found in the corpus: {not_ours}"


def test_corpus_families_come_from_two_threads_of_the_corpus() -> None:
    """An entry the packaged copy adds (``"origin": "corpus"``) is a pattern of at least two threads of the
    development corpus labelled with it; its log excerpt is quoted from one of them, word for word."""
    threads = _corpus()
    for entry in (entry for entry in catalog() if entry.get("origin") == CORPUS_ORIGIN):
        urls = entry["urls"]
        assert len(urls) >= 2 and len(set(urls)) == len(urls), entry["id"]
        unknown = [url for url in urls if url not in threads]
        assert not unknown, f"{entry['id']}: sources that are not corpus threads: {unknown}"
        labelled = [url for url in urls if threads[url]["family"] == entry["id"]]
        assert len(labelled) >= 2, f"{entry['id']}: fewer than two corpus threads labelled with it"
        assert any(entry["log_excerpt"] in threads[url]["pasted"] for url in urls), entry["id"]


def test_no_catalog_source_is_held_out() -> None:
    """The sources of the entries found in the corpus go through the held-out check, as the corpus does."""
    if not (SHARED_TOOLS / "heldout_check.py").is_file():
        pytest.skip(f"the held-out list is not here ({SHARED_TOOLS} is absent): nothing to check against")
    sys.path.insert(0, str(SHARED_TOOLS))
    try:
        from heldout_check import is_heldout  # type: ignore[import-not-found,unused-ignore]
    finally:
        sys.path.remove(str(SHARED_TOOLS))
    held = [url for entry in catalog() for url in entry.get("urls") or [] if is_heldout(url)]
    assert not held, held


def _corpus() -> dict[str, dict[str, Any]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return {record["url"]: record for record in (json.loads(line) for line in lines if line.strip())}


def test_entries_link_to_their_docs_anchor() -> None:
    entry = catalog_entry("cxxabi_not_found")
    assert entry is not None
    assert entry_url("cxxabi_not_found").endswith("docs/catalog.md#cxxabi_not_found")
    assert catalog_entry("no_such_entry") is None
