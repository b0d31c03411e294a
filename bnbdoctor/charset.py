"""Reports that any output encoding can carry: ASCII stand-ins for the symbols a report uses.

Every renderer writes Unicode (✖ ▲ ℹ ✔ in text, emoji and dashes in Markdown). A stream whose encoding cannot
hold a character — a Windows redirect in cp1252, ``PYTHONIOENCODING=latin-1`` or ``ascii`` — must still get the
whole report, never a ``UnicodeEncodeError``. :func:`fit_to_encoding` makes a rendered document fit an encoding:

- text and Markdown: each character the encoding lacks becomes its ASCII stand-in from :data:`ASCII_FALLBACK`
  (one character for the text report's symbols, so rich's columns stay aligned; GitHub's shortcodes for the
  Markdown emoji), and any other such character ``?``;
- JSON: each such character becomes a ``\\uXXXX`` escape (a surrogate pair above U+FFFF), so the document is
  still valid JSON holding exactly the same data.

Characters the encoding has are kept (cp1252 keeps "—" and "·"), and a UTF encoding changes nothing.
:func:`stream_encoding` is the encoding of the stream a report goes to.

:func:`bnbdoctor.contract.write_output` applies it to whatever a command writes on stdout (every renderer's
document, the fleet's, merge-check's), so it sits below the contract and the renderers, and imports nothing.
"""

from __future__ import annotations

import codecs
from typing import TextIO

__all__ = ["ASCII_FALLBACK", "decode_document", "fit_to_encoding", "sniff_encoding", "stream_encoding"]

#: The non-ASCII characters bnbdoctor's own output uses, and what stands in for each where the encoding lacks it.
ASCII_FALLBACK: dict[str, str] = {
    "✖": "x",  # error
    "▲": "!",  # warning
    "ℹ": "i",  # info
    "✔": "+",  # verified, no problems
    "·": "-",
    "—": "-",
    "–": "-",  # GPU index ranges: "GPUs 0–3"
    "\u00d7": "x",  # the multiplication sign of "8\u00d7 NVIDIA A100-SXM4-80GB"
    "…": "...",
    "→": "->",
    "≥": ">=",
    "≤": "<=",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "🔴": ":red_circle:",
    "🟡": ":yellow_circle:",
    "🔵": ":large_blue_circle:",
}


def stream_encoding(stream: TextIO) -> str:
    """The encoding ``stream`` writes in; UTF-8 when it does not say (a replaced ``sys.stdout``, a test's buffer)."""
    return getattr(stream, "encoding", None) or "utf-8"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _encodable(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def fit_to_encoding(text: str, encoding: str, *, json: bool = False) -> str:
    """``text`` with every character ``encoding`` cannot hold replaced (see the module docstring).

    ``json``: the text is a JSON document, whose non-ASCII characters can only be inside strings: they are
    escaped, not replaced. An encoding Python does not know is treated as ASCII.
    """
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        name = "ascii"
    if name.startswith("utf"):
        return text
    try:
        text.encode(name)
    except UnicodeEncodeError:
        pass
    else:
        return text
    table: dict[int, str] = {}
    for char in set(text):
        if ord(char) < 128 or _encodable(char, name):
            continue
        table[ord(char)] = _json_escape(char) if json else _ascii_for(char, name)
    return text.translate(table)


def _ascii_for(char: str, encoding: str) -> str:
    stand_in = ASCII_FALLBACK.get(char, "?")
    return stand_in if _encodable(stand_in, encoding) else "?"


def sniff_encoding(head: bytes) -> str:
    """The encoding a saved document starts in: ``utf-16`` for a UTF-16 byte order mark (PowerShell 5's ``>``
    and ``Out-File`` write UTF-16 LE with one), ``utf-16-le``/``utf-16-be`` for JSON written as UTF-16 without
    one (a NUL beside its first ``{``), ``utf-8-sig`` for UTF-8 with a byte order mark, else ``utf-8``."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if len(head) >= 2 and head[1] == 0 and head[0] != 0:
        return "utf-16-le"
    if len(head) >= 2 and head[0] == 0 and head[1] != 0:
        return "utf-16-be"
    return "utf-8"


def decode_document(data: bytes) -> str:
    """A saved document's bytes as text, in the encoding :func:`sniff_encoding` finds (its byte order mark
    dropped); what does not decode becomes U+FFFD."""
    return data.decode(sniff_encoding(data[:64]), errors="replace")
