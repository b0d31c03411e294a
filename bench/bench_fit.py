"""Times `bnbdoctor fit` against the real from_pretrained meta-device path, in one run, in the same environment.

The anchor is what bnbdoctor fit predicts: `from_pretrained(folder, quantization_config=
BitsAndBytesConfig(load_in_4bit=True), device_map="auto", ...)` on a folder with a config.json and an
empty model.safetensors, stopped right after transformers computed the device map
(tests/data/fit/oracle.py). Shapes: Llama-3-70B and Qwen3-235B-A22B (fused MoE experts).

Each command runs --runs times from an empty folder; medians of wall time and of peak RSS (from
wait4: the largest process among the command and the children it waited for, so bnbdoctor's engine
subprocess counts) are printed with their ratio to the anchor.

Targets (the fit issue): `bnbdoctor fit` no slower than the from_pretrained path, and at most 10 s
end to end for the 70B shape.

Usage: python bench/bench_fit.py [--runs 3] [--json bench/results/fit.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fit"
ORACLE = DATA / "oracle.py"
GiB = 1 << 30
#: An empty folder to run from, so `python -m bnbdoctor` imports the installed package as a user's would.
NEUTRAL_CWD = tempfile.mkdtemp(prefix="bnbdoctor-bench-fit-cwd-")

#: (name, config, free GPU memory, CPU RAM): the realistic scenarios of the research note, where
#: from_pretrained's own answer is "raises" (the case the remedies are computed for).
SHAPES = [
    ("Llama-3-70B 4-bit, 1 GPU with 39.4 GiB free", "llama-3-70b", [int(39.4 * GiB)], 128 * GiB),
    ("Qwen3-235B-A22B 4-bit, 8 GPUs with 78 GiB free", "qwen3-235b-a22b", [78 * GiB] * 8, 512 * GiB),
]


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one run."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=NEUTRAL_CWD)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def bench(argv: list[str], runs: int) -> dict[str, object]:
    measure(argv)  # warm the page cache once, like a second invocation by a user
    walls, rss, codes = [], [], set()
    for _ in range(runs):
        wall, peak, code = measure(argv)
        walls.append(wall)
        rss.append(peak)
        codes.add(code)
    return {
        "argv": argv,
        "wall_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "peak_rss_mib": statistics.median(rss),
        "exit_codes": sorted(codes),
    }


def write_model(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / f"{name}.json", folder / "config.json")
    (folder / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    return folder


def fit_command(python: str, folder: Path, gpus: list[int], cpu: int) -> list[str]:
    """`bnbdoctor fit --json` on this model and these GPUs, examining ``python``."""
    gpu_list = ",".join(str(g) for g in gpus)
    return [python, "-m", "bnbdoctor", "fit", str(folder), "--gpus", gpu_list, "--cpu-memory", str(cpu),
            "--python", python, "--json"]  # fmt: skip


def prediction(python: str, folder: Path, gpus: list[int], cpu: int) -> dict[str, object]:
    """bnbdoctor's verdict and the anchor's, for the record (and as a sanity check)."""
    fit = subprocess.run(
        fit_command(python, folder, gpus, cpu),
        capture_output=True,
        check=False,
        text=True,
        cwd=NEUTRAL_CWD,
    )
    data = json.loads(fit.stdout)["facts"]["fit"]
    return {
        "verdict": data["verdict"],
        "model_gib": round(data["model_bytes"] / GiB, 2),
        "engine_timings": data["timings"],
        "remedies": [r["title"] for r in data["remedies"] if r["status"] == "passes"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bnbdoctor-bench-fit-"))
    results = []
    try:
        for title, name, gpus, cpu in SHAPES:
            folder = write_model(work, name)
            cases = work / f"{name}-cases.json"
            detected = {**{str(i): g for i, g in enumerate(gpus)}, "cpu": cpu}
            cases.write_text(
                json.dumps([{"id": name, "folder": str(folder), "device_map": "auto", "detected": detected}])
            )
            fit_args = fit_command(python, folder, gpus, cpu)
            anchor = bench([python, "-B", str(ORACLE), str(cases)], args.runs)
            verdict_only = bench([*fit_args, "--no-remedies"], args.runs)
            full = bench(fit_args, args.runs)
            answer = subprocess.run(
                [python, "-B", str(ORACLE), str(cases)], capture_output=True, check=False, text=True
            )
            oracle = json.loads(answer.stdout.strip().splitlines()[-1])
            results.append(
                {
                    "shape": title,
                    "anchor": anchor,
                    "fit_verdict_only": verdict_only,
                    "fit": full,
                    "anchor_verdict": oracle["results"][0]["verdict"],
                    "prediction": prediction(python, folder, gpus, cpu),
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"bnbdoctor fit vs from_pretrained (meta device, stopped after the device map); median of {args.runs} runs")
    print(f"{'shape':<48} {'command':<34} {'wall s':>7} {'ratio':>6} {'peak MiB':>9} {'ratio':>6}")
    ok = True
    for row in results:
        anchor = row["anchor"]
        for label, key in (
            ("from_pretrained (anchor)", "anchor"),
            ("bnbdoctor fit --no-remedies", "fit_verdict_only"),
            ("bnbdoctor fit (with remedies)", "fit"),
        ):
            item = row[key]
            print(
                f"{row['shape'] if key == 'anchor' else '':<48} {label:<34} {item['wall_s']:>7.2f} "
                f"{item['wall_s'] / anchor['wall_s']:>6.2f} {item['peak_rss_mib']:>9.0f} "
                f"{item['peak_rss_mib'] / anchor['peak_rss_mib']:>6.2f}"
            )
        pred = row["prediction"]
        print(
            f"{'':<48} verdict: fit {pred['verdict']}, from_pretrained {row['anchor_verdict']}; "
            f"model {pred['model_gib']} GiB"
        )
        for remedy in pred["remedies"]:
            print(f"{'':<48}   remedy: {remedy}")
        if pred["verdict"] != row["anchor_verdict"]:
            ok = False
            print("  MISMATCH: bnbdoctor fit and from_pretrained disagree")
    seventy = results[0]["fit"]["wall_s"]
    slower = [r["shape"] for r in results if r["fit"]["wall_s"] > r["anchor"]["wall_s"]]
    print(f"target: 70B end to end <= 10 s: {seventy:.2f} s -> {'met' if seventy <= 10 else 'MISSED'}")
    print(f"target: no slower than from_pretrained: {'met' if not slower else 'MISSED for ' + ', '.join(slower)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
