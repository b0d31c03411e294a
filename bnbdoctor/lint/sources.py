"""The units ``bnbdoctor lint`` parses: a ``.py`` file, or each code cell of a ``.ipynb`` notebook.

Folders are walked for ``*.py`` and ``*.ipynb`` (hidden folders, virtual environments and
``__pycache__`` left out). Notebook lines that are IPython syntax (``!pip``, ``%magic``) become blank
lines, so that line numbers stay those of the cell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", ".venv", "venv", ".git", ".tox"})


@dataclass(frozen=True)
class Unit:
    """Source text to parse: a whole file (``cell`` None) or one notebook cell."""

    file: str
    text: str
    cell: int | None = None


class SourceError(ValueError):
    """A file that cannot be read as Python or as a notebook (reported in one line, not raised further)."""


def files_under(paths: list[str]) -> Iterator[Path]:
    """Each ``.py``/``.ipynb`` file named or found under a named folder, sorted within a folder."""
    for name in paths:
        path = Path(name)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                parts = found.relative_to(path).parts
                if any(p in SKIPPED_FOLDERS or (p.startswith(".") and p not in (".", "..")) for p in parts[:-1]):
                    continue
                if found.is_file() and found.suffix in (".py", ".ipynb"):
                    yield found
        elif path.is_file():
            yield path
        else:
            raise SourceError(f"{name}: no such file or folder")


def _ipython_free(line: str) -> str:
    return "" if line.lstrip().startswith(("!", "%", "?")) else line


def units_of(path: Path) -> list[Unit]:
    """The parseable units of one file; raises :class:`SourceError` when it cannot be read."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    if path.suffix != ".ipynb":
        return [Unit(str(path), raw.decode("utf-8", errors="replace"))]
    try:
        notebook = json.loads(raw)
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"not a notebook ({type(exc).__name__})") from None
    units = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        units.append(Unit(str(path), "\n".join(_ipython_free(line) for line in text.split("\n")), number))
    return units
