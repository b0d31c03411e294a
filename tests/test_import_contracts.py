"""The import contracts in pyproject.toml keep up with the package.

``lint-imports`` (scripts/check.sh) enforces the layers and the contracts beside them. The layers contract
names every top-level module (``exhaustive``, so a new module must be placed in a layer), and the two
contracts about third-party packages (Textual, the MCP SDK) list every module but the one allowed: these
tests say which contract forgot a module, without running lint-imports.
"""

from __future__ import annotations

import re
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


def layers() -> list[set[str]]:
    """The layers contract's layers, top first, each as the set of its modules' full names."""
    found = contract("The layers")
    (container,) = found["containers"]
    return [{f"{container}.{name.strip()}" for name in re.split(r"[|:]", layer)} for layer in found["layers"]]


def test_every_module_of_the_package_is_in_exactly_one_layer() -> None:
    named = [module for layer in layers() for module in layer]
    assert len(named) == len(set(named)), "a module is in two layers"
    assert set(named) == top_level_modules()
    assert contract("The layers")["exhaustive"] is True  # lint-imports checks it too


def test_the_vocabulary_imports_only_itself_and_serde() -> None:
    """The bottom layers are findings, facts and serde, alone: the vocabulary imports nothing else."""
    assert layers()[-3:] == [{"bnbdoctor.findings"}, {"bnbdoctor.facts"}, {"bnbdoctor.serde"}]


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
