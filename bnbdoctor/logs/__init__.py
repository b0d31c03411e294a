"""Reading console logs: the fact source behind ``bnbdoctor explain``.

``clean`` turns raw input into numbered lines, ``patterns`` recognises message families,
``signatures`` says what each family means, ``gpus`` knows GPU names, and ``extract`` builds
the same :class:`~bnbdoctor.facts.Facts` the probes produce, so the same rules can run on them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LogExtractor", "extract", "extract_text"]


def __getattr__(name: str) -> Any:
    # Lazy: rules import bnbdoctor.rules.log_evidence on every diagnosis; the pattern tables behind
    # ``extract`` are only compiled when a log is actually read.
    if name in __all__:
        from bnbdoctor.logs import extract as module

        return getattr(module, name)
    raise AttributeError(name)
