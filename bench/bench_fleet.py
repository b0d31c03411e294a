"""``bnbdoctor fleet`` at scale: 10,000 reports aggregated, wall time and peak memory.

The reports are the recorded machines' own ``--json`` reports (platform_fixtures/), written once
each and then copied with variation (node name, driver version, a finding dropped) into a
temporary folder; the timed part is ``bnbdoctor fleet FOLDER --json`` in a fresh process, whose
peak resident memory is read from ``resource.getrusage(RUSAGE_CHILDREN)``.
Each layout a collector writes is measured: indented (as bnbdoctor writes it), compact, keys shuffled, and one
JSON Lines file. Targets (issue 26): each <= 2.5 s of CPU and <= 200 MiB.
``python bench/bench_fleet.py [--reports N] [--layouts indented,compact,shuffled,jsonl]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = (
    "a100-healthy",
    "cuda11-first-ld-path-torch-cu12",
    "driver-cuda118-torch-cu124",
    "rtx4090-torch-cpu",
    "dgx2-v100x16-bnb0461-cu128",
    "mixed-v100-t4",
    "centos7-cxxabi",
    "libcudart-missing-ld-path",
)
DRIVERS = ("535.129.03", "535.161.08", "550.54.15")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _base_reports() -> list[dict[str, object]]:
    reports = []
    for name in FIXTURES:
        done = subprocess.run(
            [sys.executable, "-m", "bnbdoctor", "--fixture", name, "--json"],
            capture_output=True,
            text=True,
            env=_env(),
            check=False,
        )
        reports.append(json.loads(done.stdout))
    return reports


LAYOUTS = ("indented", "compact", "shuffled", "jsonl")


def _shuffled(value: object, rng: random.Random) -> object:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: _shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def _text(report: dict[str, object], layout: str, rng: random.Random) -> str:
    """A report as bnbdoctor writes it (indented), as a collector re-serialises it (compact), with its keys in
    another order, or as one line of JSON Lines."""
    if layout == "indented":
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if layout == "shuffled":
        return json.dumps(_shuffled(report, rng)) + "\n"
    return json.dumps(report, separators=(",", ":")) + "\n"


def _write(folder: str, count: int, layout: str, bases: list[dict[str, object]]) -> int:
    """Write ``count`` reports in ``layout``; a line at a time (this process's size is inherited by the child
    measured next, whose peak RSS counts the pages it shared at the fork)."""
    rng = random.Random(16)
    total = 0
    lines_path = os.path.join(folder, "fleet.jsonl")
    with open(lines_path, "w", encoding="utf-8") if layout == "jsonl" else contextlib.nullcontext() as lines:
        for index in range(count):
            # most nodes are like the first (healthy) machine; a few of each other kind
            report = json.loads(json.dumps(bases[0] if rng.random() < 0.9 else rng.choice(bases)))
            facts = report["facts"]
            if facts.get("gpu") and facts["gpu"].get("driver_version") and rng.random() < 0.05:
                facts["gpu"]["driver_version"] = rng.choice(DRIVERS)
            if report["findings"] and rng.random() < 0.1:
                report["findings"] = report["findings"][1:]
            text = _text(report, layout, random.Random(index))  # its own: every layout holds the same reports
            if lines is not None:
                lines.write(text)
            else:
                with open(os.path.join(folder, f"gpu-node-{index:05d}.json"), "w", encoding="utf-8") as handle:
                    handle.write(text)
            total += len(text)
    return total


#: The anchor, run the same way: a plain ``json.loads`` of every report (what reading them at all costs).
ANCHOR = (
    "import glob, json, os, sys\n"
    "for path in sorted(glob.glob(os.path.join(sys.argv[1], '*'))):\n"
    "    with open(path, encoding='utf-8') as handle:\n"
    "        [json.loads(line) for line in handle] if path.endswith('.jsonl') else json.load(handle)\n"
)


def _anchor_cpu(folder: str) -> float:
    process = subprocess.Popen([sys.executable, "-c", ANCHOR, folder], env=_env())
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def _measure(folder: str) -> tuple[float, float, float, int, int]:
    """Wall seconds, CPU seconds, peak RSS MiB, groups and exit code of ``bnbdoctor fleet FOLDER --json``."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "bnbdoctor", "fleet", folder, "--json"],
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        result = json.load(out)
    return (
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        len(result["groups"]),
        os.waitstatus_to_exitcode(status),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=10_000)
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help=f"comma-separated, of {', '.join(LAYOUTS)}")
    args = parser.parse_args()
    bases = _base_reports()
    for layout in args.layouts.split(","):
        with tempfile.TemporaryDirectory(prefix="bnbdoctor-fleet-bench-") as folder:
            size = _write(folder, args.reports, layout, bases)
            wall, cpu, peak_mib, groups, code = _measure(folder)
            anchor = _anchor_cpu(folder)
        print(
            f"{layout:9} {args.reports} reports ({size / 2**20:.0f} MiB), {groups} groups, exit {code}: "
            f"{wall:.2f} s wall, {cpu:.2f} s CPU (target <= 2.5 s), peak RSS {peak_mib:.0f} MiB (target <= 200 MiB); "
            f"json.loads of every report {anchor:.2f} s CPU, fleet/anchor {cpu / anchor:.2f}"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time includes waiting)")


if __name__ == "__main__":
    main()
