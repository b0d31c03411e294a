"""The failure catalog ships with the package, equal to the shared reference copy it is taken from."""

from __future__ import annotations

import json
from pathlib import Path

from bnbdoctor.catalog import catalog, catalog_entry, catalog_ids, entry_url

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "failure_catalog.json"


def test_packaged_catalog_is_present_and_well_formed() -> None:
    ids = catalog_ids()
    assert len(ids) >= 67
    assert len(ids) == len(set(ids)), "duplicate catalog ids"
    for entry in catalog():
        assert entry["id"].isidentifier() and entry["id"] == entry["id"].lower(), entry["id"]
        assert entry.get("title") and entry.get("root_cause"), entry["id"]


def test_packaged_catalog_equals_the_shared_reference_when_present() -> None:
    if not SHARED.is_file():  # a checkout without ../shared: the packaged copy is the reference
        return
    assert json.loads(SHARED.read_text(encoding="utf-8")) == list(catalog()), (
        "bnbdoctor/data/failure_catalog.json differs from ../shared/reference/failure_catalog.json: copy it"
    )


def test_entries_link_to_their_docs_anchor() -> None:
    entry = catalog_entry("cxxabi_not_found")
    assert entry is not None
    assert entry_url("cxxabi_not_found").endswith("docs/catalog.md#cxxabi_not_found")
    assert catalog_entry("no_such_entry") is None
