"""The import contracts in pyproject.toml keep up with the package.

``lint-imports`` (scripts/check.sh) enforces the layers; the two contracts that list "every other
module" are only as good as their lists, so a module added to the package must be added to them
(or this test says which contract forgot it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

# tomllib is Python 3.11+ (the package supports 3.10, where this test is skipped).
tomllib = pytest.importorskip("tomllib")

PACKAGE = ROOT / "bnbdoctor"


def top_level_modules() -> set[str]:
    """``bnbdoctor.x`` for every module and subpackage directly in the package."""
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    names |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"bnbdoctor.{name}" for name in names}


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads(Path(ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def contract(starts: str) -> dict[str, Any]:
    (found,) = [c for name, c in contracts().items() if name.startswith(starts)]
    return found


def test_the_vocabulary_contract_forbids_every_other_module() -> None:
    vocabulary = contract("Facts and findings")
    allowed = {*vocabulary["source_modules"], "bnbdoctor.serde"}
    assert set(vocabulary["forbidden_modules"]) == top_level_modules() - allowed


def test_the_textual_contract_covers_every_module_but_the_tui() -> None:
    headless = contract("Only the TUI imports Textual")
    assert set(headless["source_modules"]) == top_level_modules() - {"bnbdoctor.tui"}
    assert headless["forbidden_modules"] == ["textual"]


def test_the_mcp_contract_covers_every_module_but_the_server() -> None:
    core = contract("Only the MCP server imports the MCP SDK")
    assert set(core["source_modules"]) == top_level_modules() - {"bnbdoctor.mcp_server"}


def test_every_ignored_import_is_explained() -> None:
    """Each ``ignore_imports`` entry has a comment above it in pyproject.toml saying why."""
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for c in contracts().values():
        for ignored in c.get("ignore_imports", []):
            found = [i for i, line in enumerate(lines) if line.strip().startswith(f'"{ignored}"')]
            assert found, ignored
            for at in found:  # one import may be allowed by two contracts: each says why
                assert lines[at - 1].strip().startswith("#"), f"{ignored}: say why it is allowed"
