"""What the collectors have read so far: one :class:`LogState` per log, passed to every handler.

The state holds the evidence of each fact section (a plain record per section), the recognised
lines (:meth:`LogState.match`, capped per signature), and the context that spans lines: where
the last bitsandbytes load message was, where the ``PyTorch:`` block of ``python -m
bitsandbytes`` began. The few helpers here are the ones several collectors share; a helper only
one collector needs lives in that collector. :mod:`bnbdoctor.logs.build` turns the state into
:class:`~bnbdoctor.facts.Facts`.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TypeVar

from bnbdoctor.facts import AbiNeed, LogMatch
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.logs.tokens import dirname

#: Lines kept per signature in facts.log.matches (the count of all of them is in the report source).
MAX_MATCHES_PER_SIGNATURE = 20
#: Characters of a matched line kept in a LogMatch (and of the other lines the state keeps).
MAX_TEXT = 300
#: The bitsandbytes release families, oldest first (the newest one seen wins).
ERAS = ("legacy", "fallback", "exact", "nearest")
#: A line number before any line: "not seen yet" for :class:`Recent`.
NEVER = -100
#: Exception lines kept per log (the first ones, and always the last one).
MAX_ERROR_LINES = 20
#: Lines left empty by joining a hard-wrapped line that are remembered (the latest ones): the
#: distances between nearby lines (:meth:`LogState.since`) skip them.
MAX_JOINED = 4096
#: Entries kept in any other list or table of evidence (libraries, load errors, symbol versions): a real
#: log names a handful; a pathological one must not make every lookup in them cost its whole length.
MAX_KEPT = 32

_T = TypeVar("_T")
_K = TypeVar("_K")


def keep(items: list[_T], item: _T, cap: int = MAX_KEPT) -> None:
    """Append ``item``; once ``cap`` entries are kept, it replaces the last one (the first ones and the
    latest one survive, which is what the facts read)."""
    if len(items) < cap:
        items.append(item)
    else:
        items[-1] = item


def keep_new(items: list[_T], item: _T, cap: int = MAX_KEPT) -> None:
    """:func:`keep` for a list without repeats."""
    if item not in items:
        keep(items, item, cap)


def put(table: dict[_K, _T], key: _K, value: _T, cap: int = MAX_KEPT) -> _T:
    """``table.setdefault(key, value)`` while the table has room; past ``cap`` keys a new key is not kept."""
    if key in table or len(table) < cap:
        return table.setdefault(key, value)
    return value


@dataclass
class PlatformEvidence:
    """The operating system: explicit ``Platform:`` lines, and votes from paths and loader wording."""

    os_votes: dict[str, int] = field(default_factory=lambda: {"windows": 0, "linux": 0, "macos": 0})
    os_explicit: str | None = None
    arch: str | None = None
    kernel: str = ""
    os_version: str | None = None
    libc_version: str | None = None
    glibc_seen: bool = False
    wsl: bool = False
    jetson: str | None = None
    notebook: bool = False


@dataclass
class GpuEvidence:
    """GPUs by name (``"index:name"`` or the name -> index, compute capability, line), the driver."""

    named: dict[str, tuple[int | None, tuple[int, int] | None, int]] = field(default_factory=dict)
    highest_cc: tuple[tuple[int, int], int] | None = None  # bitsandbytes' "highest compute capability", line
    driver_version: str | None = None
    driver_cuda: str | None = None
    no_driver: str | None = None  # torch's "Found no NVIDIA driver" line


@dataclass
class PythonEvidence:
    """The interpreter, its site-packages folders, and the package versions the log prints."""

    version: str | None = None
    version_strong: bool = False  # a full x.y.z version (not one read from a folder name)
    site_packages: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    bnb_minimum: str | None = None  # the minimum bitsandbytes transformers' ImportError names

    def add_site_packages(self, path: str) -> None:
        """The site-packages folder a path lies in, if any (at most five are kept)."""
        match = re.search(r"^(.{0,500}?[\\/](?:site|dist)-packages)(?=[\\/])", path)
        if match and len(self.site_packages) < 5 and match.group(1) not in self.site_packages:
            self.site_packages.append(match.group(1))


@dataclass
class TorchEvidence:
    cuda: str | None = None
    hip: str | None = None  # "" when a HIP kernel file shows a ROCm build without its version
    cpu: bool = False
    location: str | None = None
    missing: bool = False  # "No module named 'torch'"
    arch_list: tuple[list[int], list[int]] | None = None  # (SASS, PTX) torch's incompatible-GPU warning lists
    arch_block: int = -(10**9)  # the line of that warning's first line


@dataclass
class BnbEvidence:
    """bitsandbytes: where it is, which release family its messages belong to, the libraries it chose."""

    seen: bool = False
    missing: bool = False  # "No module named 'bitsandbytes'"
    banner_version: str | None = None
    location: str | None = None
    legacy: bool = False  # the legacy CUDA setup (<= 0.43.0)
    era: str | None = None  # one of ERAS: the message families seen
    existing: list[str] = field(default_factory=list)  # libraries the log proves exist
    absent: list[str] = field(default_factory=list)  # libraries the log proves missing
    selected: list[tuple[str, int]] = field(default_factory=list)  # (path, line) of libraries bnb chose
    detected_cuda: str | None = None
    override_rejected: str | None = None  # the line rejecting BNB_CUDA_VERSION / BNB_ROCM_VERSION

    def set_era(self, era: str) -> None:
        if self.era is None or ERAS.index(era) > ERAS.index(self.era):
            self.era = era
        self.seen = True

    def library_exists(self, name: str) -> None:
        keep_new(self.existing, name)

    def library_absent(self, name: str) -> None:
        keep_new(self.absent, name)


@dataclass
class LoadEvidence:
    """What the loader said about bitsandbytes' library: missing libraries, missing symbol versions."""

    missing_deps: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (kind, message)
    abi: dict[str, AbiNeed] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    undefined_symbol: str | None = None  # a symbol the bnb library itself lacks (a device stub)
    present: dict[str, str] = field(default_factory=dict)  # SONAME -> a path the log shows for it (oneAPI runtime)


@dataclass
class Recent:
    """Line numbers of messages that give meaning to the lines right after them."""

    bnb_message: int = NEVER  # a bitsandbytes load message: a missing library below is bitsandbytes'
    pytorch_block: int = NEVER  # the "PyTorch:" line of python -m bitsandbytes: "CUDA: 12.6" is torch's
    unexpected_kwarg: int = NEVER  # "unexpected keyword argument" with the name on the next line
    dispatch: int = NEVER  # transformers' dispatch ValueError
    compile_instructions: int = NEVER  # the legacy loader's "Something unexpected happened. Please compile from source"
    bnb_main: int = NEVER  # a traceback frame in bitsandbytes/__main__.py: a fresh `python -m bitsandbytes` process


class LogState:
    """The evidence of one log, the lines recognised in it, and the context between lines."""

    def __init__(self, label: str = "log") -> None:
        self.label = label
        self.lines = 0
        self.exception: str | None = None
        self.matches: list[LogMatch] = []
        self.counts: dict[str, int] = {}
        self.platform = PlatformEvidence()
        self.gpu = GpuEvidence()
        self.python = PythonEvidence()
        self.torch = TorchEvidence()
        self.bnb = BnbEvidence()
        self.load = LoadEvidence()
        self.env: dict[str, str] = {}
        self.recent = Recent()
        self.errors: list[tuple[int, str]] = []  # (line, text) of exception and exit lines, named or not
        self.traceback: tuple[int, str] | None = None  # the last "Traceback (most recent call last):" line
        self.endings: set[int] = set()  # the error lines that say how the process ended (Killed, exit code 1)
        self.content = False  # the log holds something besides whitespace
        self.repeated_lines = 0  # copies of a much-repeated line that were not matched (logs.repeats)
        self.lines_not_matched = 0  # lines holding an anchor past a block's budget (logs.extract)
        self.joined: list[int] = []  # the latest lines a joined hard wrap left empty (logs.framing), in order

    # ------------------------------------------------------------------ distances between lines
    def joined_lines(self, numbers: list[int]) -> None:
        """Lines the framing step left empty after joining a wrapped line onto the line before them."""
        self.joined.extend(numbers)
        if len(self.joined) > MAX_JOINED:
            del self.joined[: len(self.joined) - MAX_JOINED]

    def since(self, line: int, number: int) -> int:
        """Lines from ``line`` to ``number``, the empty pieces of a joined wrapped line not counted: the
        line after a wrapped message is the next line, as in the log before it was wrapped."""
        gap = number - line
        if gap > 0 and self.joined:
            gap -= bisect_left(self.joined, number) - bisect_right(self.joined, line)
        return gap

    # ------------------------------------------------------------------ recognised lines
    def match(self, signature: SignatureId, number: int, line: str, *, up_to: int | None = None) -> None:
        """Record that ``line`` belongs to ``signature`` (a constant of :mod:`bnbdoctor.knowledge.signatures`).

        ``up_to``: a context family that only needs its first few lines stops counting after them."""
        count = self.counts.get(signature, 0)
        if up_to is not None and count >= up_to:
            return
        self.counts[signature] = count + 1
        if count < MAX_MATCHES_PER_SIGNATURE:
            text = line.strip()
            self.matches.append(LogMatch(signature, number, text[:MAX_TEXT] + ("…" if len(text) > MAX_TEXT else "")))

    def error_line(self, number: int, text: str, *, ending: bool = False) -> None:
        """An exception line (``KeyError: 'lm_head'``) or, ``ending``, one that says how the process died
        (``Killed``, ``exit code 137``): the first ones are kept, and the last one; a line once."""
        if self.errors and self.errors[-1][0] == number:
            if ending:
                self.endings.add(number)  # an exception that says how the process ended (CalledProcessError)
            return
        entry = (number, text[:MAX_TEXT])
        if len(self.errors) < MAX_ERROR_LINES:
            self.errors.append(entry)
        else:
            self.endings.discard(self.errors[-1][0])
            self.errors[-1] = entry
        if ending:
            self.endings.add(number)

    def seen(self, *signatures: SignatureId) -> bool:
        return any(s in self.counts for s in signatures)

    def count(self, signature: SignatureId) -> int:
        return self.counts.get(signature, 0)

    # ------------------------------------------------------------------ shared by several collectors
    def bnb_path(self, path: str) -> None:
        """A path inside the bitsandbytes package: where it is installed."""
        self.bnb.seen = True
        folder = dirname(path)
        if folder and re.search(r"bitsandbytes$", folder):
            self.bnb.location = folder
        self.python.add_site_packages(path)

    def gpu_cc(self, cc: tuple[int, int], number: int, line: str, *, highest: bool) -> None:
        """A compute capability the log shows (``highest``: bitsandbytes' highest among the GPUs)."""
        if highest:
            self.gpu.highest_cc = (cc, number)
        if cc < (6, 0):
            self.match(S.GPU_BELOW_MINIMUM_CC, number, line)
