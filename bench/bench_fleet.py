"""``bnbdoctor fleet`` at scale: 10,000 reports aggregated, wall time and peak memory.

The reports are the recorded machines' own ``--json`` reports (platform_fixtures/), written once
each and then copied with variation (node name, driver version, a finding dropped) into a
temporary folder; the timed part is ``bnbdoctor fleet FOLDER --json`` in a fresh process, whose
peak resident memory is read from ``resource.getrusage(RUSAGE_CHILDREN)``.
Targets (issue 16): <= 3 s and <= 200 MiB.  ``python bench/bench_fleet.py [--reports N]``
"""

from __future__ import annotations

import argparse
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


def _write(folder: str, count: int) -> int:
    rng = random.Random(16)
    bases = _base_reports()
    total = 0
    for index in range(count):
        # most nodes are like the first (healthy) machine; a few of each other kind
        report = json.loads(json.dumps(bases[0] if rng.random() < 0.9 else rng.choice(bases)))
        facts = report["facts"]
        if facts.get("gpu") and facts["gpu"].get("driver_version") and rng.random() < 0.05:
            facts["gpu"]["driver_version"] = rng.choice(DRIVERS)
        if report["findings"] and rng.random() < 0.1:
            report["findings"] = report["findings"][1:]
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        with open(os.path.join(folder, f"gpu-node-{index:05d}.json"), "w", encoding="utf-8") as handle:
            handle.write(text)
        total += len(text)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bnbdoctor-fleet-bench-") as folder:
        size = _write(folder, args.reports)
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
            process.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            result = json.load(out)
        peak_mib = usage.ru_maxrss / 1024  # KiB on Linux
        cpu = usage.ru_utime + usage.ru_stime
    print(
        f"reports: {args.reports} ({size / 2**20:.0f} MiB of JSON), groups: {len(result['groups'])}, "
        f"exit {process.returncode}"
    )
    print(f"fleet: {wall:.2f} s wall, {cpu:.2f} s CPU (target <= 3 s), peak RSS {peak_mib:.0f} MiB (target <= 200 MiB)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time includes waiting)")


if __name__ == "__main__":
    main()
