"""Reading console logs: the fact source behind ``bnbdoctor explain``.

``clean`` turns raw input into numbered lines, ``patterns`` recognises message families,
``signatures`` says what each family means, ``gpus`` knows GPU names, and ``extract`` builds
the same :class:`~bnbdoctor.facts.Facts` the probes produce, so the same rules can run on them.
"""

from __future__ import annotations

from bnbdoctor.logs.extract import LogExtractor, extract, extract_text

__all__ = ["LogExtractor", "extract", "extract_text"]
