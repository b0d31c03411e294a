"""Which lines of a block the extractor matches: the anchor scan, and the budget that bounds it.

The extractor matches only the lines that hold an anchor (a word one of its patterns needs). On
real logs those are a few dozen lines a megabyte. On hostile ones, or a log that prints one message
in ever-new words (a counter, a path, a progress bar with ``it/s``), they can be every line, and
matching costs tens of microseconds a line. So the work per block is bounded, in a way that keeps
what a diagnosis needs:

- an anchor brings at most :data:`MAX_OCCURRENCES_PER_ANCHOR` lines from the start of the block and
  as many from its end (the end of a log says how it ended); it is then *dense*;
- the lines brought by an anchor that is not dense (a rare word: an error, a version banner) are
  always matched, up to the block's budget;
- the budget, :data:`MAX_LINES_PER_BLOCK` lines and :data:`MAX_BYTES_PER_BLOCK` bytes, is filled with
  the dense anchors' lines from the start and the end of the block.

What is left out is estimated in ``unread`` (``source.lines_not_matched``): the lines a dense anchor
skipped, or the lines over budget, whichever is more.

Before the anchors are searched one by one, :func:`absent_anchors` rules out at once those a block
cannot hold: most anchors are in no line of a block, and a search that finds nothing reads the whole
block. A long log is mostly lines that differ only in their numbers (a step, a loss, a progress bar),
so the block's distinct lines, its digits made one digit, are a small text that holds every anchor the
block holds; an anchor not in it is in no line of the block. (One alternation of all anchors in one
``re`` pattern reads the block once, but at a tenth of ``bytes.find``'s speed per byte: slower than the
separate searches.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: Occurrences of one anchor read per block from its start, and as many again from its end.
MAX_OCCURRENCES_PER_ANCHOR = 1000
#: Lines of one block that are matched.
MAX_LINES_PER_BLOCK = 1000
#: Bytes of lines of one block that are matched (a pattern's search costs per byte of its line).
MAX_BYTES_PER_BLOCK = 256 * 1024
#: Every digit made ``0``: lines that differ only in a counter or a loss are one line to the prefilter.
_ONE_DIGIT = bytes.maketrans(b"123456789", b"000000000")
#: The prefilter is used when the block's distinct lines are at most this share of its lines (else
#: searching them would cost about as much as searching the block).
_DISTINCT_SHARE = 0.5


@dataclass
class Candidates:
    """The lines of one block to match: their starts, with the patterns each calls for."""

    lines: dict[int, set[int]] = field(default_factory=dict)
    sparse: set[int] = field(default_factory=set)  # lines brought by an anchor that was not dense
    unread: int = 0  # lines a dense anchor did not bring (an estimate, from its occurrences)


def distinct_lines(block: bytes) -> bytes | None:
    """The block's distinct lines with every digit made ``0``, each after a ``\\n`` (in no order); None
    when they are more than :data:`_DISTINCT_SHARE` of its lines (searching them would cost about as
    much as searching the block). A long log is mostly lines that differ only in their numbers, so this
    is a small text that holds, as a line, every line of the block up to its digits: what a search for
    a digit-blind pattern (an anchor, a framing) finds nowhere in it is in no line of the block."""
    lines = block.translate(_ONE_DIGIT).split(b"\n")
    distinct = set(lines)
    if len(distinct) > len(lines) * _DISTINCT_SHARE:
        return None
    return b"\n" + b"\n".join(distinct)


def absent_anchors(block: bytes, anchors: Iterable[bytes], distinct: bytes | None = b"") -> set[bytes]:
    """Those of ``anchors`` that no line of ``block`` holds, as far as they can be told at once; an
    anchor not returned may still be absent (each is then searched in the block itself).
    ``distinct`` is :func:`distinct_lines` of the block when the caller has it (``b""``: not computed).

    An anchor found in the block lies in one of its lines (an anchor holding a newline is never
    returned); with its digits made ``0`` it lies in that line with its digits made ``0``, one of the
    block's distinct lines so made. So an anchor absent from those distinct lines is absent from the
    block. (The distinct lines of a block before its framing was taken off serve too: a line unframed
    is the end of the line it was, unless hard-wrapped pieces were joined.)"""
    text = distinct_lines(block) if distinct == b"" else distinct
    if text is None:
        return set()  # few repeats: the distinct lines are about the block; the searches are as cheap there
    return {a for a in anchors if b"\n" not in a and a.translate(_ONE_DIGIT) not in text}


def scan_anchor(block: bytes, anchor: bytes, live: list[int], budget: int, found: Candidates) -> int:
    """Add the lines of ``block`` that hold ``anchor`` to ``found``: up to ``budget`` from the start
    and, when the block holds more and the budget is the full one, as many from its end. Returns how
    many lines it brought (0: the block does not hold the anchor)."""
    find, rfind = block.find, block.rfind
    mine: list[int] = []
    pos, last_end = find(anchor), -1
    dense = False
    while pos != -1:
        start = rfind(b"\n", 0, pos) + 1
        mine.append(start)
        last_end = find(b"\n", pos)
        if last_end == -1:
            break
        if len(mine) >= budget:
            dense = find(anchor, last_end + 1) != -1
            break
        pos = find(anchor, last_end + 1)
    if dense and budget >= MAX_OCCURRENCES_PER_ANCHOR:
        pos, seen, earliest = rfind(anchor), 0, len(block)
        while pos > last_end and seen < MAX_OCCURRENCES_PER_ANCHOR:
            start = rfind(b"\n", 0, pos) + 1
            if start <= last_end:
                break
            earliest = start
            mine.append(start)
            seen += 1
            pos = rfind(anchor, last_end + 1, start) if start > 0 else -1
        if pos > last_end:  # occurrences between the two scans were not read
            gap = min(block.count(anchor, last_end + 1, earliest), block.count(b"\n", last_end + 1, earliest))
            found.unread = max(found.unread, gap)
    lines = found.lines
    for start in mine:
        patterns = lines.get(start)
        if patterns is None:
            lines[start] = set(live)
        else:
            patterns.update(live)
    if not dense:
        found.sparse.update(mine)
    return len(mine)


def select(block: bytes, found: Candidates) -> tuple[list[int], int]:
    """The starts of the lines to match, in order, within the block's budget; and how many were cut."""
    starts = sorted(found.lines)
    if len(starts) <= MAX_LINES_PER_BLOCK and line_bytes(block, starts) <= MAX_BYTES_PER_BLOCK:
        return starts, 0
    sparse = sorted(found.sparse)
    chosen = _ends_within(block, sparse, MAX_LINES_PER_BLOCK, MAX_BYTES_PER_BLOCK)
    lines_left = MAX_LINES_PER_BLOCK - len(chosen)
    bytes_left = MAX_BYTES_PER_BLOCK - line_bytes(block, chosen)
    taken = set(chosen)
    dense = [s for s in starts if s not in taken]
    chosen += _ends_within(block, dense, lines_left, bytes_left)
    chosen.sort()
    return chosen, len(starts) - len(chosen)


def _line_size(block: bytes, start: int) -> int:
    end = block.find(b"\n", start)
    return (len(block) if end == -1 else end) - start + 1


def line_bytes(block: bytes, starts: Iterable[int]) -> int:
    """The bytes of the lines of ``block`` that start at ``starts`` (their newlines included)."""
    return sum(_line_size(block, s) for s in starts)


def _ends_within(block: bytes, starts: list[int], max_lines: int, max_bytes: int) -> list[int]:
    """As many of ``starts`` as fit ``max_lines`` and ``max_bytes``, taken alternately from the start
    and the end of the list (the first lines of a block and its last)."""
    chosen: list[int] = []
    low, high, used = 0, len(starts) - 1, 0
    from_start = True
    while low <= high and len(chosen) < max_lines:
        index = low if from_start else high
        size = _line_size(block, starts[index])
        if used + size > max_bytes:
            break
        used += size
        chosen.append(starts[index])
        if from_start:
            low += 1
        else:
            high -= 1
        from_start = not from_start
    return chosen
