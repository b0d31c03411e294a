"""The units ``bnbdoctor lint`` parses: a ``.py`` file, or each code cell of a ``.ipynb`` notebook.

Folders are walked for ``*.py`` and ``*.ipynb`` (hidden folders, virtual environments and
``__pycache__`` left out). Notebook lines that are IPython syntax (``!pip``, ``%magic``) become blank
lines, so that line numbers stay those of the cell.

What is parsed is bounded: parsing costs about 8 KB of memory per line of source (a 16 MB generated
data module took 2.2 GB), so a file whose code is longer than :data:`MAX_SOURCE_BYTES` (a ``.py`` file,
or a notebook's code cells together), or a notebook file larger than :data:`MAX_NOTEBOOK_BYTES`
(outputs and all), is one line in the report and is not parsed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", ".venv", "venv", ".git", ".tox"})
#: The most code one file may hold to be parsed: far more than any training script (the largest
#: hand-written modules are ~200 KB), about 150 MB of memory to parse.
MAX_SOURCE_BYTES = 2 * 1024 * 1024
#: The largest notebook file read: its outputs (images, logs) may be large; its code is bounded above.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
_MIB = 1024 * 1024


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
    notebook_file = path.suffix == ".ipynb"
    limit = MAX_NOTEBOOK_BYTES if notebook_file else MAX_SOURCE_BYTES
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    if len(raw) > limit:
        what = "a notebook" if notebook_file else "source"
        raise SourceError(f"more than {limit // _MIB} MiB of {what}; not linted (generated data?)")
    if not notebook_file:
        return [Unit(str(path), raw.decode("utf-8", errors="replace"))]
    try:
        notebook = json.loads(raw)
        cells = notebook["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells")
    except RecursionError:
        raise SourceError("not a notebook (JSON nested too deeply)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"not a notebook ({type(exc).__name__})") from None
    units = []
    code = 0
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(str(line) for line in source) if isinstance(source, list) else str(source)
        code += len(text)
        if code > MAX_SOURCE_BYTES:
            raise SourceError(f"more than {MAX_SOURCE_BYTES // _MIB} MiB of code in its cells; not linted")
        units.append(Unit(str(path), "\n".join(_ipython_free(line) for line in text.split("\n")), number))
    return units
