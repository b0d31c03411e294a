"""A mutation campaign against bnbdoctor's parsers: N mutated inputs from real seeds per parser, and
what broke.

For each parser in :data:`REGISTRY` it loads the seed files, then runs ``--inputs`` mutated copies
(byte flips, integers overwritten with absurd values -- 0, -1, the file size, 2**31 ... -- in the
parser's "hot" regions such as headers and tables, truncations, duplicated and spliced chunks) through
the parse function, and prints the inputs run, the distinct failures, the worst time for one input
and the peak memory. A failure is

- ``crash``: an exception escaped the parse function (every parser promises never to raise);
- ``hang``: one input ran past ``--hang-s`` of CPU time (stopped there by SIGPROF);
- ``slow``: one input took longer than ``--slow-s`` (the bar is 0.5 s);
- ``mem``: one input made the parser allocate more than ``--mem-mib`` (tracemalloc peak).

Times are CPU seconds of this process (``time.process_time``), so a loaded, shared box does not turn
a fast input into a "hang"; the bar is about the input, not the machine's load.

Failures are grouped by kind, exception type and the innermost ``bnbdoctor`` frame; the smallest
input of each group is written to ``--save DIR`` (``<parser>-<n>-<kind>.bin``) so it can be reduced
into a regression test (tests/data/fuzz/). Zero failures is the bar.

Adding a parser: write a :class:`Target` -- a name, a function listing seed files, the parse function
(bytes in, anything out, must not raise), optionally the hot regions of a seed -- and
:func:`register` it below (or from another module imported here). Seeds are real files; mutated
inputs live in memory only.

Usage: python bench/fuzz_parsers.py [--parser elf] [--inputs 100000] [--seed 0] [--save DIR]
Run it niced in the background on a shared box: ``nice -n 10 python bench/fuzz_parsers.py ...``.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import resource
import signal
import struct
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

Region = tuple[int, int]  # [start, stop) of bytes worth mutating more often


@dataclass(frozen=True)
class Target:
    """One parser under test: where its seeds come from and how one input is parsed."""

    name: str
    seeds: Callable[[], list[Path]]
    parse: Callable[[bytes], object]
    regions: Callable[[bytes], list[Region]] = lambda data: [(0, min(len(data), 4096))]
    max_seed_bytes: int = 8 << 20  # bigger seeds make each copy cost more than the parse


REGISTRY: dict[str, Target] = {}


def register(target: Target) -> Target:
    """Add a parser to the campaign (names are unique)."""
    if target.name in REGISTRY:
        raise ValueError(f"parser {target.name!r} registered twice")
    REGISTRY[target.name] = target
    return target


# ----------------------------------------------------------------------------- seeds and regions


def _files(patterns: Iterable[str], limit: int | None = None) -> list[Path]:
    """Regular files (not links) matching the glob patterns, sorted, at most ``limit`` per pattern."""
    out: list[Path] = []
    for pattern in patterns:
        found = sorted(p for p in map(Path, glob.glob(pattern, recursive=True)) if p.is_file() and not p.is_symlink())
        out.extend(found[:limit] if limit else found)
    return list(dict.fromkeys(out))


def _elf_seeds() -> list[Path]:
    return _files(
        [
            str(SITE / "bitsandbytes" / "*.so"),
            str(SITE / "torch" / "lib" / "*.so*"),
            "/usr/lib/x86_64-linux-gnu/lib[a-m]*.so.*",
            str(REPO / "tests" / "data" / "elf" / "**" / "*.so*"),
            str(REPO / "platform_fixtures" / "*" / "root" / "**" / "libbitsandbytes*.so"),
        ],
        limit=40,
    )


def _elf_regions(data: bytes) -> list[Region]:
    """The ELF header, the section header table, and the sections the ELF readers read
    (dynamic tables, string tables, version sections, .nv_fatbin's first container headers)."""
    regions: list[Region] = [(0, min(len(data), 64))]
    try:
        if data[:4] != b"\x7fELF" or data[5] != 1:
            return regions
        wide = data[4] == 2
        shoff = struct.unpack_from("<Q" if wide else "<I", data, 0x28 if wide else 0x20)[0]
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A if wide else 0x2E)
        fmt = "<IIQQQQIIQQ" if wide else "<IIIIIIIIII"
        regions.append((shoff, shoff + shnum * shentsize))
        for i in range(min(shnum, 512)):
            _, kind, _, _, offset, size, *_ = struct.unpack_from(fmt, data, shoff + i * shentsize)
            if kind in (2, 3, 6, 11, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF) or (kind == 1 and size > 1 << 16):
                regions.append((offset, offset + min(size, 1 << 16)))
    except (struct.error, IndexError):
        pass
    return [(a, min(b, len(data))) for a, b in regions if 0 <= a < min(b, len(data))]


class _BytesReader:
    """The fatbin reader's view of a file: its size and bounded reads at offsets."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size = data, len(data)

    def read_at(self, offset: int, count: int) -> bytes:
        if offset < 0 or count < 0:
            raise ValueError("negative read")
        return self.data[offset : offset + count]


def _parse_elf(data: bytes) -> object:
    from bnbdoctor.native.elf import parse_elf

    return parse_elf(data)


def _parse_pe(data: bytes) -> object:
    from bnbdoctor.native.pe import parse_pe

    return parse_pe(data)


def _parse_ldcache(data: bytes) -> object:
    from bnbdoctor.native.ldcache import parse_ld_so_cache

    return parse_ld_so_cache(data)


def _parse_fatbin(data: bytes) -> object:
    from bnbdoctor.native.fatbin import read_fatbin_archs

    return read_fatbin_archs(_BytesReader(data))


def _fatbin_seeds() -> list[Path]:
    return [p for p in _files([str(SITE / "bitsandbytes" / "libbitsandbytes_cuda*.so")]) if _has_fatbin(p)]


def _has_fatbin(path: Path) -> bool:
    from bnbdoctor.native.fatbin import read_fatbin_archs

    return read_fatbin_archs(_BytesReader(path.read_bytes())).error is None


def _whole(data: bytes) -> list[Region]:
    return [(0, len(data))]


register(Target("elf", _elf_seeds, _parse_elf, _elf_regions))
register(Target("pe", lambda: _files([str(REPO / "tests" / "data" / "pe" / "*.dll")]), _parse_pe, _whole))
register(
    Target(
        "ldcache",
        lambda: _files(["/etc/ld.so.cache", str(REPO / "platform_fixtures" / "*" / "root" / "etc" / "ld.so.cache")]),
        _parse_ldcache,
        lambda data: [(0, min(len(data), 48 + 24 * 64)), (0, len(data))],
    )
)
register(Target("fatbin", _fatbin_seeds, _parse_fatbin, _elf_regions, max_seed_bytes=4 << 20))


# ----------------------------------------------------------------------------- mutation


_WIDTHS = (1, 2, 4, 8)


def _interesting(rng: random.Random, size: int, width: int, current: int) -> int:
    top = (1 << (8 * width)) - 1
    pick = rng.choice(
        (0, 1, 2, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, top, top - 1, top >> 1, size, size - 1, size + 1)
    )
    if rng.random() < 0.3:
        pick = current + rng.choice((-1, 1, 8, 16, -16, 4096, size // 2)) if rng.random() < 0.5 else current * 16
    if rng.random() < 0.1:
        pick = rng.getrandbits(8 * width)
    return pick & top


def mutate(seed: bytes, regions: Sequence[Region], rng: random.Random) -> bytes:
    """One mutated copy of ``seed``: 1-8 edits, mostly inside ``regions``."""
    data = bytearray(seed)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        start, stop = rng.choice(regions) if regions and rng.random() < 0.85 else (0, len(data))
        stop = min(stop, len(data))
        if start >= stop:
            start, stop = 0, len(data)
        at = rng.randrange(start, stop)
        op = rng.random()
        if op < 0.45:  # an integer field gets an absurd value
            width = rng.choice(_WIDTHS)
            at -= at % width
            if at + width > len(data):
                continue
            order: Any = rng.choice(("little", "little", "big"))
            current = int.from_bytes(data[at : at + width], order)
            data[at : at + width] = _interesting(rng, len(data), width, current).to_bytes(width, order)
        elif op < 0.75:  # bit flips
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(start, stop)] ^= 1 << rng.randrange(8)
        elif op < 0.85:  # truncation
            del data[rng.randrange(start, stop) if rng.random() < 0.5 else rng.randrange(len(data)) :]
        elif op < 0.93:  # a chunk copied over another place (cycles, repeated tables)
            n = rng.randint(1, 256)
            src = rng.randrange(len(data))
            data[at : at + n] = data[src : src + n]
        else:  # a run of one byte (unterminated strings, all-ones counts)
            n = rng.randint(1, 4096)
            data[at : at + n] = bytes([rng.choice((0, 0xFF, 0x3A, 0x41))]) * min(n, len(data) - at)
    return bytes(data)


# ----------------------------------------------------------------------------- the campaign


class _Hang(Exception):
    """Raised by SIGPROF when one input runs past --hang-s of CPU time."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise _Hang()


def _where(tb: TracebackType | None) -> str:
    """The innermost bnbdoctor frame of a traceback, as ``path:line(function)``."""
    best = "?"
    for frame, line in traceback.walk_tb(tb):
        path = frame.f_code.co_filename
        if "bnbdoctor" in path and "fuzz_parsers" not in path:
            rel = path[path.rindex("bnbdoctor") :]
            best = f"{rel}:{line}({frame.f_code.co_name})"
    return best


@dataclass
class Failure:
    """One distinct failure: how often it was seen and its smallest input."""

    key: str
    count: int = 0
    smallest: bytes = b""
    detail: str = ""


@dataclass
class Result:
    """What one parser's campaign found."""

    parser: str
    seeds: int
    inputs: int = 0
    seconds: float = 0.0
    worst_s: float = 0.0
    worst_alloc: int = 0
    failures: dict[str, Failure] = field(default_factory=dict)

    def record(self, key: str, data: bytes, detail: str) -> None:
        failure = self.failures.setdefault(key, Failure(key))
        failure.count += 1
        if not failure.smallest or len(data) < len(failure.smallest):
            failure.smallest, failure.detail = data, detail


def run_one(target: Target, data: bytes, hang_s: float, trace: bool) -> tuple[float, int, str | None, str]:
    """(seconds, bytes allocated at peak, failure key or None, detail) for one input."""
    if trace:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    signal.setitimer(signal.ITIMER_PROF, hang_s)
    start = time.process_time()
    key: str | None = None
    detail = ""
    try:
        target.parse(data)
    except _Hang as exc:
        key, detail = f"hang@{_where(exc.__traceback__)}", f"> {hang_s} s"
    except Exception as exc:  # noqa: BLE001 - any escape is the failure being looked for
        key, detail = f"{type(exc).__name__}@{_where(exc.__traceback__)}", repr(exc)[:200]
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    took = time.process_time() - start
    alloc = tracemalloc.get_traced_memory()[1] - base if trace else 0
    return took, alloc, key, detail


def campaign(
    target: Target,
    inputs: int,
    rng: random.Random,
    hang_s: float = 2.0,
    slow_s: float = 0.5,
    mem_mib: float = 200.0,
    trace: bool = True,
    progress: Callable[[Result], None] | None = None,
) -> Result:
    """Run ``inputs`` mutated inputs from the target's seeds and collect what failed."""
    paths = [p for p in target.seeds() if 0 < p.stat().st_size <= target.max_seed_bytes]
    seeds = [(p, p.read_bytes()) for p in paths]
    result = Result(target.name, len(seeds))
    if not seeds:
        return result
    regions = {p: target.regions(data) for p, data in seeds}
    old = signal.signal(signal.SIGPROF, _alarm)
    if trace:
        tracemalloc.start()
    began = time.perf_counter()
    try:
        for i in range(inputs):
            path, seed = rng.choice(seeds)
            data = mutate(seed, regions[path], rng)
            took, alloc, key, detail = run_one(target, data, hang_s, trace)
            result.inputs += 1
            result.worst_s = max(result.worst_s, took)
            result.worst_alloc = max(result.worst_alloc, alloc)
            if key is None and took > slow_s:
                key, detail = "slow", f"{took:.3f} s"
            if key is None and alloc > mem_mib * (1 << 20):
                key, detail = "mem", f"{alloc / (1 << 20):.0f} MiB allocated"
            if key is not None:
                result.record(key, data, f"{detail} (seed {path.name})")
            if progress is not None and (i + 1) % 5000 == 0:
                result.seconds = time.perf_counter() - began
                progress(result)
    finally:
        if trace:
            tracemalloc.stop()
        signal.signal(signal.SIGPROF, old)
    result.seconds = time.perf_counter() - began
    return result


def report(result: Result) -> str:
    """The campaign's summary lines for one parser."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    failed = sum(f.count for f in result.failures.values())
    summary = (
        f"{result.parser}: {result.inputs} inputs from {result.seeds} seeds in {result.seconds:.0f} s (wall); "
        f"{len(result.failures)} distinct failures ({failed} inputs); worst {result.worst_s:.3f} CPU s per input; "
        f"peak allocation {result.worst_alloc / (1 << 20):.1f} MiB per input; process RSS peak {rss:.0f} MiB"
    )
    lines = [summary]
    for failure in sorted(result.failures.values(), key=lambda f: -f.count):
        lines.append(f"  {failure.count:6d}  {failure.key}  {failure.detail}  smallest {len(failure.smallest)} bytes")
    return "\n".join(lines)


def save(result: Result, folder: Path) -> list[Path]:
    """Write the smallest input of each distinct failure under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n, failure in enumerate(sorted(result.failures.values(), key=lambda f: f.key)):
        kind = failure.key.split("@", 1)[0].lower()
        path = folder / f"{result.parser}-{n:02d}-{kind}.bin"
        path.write_bytes(failure.smallest)
        (folder / f"{path.name}.txt").write_text(f"{failure.key}\n{failure.detail}\n")
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parser", action="append", choices=sorted(REGISTRY), help="default: all; repeatable")
    parser.add_argument("--inputs", type=int, default=100_000, help="mutated inputs per parser")
    parser.add_argument("--seed", type=int, default=0, help="random seed (a run is reproducible)")
    parser.add_argument("--hang-s", type=float, default=2.0)
    parser.add_argument("--slow-s", type=float, default=0.5)
    parser.add_argument("--mem-mib", type=float, default=200.0)
    parser.add_argument("--no-tracemalloc", action="store_true", help="faster; no per-input allocation figure")
    parser.add_argument("--save", type=Path, help="folder for the smallest input of each distinct failure")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    failures = 0
    for name in args.parser or sorted(REGISTRY):
        target = REGISTRY[name]
        rng = random.Random(f"{args.seed}:{name}")

        def progress(r: Result) -> None:
            if not args.quiet:
                line = (
                    f"  .. {r.parser}: {r.inputs} inputs, {len(r.failures)} distinct failures, "
                    f"worst {r.worst_s:.3f} s, {r.inputs / max(r.seconds, 1e-9):.0f}/s"
                )
                print(line, file=sys.stderr, flush=True)

        result = campaign(
            target, args.inputs, rng, args.hang_s, args.slow_s, args.mem_mib, not args.no_tracemalloc, progress
        )
        print(report(result), flush=True)
        if args.save and result.failures:
            for path in save(result, args.save):
                print(f"  saved {path}")
        failures += len(result.failures)
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
