"""What reading torch's arch list costs: the torch_arch probe's share of ``bnbdoctor --json``.

Three figures, medians of --runs:

1. ``read_fatbin_archs`` on a synthetic libtorch_cuda.so the size of a real one (about 1 GB: --containers
   fatbin containers of ten entries each with 50 KB payloads), written as a sparse file so that only
   its headers take disk space, read through ``LiveHost.open_reader`` as the probe reads it;
2. the probe itself on the recorded machine with the stub library (``pascal-gtx1080-torch-cu128``);
3. a whole diagnosis of that machine in-process, with and without the probe (the difference is what
   it adds to ``bnbdoctor --json``: it runs beside the native and load probes).

Budget (issue 12): <= 20 ms added to ``bnbdoctor --json``.

Usage: python bench/bench_torch_arch.py [--runs 21] [--containers 2000] [--live]
"""

from __future__ import annotations

import argparse
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.base import Host
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.native.fatbin import FATBIN_MAGIC, read_fatbin_archs
from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions, run_probes
from bnbdoctor.probes.torch_arch import gather_torch_arch

ARCHS = (75, 80, 86, 90, 100, 120)
PAYLOAD = 50 * 1024


def write_sparse_library(path: Path, containers: int) -> int:
    """An ELF whose .nv_fatbin holds ``containers`` containers; payloads are holes. Returns its size."""
    full = [(2, a) for a in ARCHS] + [(1, 120)] + [(2, a) for a in (80, 86, 90)]
    fewer = [(2, a) for a in ARCHS if a >= 80] + [(2, 90)] * 5  # every 4th: kernels built for sm_80+ only
    body_size = len(full) * (64 + PAYLOAD)
    section_at = 4096
    section_size = containers * (16 + body_size)
    names = b"\0.shstrtab\0.nv_fatbin\0"
    names_at = section_at + section_size
    shoff = (names_at + len(names) + 7) // 8 * 8
    with open(path, "wb") as out:
        out.write(b"\x7fELF\x02\x01\x01" + b"\0" * 9)
        out.write(struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 1))
        at = section_at
        for index in range(containers):
            entries = fewer if index % 4 == 3 else full
            out.seek(at)
            out.write(struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, body_size))
            entry = at + 16
            for kind, arch in entries:
                out.seek(entry)
                out.write(struct.pack("<HHIQII", kind, 0x0101, 64, PAYLOAD, 0, 0) + struct.pack("<HHI", 0, 0, arch))
                entry += 64 + PAYLOAD
            at += 16 + body_size
        out.seek(names_at)
        out.write(names)
        out.seek(shoff)
        out.write(b"\0" * 64)
        out.write(struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, names_at, len(names), 0, 0, 1, 0))
        out.write(struct.pack("<IIQQQQIIQQ", 11, 1, 2, 0, section_at, section_size, 0, 0, 16, 0))
    return path.stat().st_size


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--containers", type=int, default=2000)
    parser.add_argument("--live", action="store_true", help="also A/B a diagnosis of this machine")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "libtorch_cuda.so"
        size = write_sparse_library(big, args.containers)
        host = LiveHost()

        def read_big() -> object:
            reader = host.open_reader(str(big))
            assert reader is not None
            with reader:
                return read_fatbin_archs(reader)

        found = read_big()
        read = f"read {found.containers} containers, {found.entries} headers"  # type: ignore[attr-defined]
        print(f"synthetic library: {size / 2**30:.2f} GiB, {read}")
        print(f"1. read_fatbin_archs, {size / 2**30:.2f} GiB file: {median_ms(read_big, args.runs):.2f} ms")

    fixture = FixtureHost.named("pascal-gtx1080-torch-cu128")
    ctx = ProbeContext(fixture)
    run_probes([p for p in PROBES if p.name != "torch_arch"], ctx)
    print(f"2. torch_arch probe, recorded machine: {median_ms(lambda: gather_torch_arch(ctx), args.runs):.3f} ms")

    with_probe, without = a_b(fixture, args.runs)
    print(
        f"3. diagnosis of the recorded machine: {with_probe:.1f} ms with the probe, {without:.1f} ms without "
        f"(+{with_probe - without:.1f} ms)"
    )
    if args.live:
        with_probe, without = a_b(LiveHost(), args.runs)
        print(
            f"4. diagnosis of this machine: {with_probe:.1f} ms with the probe, {without:.1f} ms without "
            f"(+{with_probe - without:.1f} ms)"
        )


def a_b(host: Host, runs: int) -> tuple[float, float]:
    """Median ms of a diagnosis with and without the torch_arch probe, runs interleaved so that load and cache
    effects fall on both sides."""
    from bnbdoctor import doctor

    options = ProbeOptions()
    everything = doctor.PROBES  # type: ignore[attr-defined]
    fewer_probes = tuple(p for p in everything if p.name != "torch_arch")
    diagnose(host, options)  # warm: rule modules, parsers
    timed: dict[bool, list[float]] = {True: [], False: []}
    try:
        for _ in range(runs):
            for probe_on in (True, False):
                doctor.PROBES = everything if probe_on else fewer_probes  # type: ignore[attr-defined]
                timed[probe_on].append(median_ms(lambda: diagnose(host, options), 1))
    finally:
        doctor.PROBES = everything  # type: ignore[attr-defined]
    return statistics.median(timed[True]), statistics.median(timed[False])


if __name__ == "__main__":
    main()
