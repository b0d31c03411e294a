"""Shell command lines as the remedy layer reads them: which parts run pip, with what requirements.

Rules' commands are one line each, sometimes chained (``a && b``, ``a | b``). A segment that runs
pip (``pip``, ``pip3``, ``python -m pip``) is parsed into its options and requirements so that the
requirements can be narrowed and the interpreter replaced; every other segment is kept verbatim.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # packaging.requirements costs ~15 ms to import: only commands that name pip need it
    from packaging.requirements import Requirement

#: pip install options that take a value (the value is never a requirement).
_VALUED = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-c",
        "--constraint",
        "-r",
        "--requirement",
        "-t",
        "--target",
        "-f",
        "--find-links",
        "--prefix",
        "--root",
        "--platform",
        "--python-version",
        "--only-binary",
        "--no-binary",
        "--implementation",
        "--abi",
        "--src",
        "-e",
        "--editable",
        "--python",
    }
)
_SEPARATORS = re.compile(r"(\s+(?:&&|\|\||;|\|)\s+)")
_PYTHON = re.compile(r"(?:^|[\\/])(?:python(?:\d+(?:\.\d+)?)?|py)(?:\.exe)?$", re.IGNORECASE)
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./~-]+$")


@dataclass
class PipCall:
    """``<interpreter> -m pip <subcommand> ...`` (or a bare ``pip``): tokens after the subcommand."""

    subcommand: str
    tokens: list[str]
    raw: str = ""  # the segment as it was written
    requirements: dict[int, Requirement] = field(default_factory=dict)  # token index -> parsed

    def packages(self) -> dict[str, Requirement]:
        return {req.name.lower().replace("_", "-"): req for req in self.requirements.values()}


Segment = str | PipCall


def _pip_call(tokens: list[str]) -> PipCall | None:
    if not tokens:
        return None
    if tokens[0] in ("pip", "pip3"):
        rest = tokens[1:]
    elif tokens[:2] == ["uv", "pip"]:
        rest = tokens[2:]
    elif len(tokens) >= 3 and _PYTHON.search(tokens[0].lstrip("&").strip()) and tokens[1:3] == ["-m", "pip"]:
        rest = tokens[3:]
    elif len(tokens) >= 4 and tokens[0] == "&" and tokens[2:4] == ["-m", "pip"]:
        rest = tokens[4:]
    else:
        return None
    if not rest:
        return None
    call = PipCall(rest[0], rest[1:])
    if call.subcommand != "install":
        return call
    from packaging.requirements import InvalidRequirement, Requirement

    skip = False
    for index, token in enumerate(call.tokens):
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in _VALUED
            continue
        if "/" in token or "\\" in token or token == ".":  # noqa: S105 - a path, not a password
            continue  # a path or a URL: a local install, not a requirement
        try:
            call.requirements[index] = Requirement(token)
        except InvalidRequirement:
            continue
    return call


def _tokens(part: str) -> list[str]:
    """The words of one segment. A Windows path (``C:\\Users\\...\\python.exe``) keeps its backslashes:
    POSIX quoting would read them as escapes and lose the interpreter (and so the pip call)."""
    try:
        if "\\" not in part:
            return shlex.split(part, posix=True)
        words = shlex.split(part, posix=False)
    except ValueError:
        return []
    return [w[1:-1] if len(w) >= 2 and w[0] == w[-1] and w[0] in "\"'" else w for w in words]


def parse(command: str) -> list[Segment]:
    """The command's segments: pip calls parsed, everything else (separators too) as text."""
    segments: list[Segment] = []
    for part in _SEPARATORS.split(command):
        if _SEPARATORS.fullmatch(part):
            segments.append(part)
            continue
        call = _pip_call(_tokens(part))
        if call is not None:
            call.raw = part
        segments.append(call if call is not None else part)
    return segments


def quote(token: str) -> str:
    return token if _SAFE.match(token) else '"' + token.replace('"', '\\"') + '"'


def requirement_text(req: Requirement) -> str:
    """A requirement as people write it: lower bound first (``bitsandbytes>=0.43.0,<0.46``)."""
    order = {">=": 0, ">": 0, "==": 1, "~=": 1, "!=": 2, "<=": 3, "<": 3}
    specs = sorted(req.specifier, key=lambda s: (order.get(s.operator, 1), s.version))
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}{','.join(str(s) for s in specs)}{marker}"


def _requirement_token(req: Requirement) -> str:
    text = requirement_text(req)
    return f'"{text}"' if not re.fullmatch(r"[A-Za-z0-9_.-]+", text) else text


def render(segments: list[Segment], pip: str, options: list[str] | None = None) -> str:
    """The command line again, each pip call run as ``pip`` (e.g. ``~/venv/bin/python -m pip``); ``options``
    go right after the subcommand unless the call has them (uv's ``--python <interpreter>``)."""
    parts: list[str] = []
    for segment in segments:
        if isinstance(segment, str):
            parts.append(segment)
            continue
        tokens = [
            _requirement_token(segment.requirements[i]) if i in segment.requirements else quote(word)
            for i, word in enumerate(segment.tokens)
        ]
        extra = [t for t in options or [] if t.startswith("-") and t not in segment.tokens]
        added = options if extra and options else []
        parts.append(" ".join([pip, segment.subcommand, *added, *tokens]))
    return "".join(parts)


_TORCH_INDEX = re.compile(r"download\.pytorch\.org/whl/(cu\d{2,3}|cpu|rocm[\d.]+|xpu)\b")


def torch_index(call: PipCall) -> str | None:
    """The PyTorch wheel index a pip call names, by its label ("cu121", "cpu", "rocm6.2", "xpu"); None for none."""
    return next((m.group(1) for t in call.tokens if (m := _TORCH_INDEX.search(t))), None)


def index_cuda(label: str | None) -> str | None:
    """The CUDA version of a PyTorch index label ("cu121" -> "12.1"); None for a CPU, ROCm or XPU index."""
    if not label or not label.startswith("cu"):
        return None
    digits = label[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def pip_calls(command: str) -> list[PipCall]:
    return [s for s in parse(command) if isinstance(s, PipCall)]


def programs(command: str) -> list[str]:
    """The program each segment runs (``nvidia-smi``, ``conda``, ``export``...), pip calls as ``pip``."""
    found: list[str] = []
    for segment in parse(command):
        if isinstance(segment, PipCall):
            found.append("pip")
        elif not _SEPARATORS.fullmatch(segment):
            words = [w for w in segment.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
            if words:
                found.append(words[0])
    return found
