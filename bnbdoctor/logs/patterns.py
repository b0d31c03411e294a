"""The shape of a message family's expressions, the anchors of the block prefilter, exceptions.

Each :class:`Pattern` has ``keys``: literal substrings of which at least one must occur in a line
before its expressions are tried. The collectors (:mod:`bnbdoctor.logs.collectors`) declare the
patterns next to the handlers that read them; :func:`anchors` maps the short words every key
contains to the patterns that need them, so the extractor finds candidate lines of a whole block
with a few C-level ``bytes.find`` scans and the cost per line stays constant.

Expressions match the *structure* of a message (the fixed words bitsandbytes, the loader, torch
or transformers print, with versions, library names and paths as groups), never one user's text,
and are written to run in linear time on a line of bounded length: no nested quantifiers,
bounded repeats, and a fixed word to anchor every search. Where a message puts the interesting
token *before* a fixed phrase (``<library>: cannot open shared object file``), the expression
matches the phrase and the handler reads the token before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: The quotes the loader and Python put around names.
Q = r"[`'‘’\"]"
#: A bitsandbytes native library file name.
LIB = r"libbitsandbytes_\w{1,80}\.(?:so|dll|dylib)"
#: A package version, with pre/post/dev parts and a local suffix (``2.1.0+cu121``).
VER = r"\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|post|rc|a|b)\d*)?(?:\+[\w.]+)?"


@dataclass(frozen=True)
class Pattern:
    """One message family's expressions (tried in order; the first match wins).

    ``evidence``: for a pattern that only gathers evidence (paths, versions, GPU names), the number
    of hits after which it stops running; it also stops after the first few blocks of a log (the
    machine is described early). None for patterns that recognise failures: they always run."""

    name: str
    keys: tuple[str, ...]
    regexes: tuple[re.Pattern[str], ...]
    evidence: int | None = None

    def search(self, line: str) -> re.Match[str] | None:
        for regex in self.regexes:
            match = regex.search(line)
            if match:
                return match
        return None


def pattern(
    name: str, keys: tuple[str, ...] | str, *regexes: str, flags: int = 0, evidence: int | None = None
) -> Pattern:
    """A :class:`Pattern` from expression strings (compiled once, when its collector is imported)."""
    if isinstance(keys, str):
        keys = (keys,)
    return Pattern(name, keys, tuple(re.compile(r, flags) for r in regexes), evidence)


#: Short substrings searched in whole blocks of bytes (``bytes.find`` runs at C speed): every key
#: contains one of them, or is its own anchor. A line is looked at only when it holds an anchor.
ANCHOR_WORDS = (
    "bitsandbytes",
    "CUDA",
    "cuda",
    "not found",
    "annot",
    "not import",
    "Error",
    "error",
    "GPU",
    "NVIDIA",
    "device",
    "symbol",
    "Win",
    "bit",
    "lora",
    "No module",
    "Could not find",
    "dispatched",
    "replica",
    "tensors",
    "Jet",
    "ython",
    "latform",
    "/",
    ":\\",
    "torch",
    "PyTorch",
    "Version",
    "triton",
    "libc",
)


def anchor(key: str) -> bytes:
    """The anchor word a key contains (the key itself when it contains none)."""
    return next((word for word in ANCHOR_WORDS if word in key), key).encode("utf-8")


def anchors(patterns: Iterable[Pattern]) -> dict[bytes, tuple[int, ...]]:
    """anchor (bytes) -> the indices, in ``patterns``, of the patterns whose keys contain it."""
    found: dict[bytes, tuple[int, ...]] = {}
    for index, each in enumerate(patterns):
        for key in each.keys:
            word = anchor(key)
            indices = found.setdefault(word, ())
            if index not in indices:
                found[word] = (*indices, index)
    return found


#: A Python exception line: ``ValueError: ...``, ``torch.OutOfMemoryError: ...``, ``[rank1]: OSError: ...``.
EXCEPTION = re.compile(
    r"^(?:\[rank\d{1,4}\]:\s*)?(?:[A-Za-z_][\w]{0,60}\.){0,6}(?P<type>[A-Z]\w{0,60}(?:Error|Exception|Exit|Interrupt|Warning))"
    r"(?::\s?(?P<message>.*))?$"
)
