"""Benchmark ``bnbdoctor explain``: 1, 10 and 100 MB logs, to show it is linear (targets: 10 MB <= 1 s; 100 MB <= 3 s).

The logs are generated, not committed: realistic training-run noise (progress bars, loss lines,
warnings, repeated tracebacks through site-packages, ANSI colours, a few non-ASCII lines) with
one real failure (a CXXABI loader error, the dispatch ValueError, the PEFT merge warning) every
few thousand lines. The whole pipeline is timed, as the command runs it: read and clean, extract
facts, run every rule, rank, and render the JSON report.

    python bench/bench_explain.py            # 1, 10, 100 MB
    python bench/bench_explain.py --sizes 10 --repeat 3
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

NOISE = [
    "{{'loss': {loss:.4f}, 'grad_norm': 0.8{n}, 'learning_rate': 0.0002, 'epoch': 0.{n}}}",
    " 12%|\x1b[32m█▏        \x1b[0m| {n}/1000 [00:{n:02d}<07:21,  2.27it/s]",
    "[2025-01-14 09:12:{n:02d},118] [INFO] [trainer.py:2241:train] ***** Running training *****",
    '  File "/home/user/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1{n}, in _call_impl',
    "    return forward_call(*args, **kwargs)",
    (
        "/home/user/.venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:460: UserWarning: "
        "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly."
    ),
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:0{d}<00:00,  1.03it/s]",
    "wandb: 🚀 View run at https://wandb.ai/team/proj/runs/{n}abc",
    "Epoch 1: 学习率 0.0002, 损失 {loss:.3f}",
    "GPU 0 memory: {n}.5 GiB used / 79.3 GiB total",
]
FAILURES = [
    "CUDA SETUP: Loading binary /usr/local/lib/python3.9/site-packages/bitsandbytes/libbitsandbytes_cuda117.so...",
    (
        "/lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by "
        "/usr/local/lib/python3.9/site-packages/bitsandbytes/libbitsandbytes_cuda117.so)"
    ),
    (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the "
        "quantized model."
    ),
    "UserWarning: Merge lora module to 4-bit linear may get different generations due to rounding errors.",
]


def make_log(size_mb: float, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out = io.StringIO()
    target = int(size_mb * 1024 * 1024)
    written = 0
    line_no = 0
    while written < target:
        line_no += 1
        if line_no % 5000 == 0:
            text = FAILURES[(line_no // 5000) % len(FAILURES)]
        else:
            n = rng.randrange(100)
            text = rng.choice(NOISE).format(n=n, d=n % 10, loss=rng.random() * 3)
        text += "\r\n" if line_no % 7 == 0 else "\n"
        out.write(text)
        written += len(text.encode("utf-8"))
    return out.getvalue().encode("utf-8")


def run_once(path: str) -> tuple[float, int, int]:
    from bnbdoctor.explain import explain_file
    from bnbdoctor.render.json import render_json

    started = time.perf_counter()
    report = explain_file(path)
    render_json(report)
    return time.perf_counter() - started, len(report.findings), report.facts.log.lines if report.facts.log else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 100], help="log sizes in MB")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (the best is reported)")
    args = parser.parse_args(argv)
    from bnbdoctor.explain import explain_text

    explain_text("warm-up: import the rules once")  # rule modules load on first use, as in the CLI
    print(f"{'size':>8} {'lines':>10} {'findings':>9} {'seconds':>9} {'MB/s':>8} {'s per 10 MB':>12}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = os.path.join(tmp, f"log_{size:g}MB.txt")
            data = make_log(size)
            with open(path, "wb") as handle:
                handle.write(data)
            best = min((run_once(path) for _ in range(args.repeat)), key=lambda r: r[0])
            seconds, findings, lines = best
            mb = len(data) / (1024 * 1024)
            results.append((mb, seconds))
            print(
                f"{mb:>6.1f}MB {lines:>10,} {findings:>9} {seconds:>9.3f} {mb / seconds:>8.1f} "
                f"{seconds / mb * 10:>12.3f}"
            )
            os.unlink(path)
    if len(results) > 1:
        (m0, s0), (m1, s1) = results[0], results[-1]
        print(f"scaling: {m1 / m0:.0f}x the size took {s1 / s0:.1f}x the time (linear = {m1 / m0:.0f}x)")
    ten = [s / m * 10 for m, s in results if m >= 5]
    if ten:
        verdict = "meets" if max(ten) <= 1.0 else "misses"
        print(f"target: 10 MB in <= 1 s: {verdict} ({max(ten):.2f} s per 10 MB)")
    hundred = [s for m, s in results if m >= 99]
    if hundred:
        verdict = "meets" if max(hundred) <= 3.0 else "misses"
        print(f"target, issue 26: 100 MB in <= 3 s: {verdict} ({max(hundred):.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
