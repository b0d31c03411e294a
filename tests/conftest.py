"""Shared test fixtures: paths, the real patient environment, recorded machines."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "platform_fixtures"


def fixture_names() -> list[str]:
    return sorted(p.parent.name for p in FIXTURES.glob("*/machine.json"))


@pytest.fixture(scope="session")
def bnb_dir() -> Path:
    """The real bitsandbytes wheel installed in the test environment (never imported)."""
    spec = importlib.util.find_spec("bitsandbytes")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("bitsandbytes is not installed in the test environment")
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="session")
def python_exe() -> str:
    return sys.executable
