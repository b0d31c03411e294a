"""A collector: the message families of one part of a log, each pattern declared on its handler.

A collector module creates one :class:`Collector` and declares each family in one of two ways,
its prefilter keys and expressions right above the code that reads them:

- :meth:`Collector.recognises` for a family that only says "this line is one of those messages":
  the family *is* its signature (a typed constant of :mod:`bnbdoctor.knowledge.signatures`), so
  its name comes from there and there is no handler to write;
- :meth:`Collector.collects` on a handler that reads more (evidence, context between lines, or
  a choice between signatures): the family is named after the handler function.

Either way a family's name is written once. A handler receives the shared
:class:`~bnbdoctor.logs.state.LogState`, the match, the line number and the line, records the
signature(s) the line belongs to (:meth:`LogState.match`) and fills the evidence the match
carries. Adding a message family is one declaration here, its signature in
:mod:`bnbdoctor.knowledge.signatures`, and a rule that reads it (a family no rule reads is refused
by the tests: it would be recognised and then say nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.logs.patterns import Pattern, pattern
from bnbdoctor.logs.state import LogState

Handler = Callable[[LogState, "re.Match[str]", int, str], None]


@dataclass(frozen=True)
class Family:
    """One message family: the pattern that recognises its lines and the handler that reads them.

    ``signature``: the one signature every line of the family is recorded as, where it is declared."""

    pattern: Pattern
    handler: Handler
    signature: SignatureId | None = None


@dataclass
class Collector:
    """The families of one part of a log (the loader, the GPU, ...), in the order they run on a line."""

    name: str
    families: list[Family] = field(default_factory=list)

    def collects(
        self,
        keys: tuple[str, ...] | str,
        *regexes: str,
        flags: int = 0,
        evidence: int | None = None,
        records: SignatureId | None = None,
        bnb: bool = False,
    ) -> Callable[[Handler], Handler]:
        """Declare a family on the handler below, named after it (see :func:`~bnbdoctor.logs.patterns.pattern`).

        ``records``: the signature every line of the family belongs to, recorded before the handler reads
        the rest; ``bnb``: the message is bitsandbytes' own (as for :meth:`recognises`)."""

        def register(handler: Handler) -> Handler:
            name = getattr(handler, "__name__", "")
            declared = pattern(name, keys, *regexes, flags=flags, evidence=evidence)
            self.families.append(Family(declared, _recording(handler, records, bnb=bnb), records))
            return handler

        return register

    def recognises(
        self,
        signature: SignatureId,
        keys: tuple[str, ...] | str,
        *regexes: str,
        flags: int = 0,
        bnb: bool = False,
        evidence: int | None = None,
        up_to: int | None = None,
        era: str | None = None,
    ) -> None:
        """Declare the family whose every match is one line of ``signature``.

        ``bnb``: the message is bitsandbytes' own, so the log shows bitsandbytes (installed, imported);
        ``evidence`` as for :func:`~bnbdoctor.logs.patterns.pattern`; ``up_to``: record only the first
        lines (a context family, see :meth:`LogState.match`); ``era``: the loader era the message belongs to
        (:meth:`~bnbdoctor.logs.state.BnbState.set_era`), for bitsandbytes' own messages."""

        def record(state: LogState, m: re.Match[str], number: int, line: str) -> None:
            if bnb:
                state.bnb.seen = True
            if era is not None:
                state.bnb.set_era(era)
            state.match(signature, number, line, up_to=up_to)

        record.__name__ = record.__qualname__ = signature
        declared = pattern(signature, keys, *regexes, flags=flags, evidence=evidence)
        self.families.append(Family(declared, record, signature))


def _recording(handler: Handler, records: SignatureId | None, *, bnb: bool) -> Handler:
    """``handler``, after marking bitsandbytes seen and recording ``records`` (as :meth:`Collector.collects` asks)."""
    if records is None and not bnb:
        return handler

    def recorded(state: LogState, m: re.Match[str], number: int, line: str) -> None:
        if bnb:
            state.bnb.seen = True
        if records is not None:
            state.match(records, number, line)
        handler(state, m, number, line)

    recorded.__name__ = getattr(handler, "__name__", "")
    recorded.__qualname__ = getattr(handler, "__qualname__", "")
    recorded.__module__ = handler.__module__
    return recorded
