"""From log lines to Facts: the same records the probes fill, as far as a log shows them.

:class:`LogExtractor` is fed blocks of cleaned lines (:func:`bnbdoctor.logs.clean.read_blocks`).
The block prefilter searches each anchor of :data:`~bnbdoctor.logs.collectors.ANCHORS` over the
whole block with ``bytes.find`` (but those the block's distinct lines rule out,
:func:`~bnbdoctor.logs.candidates.absent_anchors`); only the lines that hold one are decoded, and on them only the
patterns that anchor calls for run. A pattern that matches hands the line to its handler in
the collector that declares it (:mod:`bnbdoctor.logs.collectors`), which records the line's
signature and fills the evidence in the shared :class:`~bnbdoctor.logs.state.LogState`.
:meth:`LogExtractor.facts` then builds :class:`~bnbdoctor.facts.Facts` (:mod:`bnbdoctor.logs.build`).

Linear time and bounded memory: a few C-level scans per block, at most
:data:`~bnbdoctor.logs.state.MAX_MATCHES_PER_SIGNATURE` lines kept per signature, and
evidence-only patterns (``Pattern.evidence``) stop after their hit limit or after
:data:`EVIDENCE_BLOCKS` blocks, and every other pattern after :data:`MAX_HITS_PER_PATTERN` lines (a
log that repeats one message thousands of times says nothing new after the first thousand; the
counts of such a message are then lower bounds).
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Set
from typing import BinaryIO

from bnbdoctor.facts import Facts
from bnbdoctor.logs.build import build_facts
from bnbdoctor.logs.candidates import (
    MAX_BYTES_PER_BLOCK,
    MAX_LINES_PER_BLOCK,
    MAX_OCCURRENCES_PER_ANCHOR,
    Candidates,
    absent_anchors,
    distinct_lines,
    line_bytes,
    scan_anchor,
    select,
)
from bnbdoctor.logs.clean import ReadStats, decode_line, read_blocks
from bnbdoctor.logs.collectors import ANCHORS, HANDLERS, PATTERNS
from bnbdoctor.logs.framing import error_levelled, unframe
from bnbdoctor.logs.gpus import compute_capability
from bnbdoctor.logs.patterns import EXCEPTION
from bnbdoctor.logs.repeats import blank_repeats
from bnbdoctor.logs.state import MAX_MATCHES_PER_SIGNATURE, MAX_TEXT, LogState

#: Lines holding "Error" (or "Exception", "Interrupt") read backwards per block for its last exception.
EXCEPTION_TRIES = 2000
#: Evidence-only patterns stop after this many blocks of the log (the machine is described early).
EVIDENCE_BLOCKS = 4
#: Lines any one pattern reads per log; far above any real log's repeats of one message.
MAX_HITS_PER_PATTERN = 1000
#: Lines holding an anchor in one block above which its repeated lines are blanked (:mod:`bnbdoctor.logs.repeats`).
REPEATS_CHECKED_AFTER = 256
#: The indices of the evidence-only patterns, with their hit limits.
_EVIDENCE: dict[int, int] = {i: p.evidence for i, p in enumerate(PATTERNS) if p.evidence is not None}
#: An anchor none of whose patterns is evidence-only may bring any number of lines.
_UNLIMITED = 1 << 62


#: Records marked ERROR that one block feeds as error lines: the first ones and the last (the state keeps no more).
MAX_LEVELLED_PER_BLOCK = 16
_NONE: set[int] = set()  # read only: the indices of a line no anchor brought


def _first_and_last(indices: list[int]) -> list[int]:
    if len(indices) <= MAX_LEVELLED_PER_BLOCK:
        return indices
    return indices[: MAX_LEVELLED_PER_BLOCK - 1] + indices[-1:]


def _line_starts(block: bytes, indices: list[int]) -> list[int]:
    """Where the lines of ``block`` numbered ``indices`` (from 0, ascending) start."""
    starts: list[int] = []
    line, position = 0, 0
    for index in indices:
        while line < index:
            position = block.find(b"\n", position) + 1
            if position == 0:
                return starts
            line += 1
        starts.append(position)
    return starts


class LogExtractor:
    """Feed blocks with :meth:`feed_block` (or lines with :meth:`feed`); read the result with :meth:`facts`."""

    def __init__(self, label: str = "log") -> None:
        self.state = LogState(label)
        self._retired: set[int] = set()  # indices of evidence-only patterns that stopped
        self._hits: dict[int, int] = {}
        self._blocks = 0

    @property
    def label(self) -> str:
        return self.state.label

    # ------------------------------------------------------------------ feeding
    def feed_block(self, first: int, block: bytes) -> None:
        """Look at the lines of a block (whole lines, ``\\n``-separated) that hold an anchor.

        The block is unframed first (:mod:`bnbdoctor.logs.framing`: timestamps, levels, ranks, quotes
        off, hard wraps joined), every line keeping its number. Each anchor is searched with
        ``bytes.find`` over the whole block; only the lines it occurs in are decoded and matched, so
        a long log costs a few C-level scans per block."""
        self._blocks += 1
        if not self.state.content and block and not block.isspace():
            self.state.content = True
        distinct = distinct_lines(block)  # the block's lines up to their digits, once: for levels, framings, anchors
        levelled = _first_and_last(error_levelled(block, distinct))  # records a logging format marks ERROR
        block, emptied = unframe(block, distinct)  # framing off, hard wraps joined: as many lines as before
        if emptied:
            self.state.joined_lines([first + offset for offset in emptied])
        if self._blocks > EVIDENCE_BLOCKS:
            self._retired.update(_EVIDENCE)  # the machine's facts are known by now
        lines_in_block = block.count(b"\n")
        # Anchors the block does not hold (blanking lines cannot add them): those its distinct lines
        # do not hold, and those a search finds nowhere (added by _candidates).
        absent = absent_anchors(block, ANCHORS, b"" if emptied else distinct)
        found = self._candidates(block, REPEATS_CHECKED_AFTER, absent)
        if found is None or line_bytes(block, found.lines) > MAX_BYTES_PER_BLOCK // 2:
            # Many lines to match: blank the copies of repeated ones first (logs.repeats).
            block, blanked = blank_repeats(block, lambda line: self._holds_anchor(line, absent))
            self.state.repeated_lines += blanked
            if blanked or found is None:
                found = self._candidates(block, None, absent) or Candidates()  # never None without a limit
        self._last_exception(block)
        starts, cut = select(block, found)
        self.state.lines_not_matched += max(cut, found.unread)  # an estimate: see docs/explain.md
        marked = set(_line_starts(block, levelled))
        if marked:
            starts = sorted(marked.union(starts))
        find, lines = block.find, found.lines
        number, previous = first, 0
        for start in starts:
            number += block.count(b"\n", previous, start)
            previous = start
            end = find(b"\n", start)
            text = decode_line(block[start:] if end == -1 else block[start:end])
            self._feed_line(number, text, lines.get(start, _NONE))
            if start in marked and text.strip():
                self.state.error_line(number, text.strip())  # the app said ERROR: a failure, named or not
        self.state.lines = max(self.state.lines, first + lines_in_block)

    def _candidates(self, block: bytes, give_up_after: int | None, absent: set[bytes]) -> Candidates | None:
        """The lines of ``block`` that hold a live anchor (:mod:`bnbdoctor.logs.candidates`); ``None`` as
        soon as there are more than ``give_up_after`` of them. Anchors in ``absent`` are not searched;
        those found nowhere are added to it."""
        found = Candidates()
        retired = self._retired
        for anchor, indices in ANCHORS.items():
            live = [i for i in indices if i not in retired]
            if not live or anchor in absent:
                continue
            budget = min(self._budget(live), MAX_OCCURRENCES_PER_ANCHOR)
            room = budget if give_up_after is None else min(budget, give_up_after + 1 - len(found.lines))
            brought = scan_anchor(block, anchor, live, room, found)
            if not brought:
                absent.add(anchor)
            if give_up_after is not None and len(found.lines) > give_up_after:
                return None
            if room < budget and brought >= room:
                return None  # stopped by the room left, on lines already found: its later lines were not read
        return found

    def _holds_anchor(self, line: bytes, absent: Set[bytes] = frozenset()) -> bool:
        """Whether a line holds an anchor some pattern still reads (only such lines reach a matcher).
        Anchors in ``absent`` are in no line of the block: they are not looked for."""
        retired = self._retired
        return any(
            anchor not in absent and anchor in line and any(i not in retired for i in indices)
            for anchor, indices in ANCHORS.items()
        )

    def _budget(self, indices: list[int]) -> int:
        """How many more lines an anchor may bring: unlimited unless all its patterns are evidence-only."""
        remaining = 0
        for index in indices:
            limit = _EVIDENCE.get(index)
            if limit is None:
                return _UNLIMITED
            remaining = max(remaining, limit - self._hits.get(index, 0))
        return 8 * remaining + 32

    def _last_exception(self, block: bytes) -> None:
        """The last Python exception line of the block (``ValueError: ...``), if any: of the lines that
        hold each word, the last :data:`EXCEPTION_TRIES` are looked at (a log of 100,000 lines that say
        "Error" but are not exceptions would otherwise be decoded line by line)."""
        best = -1
        for word in (b"Error", b"Exception", b"Interrupt"):
            pos, tries = block.rfind(word), 0
            while pos > best and tries < EXCEPTION_TRIES:
                tries += 1
                start = block.rfind(b"\n", 0, pos) + 1
                end = block.find(b"\n", pos)
                line = decode_line(block[start:] if end == -1 else block[start:end]).strip()
                if (line[:1].isalpha() or line.startswith("[rank")) and EXCEPTION.match(line):
                    best = start
                    self.state.exception = line[:MAX_TEXT]
                    break
                pos = block.rfind(word, 0, start) if start else -1

    def feed(self, number: int, line: str) -> None:
        """One line on its own (the block reader is faster for whole logs)."""
        self.feed_block(number, line.encode("utf-8", "surrogatepass").replace(b"\n", b" "))

    def _feed_line(self, number: int, line: str, indices: set[int]) -> None:
        if not line:
            return
        state, retired = self.state, self._retired
        for index in sorted(indices):  # declaration order, so state-keeping handlers run predictably
            if index in retired:
                continue
            pattern = PATTERNS[index]
            for key in pattern.keys:
                if key in line:
                    break
            else:
                continue
            match = pattern.search(line)
            if match is None:
                continue
            HANDLERS[index](state, match, number, line)
            hits = self._hits[index] = self._hits.get(index, 0) + 1
            if hits >= (pattern.evidence or MAX_HITS_PER_PATTERN):
                retired.add(index)

    def feed_all(self, blocks: Iterable[tuple[int, bytes]]) -> None:
        for first, block in blocks:
            self.feed_block(first, block)

    # ------------------------------------------------------------------ result
    def facts(self, stats: ReadStats | None = None) -> Facts:
        return build_facts(self.state, stats)


def extract(stream: BinaryIO, label: str = "log") -> tuple[Facts, float]:
    """Read a whole log; return its facts and the seconds spent reading it."""
    started = time.perf_counter()
    stats = ReadStats()
    extractor = LogExtractor(label)
    extractor.feed_all(read_blocks(stream, stats))
    return extractor.facts(stats), time.perf_counter() - started


def extract_text(text: str, label: str = "log") -> Facts:
    return extract(io.BytesIO(text.encode("utf-8", "surrogatepass")), label)[0]


__all__ = [
    "MAX_LINES_PER_BLOCK",
    "MAX_MATCHES_PER_SIGNATURE",
    "LogExtractor",
    "compute_capability",
    "extract",
    "extract_text",
]
