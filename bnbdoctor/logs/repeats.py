"""Identical lines matched a few times, not thousands: the repeat filter in front of the log extractor.

Logs repeat themselves: a warning printed once per layer, a training loop that logs the same error
every step, a notebook cell re-run, a fuzzed paste of one line 20,000 times. The extractor's work is
per candidate line (decode, pattern search, handler): 20,000 copies of one matching line cost half a
second, and 800,000 copies of ``CUDA`` five, although every copy says the same thing.

:func:`blank_repeats` finds the lines of a block that repeat more than :data:`KEPT_COPIES` + 1 times
(``collections.Counter`` over the block's lines, at C speed) and blanks all but the first
:data:`KEPT_COPIES` copies and the last one: a blanked copy becomes an empty line, so every other
line keeps its number and nothing downstream changes but the work. Whatever a handler keeps about
position (the first occurrences, the latest one) still reads the right copies; what is lost is the
count of the copies in between, reported as ``source.repeated_lines`` (the per-signature counts were
already lower bounds beyond :data:`~bnbdoctor.logs.extract.MAX_HITS_PER_PATTERN`).

Bounded work: the copies of the lines to blank, at most :data:`MAX_BLANKED_LINES` distinct lines per
block (the most repeated ones), are found in one pass over the block's lines; a block with fewer
than :data:`MIN_REPEATS` repeats costs one ``Counter`` of its lines. Only lines that hold an anchor
are worth blanking (others never reach a matcher); the caller says which with ``relevant``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import compress

#: Copies of one line that are matched before the rest of its copies (but the last) are blanked.
KEPT_COPIES = 3
#: A block is looked at only when at least this many of its lines repeat another line of it.
MIN_REPEATS = 64
#: Distinct repeated lines blanked per block, the most repeated first.
MAX_BLANKED_LINES = 32


def blank_repeats(block: bytes, relevant: Callable[[bytes], bool]) -> tuple[bytes, int]:
    """``block`` (whole lines joined by ``\\n``) with the copies of each much-repeated, ``relevant``
    line blanked but the first :data:`KEPT_COPIES` and the last; and how many copies were blanked."""
    if block.count(b"\n") < MIN_REPEATS:
        return block, 0
    lines = block.split(b"\n")
    counts = Counter(lines)
    repeats = len(lines) - len(counts)
    if repeats < MIN_REPEATS or repeats * 64 < len(counts):
        # Few repeats among many distinct lines: finding the most repeated would cost more than matching them.
        return block, 0
    chosen: list[bytes] = []
    for line, count in counts.most_common(MAX_BLANKED_LINES):
        if count <= KEPT_COPIES + 1:
            break
        if line and relevant(line):
            chosen.append(line)
    if not chosen:
        return block, 0
    # One pass over the lines, at C speed, finds every copy of the chosen ones; all but the first
    # KEPT_COPIES and the last of each are left empty.
    copies: dict[bytes, list[int]] = {line: [] for line in chosen}
    for index in compress(range(len(lines)), map(copies.__contains__, lines)):
        copies[lines[index]].append(index)
    blanked = 0
    for where in copies.values():
        for index in where[KEPT_COPIES:-1]:
            lines[index] = b""
        blanked += len(where) - KEPT_COPIES - 1
    return b"\n".join(lines), blanked
