"""Taking off what a paste wraps around each line of a log, every line keeping its number.

People paste logs as their tools wrote them: each line behind a logging format's timestamp, level
and logger name, a serving engine's ``INFO 12-01 10:11:12 file.py:123]``, a container runtime's
timestamp, a launcher's ``[rank0]:`` or Slurm's ``0:``, quoted with ``> `` in a GitHub reply, cut
at the terminal's width. The message families (:mod:`bnbdoctor.logs.collectors`) match what torch,
bitsandbytes and transformers print, and some of it only at the start of a line (an exception
line, ``ValueError: ...``); framing would hide it, or leave a timestamp in every quoted line.

:func:`unframe` takes a block of whole lines (from :func:`bnbdoctor.logs.clean.read_blocks`: colour
codes are gone and every ``\\r`` already ended a line, so a progress bar redrawn with ``\\r`` is a
line per redraw) and gives back a block with **the same number of lines**:

1. **Hard-wrapped lines are joined** (:func:`dewrap`), conservatively: only where the block shows a
   wrap width (:data:`MIN_WRAPPED` distinct lines of the longest length, none longer, or a
   terminal's usual width), never after a line of one repeated character (a ``=====`` rule) and
   never onto a line that starts a record of its own (a traceback's ``  File "..."``, an exception
   line, a framed line). A Kubernetes line marked partial (``stdout P``) is joined with the next
   one. The joined line keeps the number of its first piece; the pieces after it are left empty.
2. **Each line's framing is removed** (:data:`FRAMINGS`, several stacked on one line too): only
   at the start of a line, only in the shapes listed, and up to the single space that ends it, so
   a traceback's indentation, a ``>>>`` prompt and a ``[rank0]`` that is not a prefix stay.

HTML entities are decoded per line by :func:`~bnbdoctor.logs.clean.clean_line` (a quote written
``&gt; `` is framing here too). Linear time: one substitution per block that a literal ``\\n``
anchors, and for the wrap width one pass over the line lengths.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import compress


@dataclass(frozen=True)
class Framing:
    """One shape of framing: its name, an example of it (tested), the expression that removes it, and
    for an expression that reads far into a line before it fails, the bytes of which a block must hold
    one for it to be tried there (none: always tried)."""

    name: str
    example: str
    regex: bytes
    hints: tuple[bytes, ...] = ()
    #: The bytes a line it frames can begin with (None: any). Where every framing tried on a block says, the
    #: search skips at once the lines that begin otherwise (most of a long log); a test checks each set
    #: against what the expression can match first.
    starts: bytes | None = None


_DATE = rb"\d{4}-\d{2}-\d{2}"
_TIME = rb"\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
_ISO = _DATE + rb"[T ]" + _TIME + rb"(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?"
_LEVELS = (b"DEBUG", b"INFO", b"NOTICE", b"WARNING", b"WARN", b"ERROR", b"CRITICAL", b"FATAL", b"TRACE")
_LEVEL = rb"(?:" + rb"|".join(_LEVELS) + rb")"
_LEVEL_STARTS = bytes(sorted({level[0] for level in _LEVELS}))
DIGITS, ASCII_LETTERS = b"0123456789", b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#: A logger's name as ``logging.getLogger(__name__)`` gives it: lower-case module parts (never an
#: exception's class, ``torch.OutOfMemoryError``).
_LOGGER = rb"(?:__main__|[a-z_][a-z0-9_]{0,40}(?:\.[a-z_][a-z0-9_]{0,40}){0,8})"
#: A source location: ``model_runner.py:123``, ``ProcessGroupNCCL.cpp:1250``.
_SOURCE = rb"[\w.\-/]{1,160}\.(?:py|cpp|cc|cu|cxx|h|hpp):\d{1,6}"
#: The levels of a record that says something failed.
_ERROR_LEVEL = rb"(?:ERROR|CRITICAL|FATAL)"


def _after_time(level: bytes, *, required: bool = False) -> bytes:
    """After a timestamp: the level and the logger's name, in the shapes logging formats give them (optional in a
    framing, since a timestamp alone frames a line too; ``required`` to find the records of one level)."""
    return (
        rb"(?:[\w.\-]{1,120} - " + level + rb" - "  # %(name)s - %(levelname)s -
        rb"|\[" + level + rb"\] ?(?:\[" + _SOURCE + rb"(?::\w{1,80})?\] ?)?"  # [INFO] [file.py:12:func] (DeepSpeed)
        rb"|\[[\w.\-]{1,120}\]\[" + level + rb"\] - "  # [name][INFO] - (Hydra)
        rb"|" + level + rb" {1,8}\| " + _LOGGER + rb":[\w<>]{1,80}:\d{1,6} - "  # INFO | name:func:12 - (loguru)
        # INFO - / INFO, but not a vLLM record's level behind a container's timestamp (ERROR 12-04 10:11:12 ...)
        rb"|"
        + level
        + rb"(?: - | {1,8}"
        + _LOGGER
        + rb": | {1,8}(?!\d{2}-\d{2} \d{2}:)))"
        + (b"" if required else b"?")
    )


def _timestamped(level: bytes, *, required: bool = False) -> bytes:
    return rb"\[?" + _ISO + rb"\]?(?: ?[-|] | |(?=\[))" + _after_time(level, required=required)


def _vllm(level: bytes) -> bytes:
    return level + rb" \d{2}-\d{2} " + _TIME + rb" (?:\[" + _SOURCE + rb"\]|" + _SOURCE + rb"\]) "


def _glog(letters: bytes) -> bytes:
    return rb"\[?[" + letters + rb"](?:\d{3,4} " + _TIME + rb"(?: {1,8}\d{1,9})?)? {1,8}" + _SOURCE + rb"\] ?"


def _basic_logging(level: bytes) -> bytes:
    return level + rb":" + _LOGGER + rb":"


FRAMINGS: tuple[Framing, ...] = (
    Framing(
        "kubernetes",  # the CRI log format kubectl and crictl show: F a full line, P a partial one
        "2024-05-01T10:11:12.123456789Z stdout F ",
        _ISO + rb" (?:stdout|stderr) [FP] ",
        starts=DIGITS,
    ),
    Framing(
        "timestamp",  # docker logs -t, GitHub Actions, journald exports, and any logging format's asctime
        "2024-05-01 10:11:12,345 - transformers.modeling_utils - WARNING - ",
        _timestamped(_LEVEL),
        starts=DIGITS + b"[",
    ),
    Framing(
        "syslog",  # journalctl and /var/log/syslog: the time, the host, the process and its pid
        "Oct 04 13:19:39 llm sd-webui-forge-start[394]: ",
        rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d "
        + _TIME
        + rb" [\w.\-]{1,64} [^\s\[:]{1,64}(?:\[\d{1,9}\])?: ",
        starts=b"ADFJMNOS",
    ),
    Framing(
        "vllm",  # vLLM's and SGLang's formatter, also behind a Ray worker's tag
        "INFO 12-01 10:11:12 model_runner.py:123] ",
        _vllm(_LEVEL),
        starts=_LEVEL_STARTS,
    ),
    Framing(
        "glog",  # glog / absl / torch's C++ warnings (c10): I0501 10:11:12.123456 1234 file.cc:12]
        "[W501 10:11:12.123456 1234 ProcessGroupNCCL.cpp:1250] ",
        _glog(b"IWEF"),
        starts=b"EFIW[",
    ),
    Framing(
        "basic-logging",  # logging.basicConfig()'s default %(levelname)s:%(name)s:
        "WARNING:bitsandbytes.cextension:",
        _basic_logging(_LEVEL),
        starts=_LEVEL_STARTS,
    ),
    Framing(
        "rank",  # torch's [rank0]: and torchrun --tee's [default0]:, mpirun --tag-output, SageMaker's MPI tag
        "[rank0]: ",
        rb"\[rank\d{1,5}\]: ?|(?:\[default\d{1,5}\]|\[\d{1,5},\d{1,5}\]<std(?:out|err)>"
        rb"|\[\d{1,5},mpirank:\d{1,5},[\w.\-]{1,60}\]<std(?:out|err)>):",
        starts=b"[",
    ),
    Framing(
        "process",  # a Ray or SkyPilot worker's tag: (RayWorkerWrapper pid=1234, ip=10.0.0.1)
        "(VllmWorkerProcess pid=1234) ",
        rb"\((?:[\w.\-]{1,60},? )?(?:(?:pid|rank|ip|node|tid)=[\w.:\-]{1,60},? ?){1,4}\) ",
        starts=b"(",
    ),
    Framing(
        "compose",  # docker compose's service column: name-1  |
        "vllm-1  | ",
        rb"[A-Za-z0-9][\w.\-]{0,62}[-_]\d{1,3} +\| ",
        (b" | ",),
        starts=DIGITS + ASCII_LETTERS,
    ),
    Framing(
        "columns",  # a job runner's columns before the message: step, pid, run or task uuid
        "step 12 | pid 4321 | 3f2a9c1e-7b4d-4e2a-9f1c-0a1b2c3d4e5f | ",
        rb"(?:(?:[Ss]tep|STEP)[ =:#]?\d{1,9}(?: *\| *|\t)|(?:pid|PID)[ =:]?\d{1,9}(?: *\| *|\t)"
        rb"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?: *\| *|\t| ))",
        starts=DIGITS + b"PSabcdefps",
    ),
    Framing(
        "job-step",  # gh run view --log: the job and the step, tab-separated, before the timestamp
        "build\tRun tests\t2024-05-01T10:11:12.1234567Z ",
        rb"[^\t\n]{1,120}\t[^\t\n]{1,120}\t(?=" + _ISO + rb" )",
        (b"\t",),
    ),
    Framing(
        "slurm",  # srun --label: the task number (right-aligned when there are ten tasks or more)
        "0: ",
        rb" {0,3}\d{1,5}: ",
        starts=DIGITS + b" ",
    ),
    Framing(
        "quote",  # a quoted reply on GitHub, also HTML-escaped, with or without its space (> >>> keeps the prompt)
        "> ",
        rb"(?:>|&gt;)(?: |$|(?=[A-Za-z_]))",
        starts=b">&",
    ),
)

#: At most this many framings are taken off one line (they stack: Kubernetes, logging, a rank).
MAX_STACKED = 8


@lru_cache(maxsize=256)
def _expression(chosen: tuple[int, ...]) -> re.Pattern[bytes]:
    """The framings ``chosen`` (indices in :data:`FRAMINGS`) at the start of a line, after the newline
    that starts it (a literal first byte keeps the search at C speed)."""
    alternatives = rb"|".join(FRAMINGS[i].regex for i in chosen)
    starts = [FRAMINGS[i].starts for i in chosen]
    first = b""
    if chosen and all(s is not None for s in starts):
        first = rb"(?=[" + re.escape(bytes(sorted(set(b"".join(s for s in starts if s))))) + rb"])"
    return re.compile(rb"\n" + first + rb"(?:" + alternatives + rb"){1,%d}" % MAX_STACKED, re.MULTILINE)


def _framed(block: bytes, distinct: bytes | None = None) -> re.Pattern[bytes]:
    """The expression of the framings a block may hold (those whose hints it holds, and the hintless);
    with ``distinct`` (:func:`~bnbdoctor.logs.candidates.distinct_lines` of the block), only those that
    start one of its lines, alone or behind others: the expression then rejects most lines at their
    first byte (the framings' ``starts``), and takes off exactly what the full one would (at each step
    of a line it takes the first framing, in order, that matches there; one that matches at no step of
    any line never changes a choice). Every framing is blind to a digit's value (each ``\\d``, and each
    class holding a digit, holds all ten), so what it matches in a line it matches in the line with
    its digits made ``0``."""
    hinted = tuple(i for i, f in enumerate(FRAMINGS) if not f.hints or any(h in block for h in f.hints))
    if distinct is not None:
        hinted = tuple(i for i in hinted if _reachable(i).search(distinct))
    return _expression(hinted)


@cache
def _reachable(index: int) -> re.Pattern[bytes]:
    """Framing ``index`` at the start of a line, or behind other framings there."""
    every = rb"|".join(f.regex for f in FRAMINGS)
    return re.compile(rb"\n(?:" + every + rb"){0,%d}?(?:" % (MAX_STACKED - 1) + FRAMINGS[index].regex + rb")")


#: Every framing at the start of a line (what a line that starts a record of its own may begin with).
_FRAMED = _expression(tuple(range(len(FRAMINGS))))
#: A Kubernetes line the runtime split (``P``): its content goes on in the next line.
_PARTIAL = re.compile(rb"^" + _ISO + rb" (?:stdout|stderr) P ")
_CRI = re.compile(rb"^" + _ISO + rb" (?:stdout|stderr) [FP] ")

#: The narrowest wrap width believed (a terminal is rarely narrower), and the widest.
MIN_WIDTH, MAX_WIDTH = 40, 1000
#: Distinct lines of the block's longest length that show it was wrapped there.
MIN_WRAPPED = 3
#: Lines of the longest length looked at to find distinct ones (a repeated line is one).
_LOOKED_AT = 64
#: Widths terminals and consoles often wrap at: two such lines are enough; at a terminal's default
#: width of 80 columns one is (a log whose longest line is exactly 80 characters is rare).
USUAL_WIDTHS = frozenset({80, 100, 120, 132, 160, 200})
DEFAULT_WIDTH = 80
#: Characters two lines start with alike when they are two messages of one kind, not two pieces of one.
_ALIKE = 8
#: What starts a line of its own, never the rest of a wrapped one.
_RECORD_START = re.compile(
    rb"(?:Traceback \(most recent call last\)|  File \"|During handling of the above|The above exception"
    rb"|\$ |\(\S{1,60}\) \S{1,60}@|[\w.\-]{1,60}@[\w.\-]{1,60}:\S{0,200}[$#] "
    rb"|(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception|Warning|Interrupt|Exit)(?::|$)"
    rb"|\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:|\[(?:rank|default)\d|" + _LEVEL + rb" \d{2}-\d{2} |[IWEF]\d{3,4} \d\d:"
    rb"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:"
    rb"| {0,3}\d{1,5}: \s)"  # srun --label's task number before an indented line: never the rest of a wrapped one
)


def _width(line: bytes) -> int:
    """Characters of a line (a terminal wraps by columns; UTF-8 continuation bytes take none)."""
    if line.isascii():
        return len(line)
    return len(line.decode("utf-8", "replace"))


def _rule(line: bytes) -> bool:
    """A line of one or two repeated characters (``=====``, ``-----``, a full progress bar), or a banner
    between two runs of one (``=====BUG REPORT=====``): a line of its own, never wrapped."""
    head = line[:3]
    if len(set(head)) == 1 and not head.isalnum() and line.endswith(head):
        return True
    if line.isascii():
        return not line.strip(line[:1] + line[-1:])  # nothing but its first and last character
    text = line.decode("utf-8", "replace")
    return not text.strip(text[:1] + text[-1:])


def wrap_width(lines: list[bytes], *, plain: bool | None = None) -> int | None:
    """The width the block's lines were hard-wrapped at, when they show one; else None."""
    if len(lines) < 2:
        return None
    lengths = list(map(len, lines))
    if max(lengths) < MIN_WIDTH:
        return None
    widths: dict[int, int] = {}
    if plain if plain is not None else all(map(bytes.isascii, lines)):
        width = max(lengths)
    else:
        # A UTF-8 line is measured in characters (its bytes overstate its width): only those whose
        # bytes reach the widest ASCII line can be the widest.
        ascii_lines = list(map(bytes.isascii, lines))
        width = max(compress(lengths, ascii_lines), default=0)
        floor = max(width, MIN_WIDTH)
        # The UTF-8 lines of at least that many bytes, picked at C speed (long > ascii: long and not ASCII).
        long_utf8 = map(operator.gt, map(floor.__le__, lengths), ascii_lines)
        widths = {i: _width(lines[i]) for i in compress(range(len(lines)), long_utf8)}
        width = max(width, *widths.values()) if widths else width
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return None
    at_width = {lines[i] for i, n in widths.items() if n == width}
    start = 0
    for _ in range(_LOOKED_AT):  # the ASCII lines of that length, found at C speed, a few of them
        try:
            start = lengths.index(width, start) + 1
        except ValueError:
            break
        if plain or lines[start - 1].isascii():
            at_width.add(lines[start - 1])
    at_width = {x for x in at_width if not _rule(x)}
    if at_width and len(at_width) >= (1 if width == DEFAULT_WIDTH else 2 if width in USUAL_WIDTHS else MIN_WRAPPED):
        return width
    return None


def _starts_record(line: bytes, before: bytes) -> bool:
    """Whether ``line`` starts a line of its own rather than going on with ``before``: a line that
    starts as ``before`` does is the next of a run of alike messages (of one length: a counter, a
    path), and so is the message under a warning's header (``torch/cuda/__init__.py:230:
    UserWarning:``, then the message unindented); a cut inside a run of blanks goes on; an indented
    line (a traceback's source line) or a record's first words start anew."""
    if line[:_ALIKE] == before[:_ALIKE]:
        return True
    if before.endswith((b"Warning:", b"Error:")) and not line[:1].isspace():
        return True
    if before.endswith((b" ", b"\t")):
        return False
    if line[:2].isspace() or _RECORD_START.match(line):
        return True
    # A framing whose rest starts a record (srun's "0: " before "[rank0]: Traceback"); a framing alone does not: a
    # wrapped sentence may go on with "12: " too.
    if line[:1].isdigit() and before.endswith(b":"):
        return False  # "file.py:" wrapped before its line number ("85: UserWarning: ..."), not srun's task number
    framed = _FRAMED.match(b"\n" + line)
    if framed is None or framed.end() <= 1:
        return False
    rest = line[framed.end() - 1 :]
    return rest[:2].isspace() or bool(_RECORD_START.match(rest))


def dewrap(lines: list[bytes], *, plain: bool | None = None, partial: bool | None = None) -> list[int]:
    """Join hard-wrapped lines in place (the first piece gets the whole line, the others are left
    empty), and Kubernetes' partial lines; the indices of the lines left empty."""
    width = wrap_width(lines, plain=plain)
    if partial is None:
        partial = any(b" P " in x[:48] and _PARTIAL.match(x) for x in lines)
    if width is None and not partial:
        return []
    emptied: list[int] = []
    index, count = 0, len(lines)
    while index < count - 1:
        last = index
        if partial and _PARTIAL.match(lines[index]):
            while last + 1 < count and _PARTIAL.match(lines[last]) and _CRI.match(lines[last + 1]):
                last += 1
            pieces = [lines[index]] + [_CRI.sub(b"", lines[k], count=1) for k in range(index + 1, last + 1)]
        else:
            while (
                width is not None
                and last + 1 < count
                and _width(lines[last]) == width
                and lines[last + 1]
                and not _starts_record(lines[last + 1], lines[last])
                and not _rule(lines[last])
            ):
                last += 1
            pieces = lines[index : last + 1]
        if last > index:
            lines[index] = b"".join(pieces)
            for k in range(index + 1, last + 1):
                lines[k] = b""
                emptied.append(k)
        index = last + 1
    return emptied


#: A line whose framing gives the record an error level (``2024-05-01 10:11:12 - app - ERROR - ``, vLLM's ``ERROR
#: 12-01 …]``, ``CRITICAL:root:``), behind any other framings (a rank, a container's time). Not glog's ``E`` lines:
#: TensorFlow and XLA log harmless start-up notices at that level (``Unable to register cuDNN factory``), pasted in
#: countless Colab logs; torch's real ones say how a process ended, which is an error line of its own.
_ERROR_LEVELLED = re.compile(
    rb"\n(?:"
    + rb"|".join(f.regex for f in FRAMINGS)
    + rb"){0,%d}?(?:" % (MAX_STACKED - 1)
    + rb"|".join((_timestamped(_ERROR_LEVEL, required=True), _vllm(_ERROR_LEVEL), _basic_logging(_ERROR_LEVEL)))
    + rb")"
)


def error_levelled(block: bytes, distinct: bytes | None = None) -> list[int]:
    """The indices of the lines of ``block`` (counted from 0) whose framing says the record is an error: the
    framing :func:`unframe` takes off carries the level, and a failure an application logs (``… - ERROR - Model
    loading failed``) often names no exception. A block without the words is passed over at C speed, and so
    is one whose ``distinct`` lines (:func:`~bnbdoctor.logs.candidates.distinct_lines`, where the caller has
    them: a much smaller text) hold none."""
    text = block if distinct is None else distinct
    if not (b"ERROR" in text or b"CRITICAL" in text or b"FATAL" in text):
        return []
    framed = b"\n" + block
    found: list[int] = []
    line, counted = 0, 0
    for m in _ERROR_LEVELLED.finditer(framed):
        line += framed.count(b"\n", counted, m.start() + 1)
        counted = m.start() + 1
        found.append(line - 1)
    return found


def unframe(block: bytes, distinct: bytes | None = None) -> tuple[bytes, list[int]]:
    """``block`` (whole lines joined by ``\\n``) with hard wraps joined and each line's framing taken
    off, as many lines as it had; and the indices of the lines a join left empty (counted from the
    block's first line, 0). ``distinct``, :func:`~bnbdoctor.logs.candidates.distinct_lines` of the
    block where the caller has it, narrows the framings tried to those its lines hold (a repetitive
    log is searched for one or two framings instead of all of them)."""
    emptied: list[int] = []
    if b"\n" in block:
        lines = block.split(b"\n")
        partial = b" stdout P " in block or b" stderr P " in block
        emptied = dewrap(lines, plain=block.isascii(), partial=partial)
        if emptied:
            block = b"\n".join(lines)
    if not block:
        return block, emptied
    framed = b"\n" + block
    if emptied:
        distinct = None  # a joined line is not one of the distinct lines
    return _framed(framed, distinct).sub(b"\n", framed)[1:], emptied
