"""Small readers of the tokens log messages carry: file names, folders, CUDA version tags.

Shared by the collectors and by the step that builds :class:`~bnbdoctor.facts.Facts`, so that a
path or a ``cuda121`` tag is read the same way wherever it appears.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: A bitsandbytes native library name: its backend and the CUDA/ROCm digits in it.
BNB_LIB = re.compile(r"libbitsandbytes_(?P<backend>cuda|rocm|hip|xpu|cpu|mps)(?P<digits>\d*)\w*\.(?:so|dll|dylib)")
#: A machine architecture as uname, Python's platform module or a wheel tag prints it.
ARCH = re.compile(r"\b(x86_64|aarch64|arm64|AMD64|amd64|sbsa)\b")


def basename(path: str) -> str:
    """The last part of a Linux or Windows path."""
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1]


def dirname(path: str) -> str:
    """A Linux or Windows path without its last part ("" for a bare name)."""
    parts = re.split(r"([\\/])", path)
    return "".join(parts[:-2]) if len(parts) > 2 else ""


def cuda_from_digits(digits: str) -> str | None:
    """bitsandbytes' version tags: "117" -> "11.7", "121" -> "12.1", "102" -> "10.2", "92" -> "9.2"."""
    if not digits.isdigit() or len(digits) < 2:
        return None
    if len(digits) == 2:
        return f"{digits[0]}.{digits[1]}"
    return f"{digits[:2]}.{digits[2:]}" if digits[0] == "1" else f"{digits[0]}.{digits[1:]}"


def cuda_from_torch_version(version: str) -> tuple[str | None, str | None, bool]:
    """torch's local version: ``2.1.0+cu121`` -> ("12.1", None, False); ``+rocm6.0`` -> (None, "6.0", False);
    ``+cpu`` -> (None, None, True)."""
    local = version.partition("+")[2].lower()
    match = re.match(r"cu(\d{2,3})", local)
    if match:
        return cuda_from_digits(match.group(1)), None, False
    match = re.match(r"rocm(\d+(?:\.\d+)*)", local)
    if match:
        return None, match.group(1), False
    return None, None, local == "cpu"


def token_before(line: str, end: int) -> str:
    """The whitespace-separated token just before ``end``, without quotes or a trailing colon."""
    head = line[:end].rstrip().rstrip(":").rstrip()
    token = head.split()[-1] if head.split() else ""
    return token.strip("'\"`‘’()*[],")


def heads_before(line: str, suffix: str, stops: str, limit: int = 500) -> Iterator[str]:
    """For each occurrence of ``suffix`` in ``line``, left to right: the text just before it, at most
    ``limit + 1`` characters and cut after the last of ``stops``.

    The linear form of ``(X[^stops]{0,limit}?)suffix`` with a leftmost start ``X``: the caller finds ``X``
    in the head. An expression of that shape scans up to ``limit`` characters from every candidate start,
    which costs ``limit`` times the line on a line of slashes; this scans each character a bounded number
    of times."""
    pos = line.find(suffix)
    while pos != -1:
        head = line[max(0, pos - limit - 1) : pos]
        cut = max(head.rfind(stop) for stop in stops) if stops else -1
        yield head[cut + 1 :]
        pos = line.find(suffix, pos + 1)
