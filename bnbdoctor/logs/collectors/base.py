"""A collector: the message families of one part of a log, each pattern declared on its handler.

A collector module creates one :class:`Collector` and decorates each handler with
:meth:`Collector.collects`, giving the family's name, its prefilter keys and its expressions
right above the code that reads them. The handler receives the shared
:class:`~bnbdoctor.logs.state.LogState`, the match, the line number and the line, records the
signature(s) the line belongs to (:meth:`LogState.match`) and fills the evidence the match
carries. Adding a message family is one decorated function (plus its signature id in
:mod:`bnbdoctor.knowledge.signatures`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bnbdoctor.logs.patterns import Pattern, pattern
from bnbdoctor.logs.state import LogState

Handler = Callable[[LogState, "re.Match[str]", int, str], None]


@dataclass(frozen=True)
class Family:
    """One message family: the pattern that recognises its lines and the handler that reads them."""

    pattern: Pattern
    handler: Handler


@dataclass
class Collector:
    """The families of one part of a log (the loader, the GPU, ...), in the order they run on a line."""

    name: str
    families: list[Family] = field(default_factory=list)

    def collects(
        self, name: str, keys: tuple[str, ...] | str, *regexes: str, flags: int = 0, evidence: int | None = None
    ) -> Callable[[Handler], Handler]:
        """Declare the family ``name`` on the handler below (see :func:`~bnbdoctor.logs.patterns.pattern`)."""
        declared = pattern(name, keys, *regexes, flags=flags, evidence=evidence)

        def register(handler: Handler) -> Handler:
            self.families.append(Family(declared, handler))
            return handler

        return register
