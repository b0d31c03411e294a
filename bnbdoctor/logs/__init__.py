"""Reading console logs: the fact source behind ``bnbdoctor explain``.

``clean`` turns raw input into numbered lines; ``collectors`` recognise message families, one
module per part of a log, each pattern declared on its handler; ``state`` holds what they read;
``build`` turns it into the same :class:`~bnbdoctor.facts.Facts` the probes produce, so the same
rules can run on them; ``extract`` wires it together (the block prefilter, the dispatch). What
each family means (role, catalog ids) is :mod:`bnbdoctor.knowledge.signatures`; ``gpus`` knows GPU
names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LogExtractor", "extract", "extract_text"]


def __getattr__(name: str) -> Any:
    # Lazy: the pattern tables behind ``extract`` are only compiled when a log is actually read.
    if name in __all__:
        from bnbdoctor.logs import extract as module

        return getattr(module, name)
    raise AttributeError(name)
