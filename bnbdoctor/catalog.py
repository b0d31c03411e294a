"""The failure catalog: the shared vocabulary of real bitsandbytes failures, shipped with the package.

Every finding names the catalog entries it diagnoses (``Finding.covers``), so catalog ids are
public API. The catalog is kept in the project's shared reference data and copied into
``bnbdoctor/data/failure_catalog.json`` (a test checks the copy is current); the packaged copy then
adds the families found in real threads of the development corpus (``"origin": "corpus"``, issue
24), which the shared copy does not have yet. This module is the one place that reads it.
``docs/catalog.md`` lists the entries (generated, one anchor per id), and renderers link ids there
with :func:`entry_url`.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

#: Where each entry is described for people (``docs/catalog.md`` is generated from the catalog).
CATALOG_DOCS_URL = "https://github.com/bnbdoctor/bnbdoctor/blob/main/docs/catalog.md"  # beside render.markdown.DOCS_URL


class CatalogMissing(RuntimeError):
    """The packaged catalog is absent: a broken install, never something to skip over."""


@lru_cache(maxsize=1)
def catalog() -> tuple[dict[str, Any], ...]:
    """Every entry, in catalog order."""
    # Read beside this file, as knowledge/ reads its data: importlib.resources would import pathlib,
    # tempfile and zipfile machinery (a few ms of every run) for one file of the package folder.
    path = os.path.join(os.path.dirname(__file__), "data", "failure_catalog.json")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (FileNotFoundError, OSError) as exc:
        raise CatalogMissing(f"the packaged failure catalog is missing: {exc}") from None
    entries = json.loads(text)
    return tuple(entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str))


@lru_cache(maxsize=1)
def _by_id() -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in catalog()}


def catalog_ids() -> list[str]:
    return [entry["id"] for entry in catalog()]


def catalog_entry(entry_id: str) -> dict[str, Any] | None:
    return _by_id().get(entry_id)


def entry_anchor(entry_id: str) -> str:
    """The anchor GitHub gives the entry's heading in docs/catalog.md (ids are lowercase snake case)."""
    return entry_id.lower()


def entry_url(entry_id: str) -> str:
    return f"{CATALOG_DOCS_URL}#{entry_anchor(entry_id)}"
