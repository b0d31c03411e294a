"""Every Python exception line of a log, named or not, so that an error no family names is seen.

A line of the shape ``ValueError: ...``, ``torch.OutOfMemoryError: ...`` or ``[rank1]: KeyError:
'lm_head'`` (:data:`~bnbdoctor.logs.patterns.EXCEPTION`) is kept with its number in
:attr:`LogState.errors <bnbdoctor.logs.state.LogState.errors>`; warnings (``UserWarning: ...``), a
``SystemExit`` and a ``KeyboardInterrupt`` are not errors. Nothing is recorded as a match here:
:mod:`bnbdoctor.logs.build` decides, with the whole log read, which of these lines no message
family names (``unrecognised_error``).
"""

from __future__ import annotations

import re

from bnbdoctor.logs.collectors.base import Collector
from bnbdoctor.logs.patterns import EXCEPTION
from bnbdoctor.logs.state import LogState

COLLECTOR = Collector("errors")
collects = COLLECTOR.collects

#: Leading decoration a copied log puts before an exception line (Markdown quotes, a pytest "E").
_PREFIX = re.compile(r"^(?:>\s?)*(?:E\s{1,8})?")


@collects(("Error", "Exception"), r"(?:Error|Exception)(?::|\s*$)")
def exception_line(state: LogState, m: re.Match[str], number: int, line: str) -> None:
    text = _PREFIX.sub("", line.strip()).strip()
    found = EXCEPTION.match(text)
    if found is None or found.group("type").endswith("Warning"):
        return
    state.error_line(number, text)
