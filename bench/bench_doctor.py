"""Times `bnbdoctor --json` against the anchor tools, in one run, in the same environment.

Anchors: `python -m bitsandbytes` (bitsandbytes' own diagnostic) and
`python -m torch.utils.collect_env` (PyTorch's environment report). Each command runs --runs
times; medians of wall time and of peak RSS (from wait4, which covers the child and the children
it waited for, so bnbdoctor's patient subprocess counts) are printed as ratios.

Targets (issue 2): bnbdoctor's full static diagnosis at <= 1/20 of `python -m bitsandbytes`' wall
time and <= 1/5 of its peak memory.

Usage: python bench/bench_doctor.py [--runs 7] [--json bench/results/doctor.json]
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


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one run."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=NEUTRAL_CWD)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


@dataclass
class Result:
    """One command's figures (the --json file holds these fields)."""

    name: str
    argv: list[str]
    wall_s: float  # median
    wall_min_s: float
    rss_mib: float  # median peak RSS
    exit_codes: list[int]
    wall_ratio_vs_bitsandbytes: float = 0.0
    rss_ratio_vs_bitsandbytes: float = 0.0


def bench(name: str, argv: list[str], runs: int) -> Result:
    measure(argv)  # warm the page cache once, like a second invocation by a user
    walls: list[float] = []
    rss: list[float] = []
    codes: set[int] = set()
    for _ in range(runs):
        wall, peak, code = measure(argv)
        walls.append(wall)
        rss.append(peak)
        codes.add(code)
    return Result(name, argv, statistics.median(walls), min(walls), statistics.median(rss), sorted(codes))


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
    print(f"{'command':<40} {'wall (median)':>14} {'peak RSS':>10} {'wall ratio':>11} {'RSS ratio':>10}  exit")
    for r in results:
        r.wall_ratio_vs_bitsandbytes = wall_ratio = r.wall_s / anchor.wall_s
        r.rss_ratio_vs_bitsandbytes = rss_ratio = r.rss_mib / anchor.rss_mib
        print(
            f"{r.name:<40} {r.wall_s * 1000:>11.0f} ms {r.rss_mib:>6.0f} MiB "
            f"{'1/' + format(1 / wall_ratio, '.1f'):>11} {'1/' + format(1 / rss_ratio, '.1f'):>10}  {r.exit_codes}"
        )
    doctor = results[0]
    print(
        f"\ntarget ({doctor.name}): bnbdoctor wall <= 1/20 and RSS <= 1/5 of python -m bitsandbytes: "
        f"wall 1/{1 / doctor.wall_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.wall_ratio_vs_bitsandbytes <= 1 / 20 else 'NOT met'}), "
        f"RSS 1/{1 / doctor.rss_ratio_vs_bitsandbytes:.1f} "
        f"({'met' if doctor.rss_ratio_vs_bitsandbytes <= 1 / 5 else 'NOT met'})"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"runs": args.runs, "results": [asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
