"""Times `bnbdoctor --json` against the anchor tools, in one run, in the same environment.

Anchors: `python -m bitsandbytes` (bitsandbytes' own diagnostic) and
`python -m torch.utils.collect_env` (PyTorch's environment report). Each command runs --runs
times; medians of wall time, of CPU time (user + system) and of peak RSS (all three from wait4, which
covers the child and the children it waited for, so bnbdoctor's patient subprocesses count) are printed
as ratios.

Targets: issue 26, the installed copy's `bnbdoctor --json` at <= 1/30 of `python -m bitsandbytes`' CPU
time and <= 1/13 of its peak RSS (issue 2's, <= 1/20 of its wall time and <= 1/5 of its RSS, stand).
Then the installed copy's run phase by phase (bench/doctor_phases.py: import, parser and host, each
probe one after another, the rules, redaction, rendering; medians over --runs), with the bare
interpreter's start-up as its first line.

Usage: python bench/bench_doctor.py [--runs 7] [--json bench/results/doctor.json] [--no-phases]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

#: Every command runs from an empty folder, as a user runs them from a project: from the repository
#: root, `python -m` would import the uncompiled source tree ahead of any installed copy.
NEUTRAL_CWD = tempfile.mkdtemp(prefix="bnbdoctor-bench-cwd-")


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MiB, exit code) of one run."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=NEUTRAL_CWD)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


@dataclass
class Result:
    """One command's figures (the --json file holds these fields)."""

    name: str
    argv: list[str]
    wall_s: float  # median
    wall_min_s: float
    cpu_s: float  # median user + system time, children included
    rss_mib: float  # median peak RSS
    exit_codes: list[int]
    wall_ratio_vs_bitsandbytes: float = 0.0
    cpu_ratio_vs_bitsandbytes: float = 0.0
    rss_ratio_vs_bitsandbytes: float = 0.0


def bench(name: str, argv: list[str], runs: int) -> Result:
    measure(argv)  # warm the page cache once, like a second invocation by a user
    walls: list[float] = []
    cpus: list[float] = []
    rss: list[float] = []
    codes: set[int] = set()
    for _ in range(runs):
        wall, cpu, peak, code = measure(argv)
        walls.append(wall)
        cpus.append(cpu)
        rss.append(peak)
        codes.add(code)
    return Result(
        name,
        argv,
        statistics.median(walls),
        min(walls),
        statistics.median(cpus),
        statistics.median(rss),
        sorted(codes),
    )


def phases(installed: str, patient: str, runs: int) -> list[dict[str, float | str]]:
    """The installed copy's run phase by phase (bench/doctor_phases.py), medians over ``runs``; the bare
    interpreter's start-up (``-c pass``) first."""
    script = str(Path(__file__).with_name("doctor_phases.py"))
    samples: dict[str, list[tuple[float, float, float]]] = {}
    start_up = [measure([installed, "-c", "pass"]) for _ in range(runs)]
    samples["interpreter start-up (-c pass)"] = [(wall, cpu, 0.0) for wall, cpu, _, _ in start_up]
    for _ in range(runs):
        answer = subprocess.run(
            [installed, script, patient], capture_output=True, text=True, check=True, cwd=NEUTRAL_CWD
        ).stdout
        for row in json.loads(answer)["phases"]:
            samples.setdefault(row["phase"], []).append((row["wall_s"], row["cpu_s"], row["children_cpu_s"]))
    return [
        {
            "phase": name,
            "wall_s": statistics.median(s[0] for s in rows),
            "cpu_s": statistics.median(s[1] for s in rows),
            "children_cpu_s": statistics.median(s[2] for s in rows),
        }
        for name, rows in samples.items()
    ]


def installed_copy(root: Path) -> str | None:
    """bnbdoctor installed the way users install it (a wheel in its own venv, like pipx), so the
    figure does not include the ~10 ms an editable install's import finder adds to every start."""
    venv = Path(tempfile.gettempdir()) / "bnbdoctor-bench-venv"
    python = venv / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        wheels = Path(tempfile.mkdtemp())
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(root)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--force-reinstall", *map(str, wheels.glob("*.whl"))],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"(no installed copy: {exc})", file=sys.stderr)
        return None
    return str(python)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-install", action="store_true", help="skip the installed-copy measurement")
    parser.add_argument("--no-phases", action="store_true", help="skip the installed copy's phase breakdown")
    args = parser.parse_args()
    py = sys.executable
    cases = []
    installed = None if args.no_install else installed_copy(Path(__file__).resolve().parents[1])
    if installed:
        # its own venv, examining this interpreter's torch/bitsandbytes: what a pipx user runs
        cases.append(("bnbdoctor --json (installed)", [installed, "-m", "bnbdoctor", "--json", "--python", py]))
    cases += [
        ("bnbdoctor --json (editable, dev venv)", [py, "-m", "bnbdoctor", "--json"]),
        ("bnbdoctor --json --no-load (editable)", [py, "-m", "bnbdoctor", "--json", "--no-load"]),
        ("python -m bitsandbytes", [py, "-m", "bitsandbytes"]),
        ("python -m torch.utils.collect_env", [py, "-m", "torch.utils.collect_env"]),
    ]
    results = [bench(name, argv, args.runs) for name, argv in cases]
    anchor = next(r for r in results if r.name == "python -m bitsandbytes")
    print(
        f"{'command':<40} {'wall (median)':>14} {'CPU (median)':>13} {'peak RSS':>10} "
        f"{'wall ratio':>11} {'CPU ratio':>10} {'RSS ratio':>10}  exit"
    )
    for r in results:
        r.wall_ratio_vs_bitsandbytes = wall_ratio = r.wall_s / anchor.wall_s
        r.cpu_ratio_vs_bitsandbytes = cpu_ratio = r.cpu_s / anchor.cpu_s
        r.rss_ratio_vs_bitsandbytes = rss_ratio = r.rss_mib / anchor.rss_mib
        print(
            f"{r.name:<40} {r.wall_s * 1000:>11.0f} ms {r.cpu_s * 1000:>10.0f} ms {r.rss_mib:>6.1f} MiB "
            f"{'1/' + format(1 / wall_ratio, '.1f'):>11} {'1/' + format(1 / cpu_ratio, '.1f'):>10} "
            f"{'1/' + format(1 / rss_ratio, '.1f'):>10}  {r.exit_codes}"
        )
    doctor = results[0]
    print(
        f"\ntarget, issue 26 ({doctor.name}): CPU <= 1/30 and RSS <= 1/13 of python -m bitsandbytes: "
        f"CPU 1/{1 / doctor.cpu_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.cpu_ratio_vs_bitsandbytes <= 1 / 30 else 'NOT met'}), "
        f"RSS 1/{1 / doctor.rss_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.rss_ratio_vs_bitsandbytes <= 1 / 13 else 'NOT met'})"
    )
    print(
        f"target, issue 2 ({doctor.name}): wall <= 1/20 and RSS <= 1/5 of python -m bitsandbytes: "
        f"wall 1/{1 / doctor.wall_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.wall_ratio_vs_bitsandbytes <= 1 / 20 else 'NOT met'}), "
        f"RSS 1/{1 / doctor.rss_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.rss_ratio_vs_bitsandbytes <= 1 / 5 else 'NOT met'})"
    )
    breakdown = phases(installed, py, args.runs) if installed and not args.no_phases else []
    if breakdown:
        print(f"\n{'phase (installed copy, probes one by one)':<44} {'wall':>8} {'CPU':>8} {'children CPU':>13}")
        for row in breakdown:
            print(
                f"{row['phase']:<44} {float(row['wall_s']) * 1000:>5.1f} ms {float(row['cpu_s']) * 1000:>5.1f} ms "
                f"{float(row['children_cpu_s']) * 1000:>10.1f} ms"
            )
        total_cpu = sum(float(row["cpu_s"]) + float(row["children_cpu_s"]) for row in breakdown)
        print(f"{'total':<44} {'':>8} {total_cpu * 1000:>5.1f} ms (own + children)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {"runs": args.runs, "results": [asdict(r) for r in results], "phases": breakdown}
        args.json.write_text(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
