"""Turning whatever a user pasted into clean, numbered lines, in linear time and bounded memory.

A pasted log is messy: ANSI colour codes from a terminal or a notebook, Windows line endings,
progress bars that rewrite a line with ``\\r``, Markdown fences around it, HTML entities from a
web page, a UTF-16 file written by PowerShell, lines cut in the middle, binary garbage.

The input is read in fixed-size blocks of bytes and split into lines on ``\\r\\n``, ``\\r`` and ``\\n``
alike (Python's universal newlines, and the numbering most editors show): terminals turn the
newlines of a paste into ``\\r`` (tmux, many emulators), so a log pasted there and the same log
saved with LF or CRLF endings must read as the same lines. A progress bar that redraws itself
with ``\\r`` is one line per redraw. :func:`read_blocks` yields blocks of whole lines joined by
``\\n``, with colour codes removed, so the extractor can search a whole block at C speed and decode
only the lines that matter; :func:`clean_line` finishes a decoded line (entities, control characters). Lines are
capped at :data:`MAX_LINE` characters: the tail of a longer line is not matched. Nothing here
backtracks: every expression is a single pass with a fixed first byte.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

#: Characters of one line that are kept and matched; the rest of a longer line is dropped.
MAX_LINE = 4096
#: Bytes read at a time.
BLOCK = 1 << 20

#: CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and two-byte escapes.
_ANSI = re.compile(rb"\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]|\x1b\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
#: Control characters other than tab (binary data, stray escape bytes left after the pass above).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")
#: A line end other than ``\n``: ``\r\n``, or a lone ``\r``.
_CR_ENDS = re.compile(rb"\r\n?")
_ENTITIES = (("&#39;", "'"), ("&#x27;", "'"), ("&quot;", '"'), ("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


@dataclass
class ReadStats:
    """What reading the input found, for the report's ``source`` block."""

    lines: int = 0
    bytes: int = 0
    truncated_lines: int = 0  # lines longer than MAX_LINE bytes (their tail was not matched)
    binary_lines: int = 0  # blocks of lines that held NUL bytes
    encoding: str = "utf-8"


def clean_bytes(block: bytes) -> bytes:
    """Colour codes out of a block of whole lines, and any carriage return left in one line (a space)."""
    if b"\x1b" in block:
        block = _ANSI.sub(b"", block)
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n").replace(b"\r", b" ")
    return block


def split_lines(text: str) -> list[str]:
    """``text`` split on ``\\r\\n``, ``\\r`` and ``\\n`` only: the lines :func:`read_lines` numbers.

    Unlike :meth:`str.splitlines`, form feeds, ``\\x1c``-``\\x1e``, NEL and the Unicode line
    separators stay inside their line (the reader does not break there either)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def normalize_newlines(text: str) -> str:
    """``text`` with every ``\\r\\n`` and lone ``\\r`` made ``\\n`` (a terminal's paste, an old Mac file)."""
    return "\n".join(split_lines(text))


def _universal_newlines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks with ``\\r\\n`` and lone ``\\r`` made ``\\n``, also where a chunk ends between the two."""
    after_cr = False  # the previous chunk ended with "\r": a "\n" starting this one is the same line end
    for raw in chunks:
        if not raw:
            continue  # after_cr stays as it was: the "\n" may still come
        chunk = raw[1:] if after_cr and raw.startswith(b"\n") else raw
        after_cr = chunk.endswith(b"\r")
        yield _CR_ENDS.sub(b"\n", chunk) if b"\r" in chunk else chunk  # one pass: each \r\n, then each \r


def clean_line(text: str) -> str:
    """A decoded line, finished for the matchers: entities decoded, control characters blanked."""
    if "\x1b" in text or "\r" in text:
        text = clean_bytes(text.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")
    if "&" in text and ("&#" in text or "&quot;" in text or "&lt;" in text or "&gt;" in text or "&amp;" in text):
        for entity, char in _ENTITIES:
            text = text.replace(entity, char)
    if _CONTROL.search(text):
        text = _CONTROL.sub(" ", text)
    return text


def decode_line(raw: bytes, max_line: int = MAX_LINE) -> str:
    return clean_line(raw[: max_line * 4].decode("utf-8", "replace")[:max_line])


def sniff(head: bytes) -> str:
    """The encoding of the input: UTF-16 (PowerShell's ``>`` redirect) or UTF-8."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if len(head) >= 64:
        sample = head[:4096]
        odd_nuls = sample[1::2].count(0)
        if odd_nuls > len(sample) // 4 and sample[0::2].count(0) < len(sample) // 50:
            return "utf-16-le"  # ASCII text written as UTF-16 without a BOM
    return "utf-8"


def _reader(stream: BinaryIO, block: int) -> Callable[[], bytes]:
    """``stream.read(block)``, ending at the first end of input on a terminal.

    On a terminal Ctrl-D ends the input once: a read that returned it returns what came before,
    shorter than asked, and the next read waits for more typing. A file or a pipe returns a short
    read only at its end too, so stopping there would also be right for them; they read on until
    an empty read, as before."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError, OSError):
        terminal = False
    done = False

    def read() -> bytes:
        nonlocal done
        if done:
            return b""
        data = stream.read(block)
        done = terminal and len(data) < block
        return data

    return read


def _raw_chunks(stream: BinaryIO, stats: ReadStats, block: int) -> Iterator[bytes]:
    """The input as UTF-8 bytes, chunk by chunk (UTF-16 input is transcoded)."""
    read = _reader(stream, block)
    head = read()
    stats.bytes += len(head)
    stats.encoding = sniff(head)
    if stats.encoding != "utf-8":
        decoder = codecs.getincrementaldecoder(stats.encoding)(errors="replace")
        data = head
        while data:
            yield decoder.decode(data).encode("utf-8", "replace")
            data = read()
            stats.bytes += len(data)
        yield decoder.decode(b"", final=True).encode("utf-8", "replace")
        return
    head = head.removeprefix(codecs.BOM_UTF8)
    data = head
    while data:
        yield data
        data = read()
        stats.bytes += len(data)


def _has_long_line(data: bytes, max_line: int) -> bool:
    """Whether a line of ``data`` is longer than ``max_line`` bytes. Such a line holds a whole window of
    ``(max_line + 2) // 2`` bytes that starts at a multiple of that size; when every such window holds a
    newline, no line is, and the lines need not be split to be measured."""
    window = (max_line + 2) // 2
    if window >= 256:
        find = data.find
        if all(find(b"\n", start, start + window) != -1 for start in range(0, len(data) - window + 1, window)):
            return False
    return max(map(len, data.split(b"\n"))) > max_line


def read_blocks(
    stream: BinaryIO, stats: ReadStats | None = None, max_line: int = MAX_LINE, block: int = BLOCK
) -> Iterator[tuple[int, bytes]]:
    """``(number of the block's first line, block)``: whole lines joined by ``\\n`` (the input's
    ``\\r\\n``, ``\\r`` and ``\\n`` alike), cleaned of colour codes, lines longer than ``max_line``
    bytes cut. A last line without a line end is part of the last block. Memory stays bounded by
    twice the block size and ``max_line``, even for a file without a single newline."""
    stats = stats if stats is not None else ReadStats()
    number = 1
    pending: tuple[int, bytes] | None = None  # the block read last, yielded once the next one is known
    carry = b""  # the start of a line whose end has not been read yet (at most max_line bytes)
    skipping = False  # the current line already exceeded max_line: drop bytes until its end
    for raw in _universal_newlines(_raw_chunks(stream, stats, block)):
        if not raw:
            continue
        chunk = raw
        if skipping:
            cut = raw.find(b"\n")
            if cut == -1:
                continue
            chunk = raw[cut:]  # the newline ends the cut line (kept so numbering stays right)
            skipping = False
        data = carry + chunk
        end = data.rfind(b"\n")
        if end == -1:
            if len(data) > max_line:
                carry, skipping = data[:max_line], True
                stats.truncated_lines += 1
            else:
                carry = data
            continue
        whole, carry = data[:end], data[end + 1 :]
        if len(carry) > max_line:
            carry, skipping = carry[:max_line], True
            stats.truncated_lines += 1
        if len(whole) > max_line and _has_long_line(whole, max_line):
            lines = whole.split(b"\n")
            stats.truncated_lines += sum(1 for line in lines if len(line) > max_line)
            whole = b"\n".join(line[:max_line] for line in lines)
        if b"\x00" in whole:
            stats.binary_lines += whole.count(b"\n") + 1
        whole = clean_bytes(whole)
        if pending is not None:
            yield pending
        pending = (number, whole)
        number += whole.count(b"\n") + 1
    if carry or skipping:
        # A last line without a line end goes with the block before it (a hard wrap may end there).
        last = clean_bytes(carry)
        pending = (pending[0], pending[1] + b"\n" + last) if pending is not None else (number, last)
        number += 1
    if pending is not None:
        yield pending
    stats.lines = number - 1


def read_lines(stream: BinaryIO, stats: ReadStats | None = None, max_line: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """``(line number, cleaned text)`` for every line of ``stream``, numbered from 1."""
    for first, block in read_blocks(stream, stats, max_line):
        for offset, raw in enumerate(block.split(b"\n")):
            yield first + offset, decode_line(raw, max_line)


def read_text(text: str, max_line: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """The same, for text already in memory (tests, the Python API)."""
    return read_lines(io.BytesIO(text.encode("utf-8", "surrogatepass")), max_line=max_line)
