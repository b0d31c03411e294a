"""Times `bnbdoctor merge-check` on a 1B-shaped LoRA adapter, and prints its peak memory.

The base is generated: the adapted weights of a Llama-3.2-1B shape (hidden 2048, intermediate 8192,
8 KV heads of 64, 16 layers; q/k/v/o/gate/up/down), random bf16, saved as safetensors, with a rank-16
adapter (alpha 32) whose B is random (‖ΔW‖ about 1 % of ‖W‖), in peft's tensor names. The anchor is
the size of what a whole-model 16-bit merge holds in memory (the base's tensors), so the printed ratio
says how far "one layer in memory at a time" stays below it.

Peak RSS comes from wait4 (the largest of the command and the children it waited for, so the engine
subprocess counts).

Usage: python bench/bench_merge_check.py [--layers 16] [--keep DIR] [--json bench/results/merge_check.json]

Measured on the shared 2-core box (torch 2.13.0+cpu, bitsandbytes 0.50.2), all 16 layers (112 adapted
modules, 1856 MiB of base tensors): 223 s with the box otherwise idle (2.0 s a module; 368 s under a load
average of 4.5), engine peak 1050 MiB (0.57 of the base). The peak is the largest layer's working set
(907 MiB with 1 module, 955 with 7) over the 341 MiB that importing torch and bitsandbytes takes, plus
glibc heap fragmentation: with MALLOC_MMAP_THRESHOLD_=1048576 (every freed tensor returned to the OS,
46 % slower) all 112 modules peaked at 939 MiB, below the 1-module peak without it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20

MAKE = r"""
import json, sys, torch
from safetensors.torch import save_file
out, layers = sys.argv[1], int(sys.argv[2])
hidden, inter, kv, rank = 2048, 8192, 512, 16
shapes = {"self_attn.q_proj": (hidden, hidden), "self_attn.k_proj": (kv, hidden), "self_attn.v_proj": (kv, hidden),
          "self_attn.o_proj": (hidden, hidden), "mlp.gate_proj": (inter, hidden), "mlp.up_proj": (inter, hidden),
          "mlp.down_proj": (hidden, inter)}
g = torch.Generator().manual_seed(0)
import os
os.makedirs(out + "/base", exist_ok=True); os.makedirs(out + "/adapter", exist_ok=True)
adapter = {}
for i in range(layers):
    base = {}
    for name, (rows, cols) in shapes.items():
        w = torch.randn(rows, cols, generator=g, dtype=torch.float32) * 0.02
        base[f"model.layers.{i}.{name}.weight"] = w.to(torch.bfloat16)
        a = torch.randn(rank, cols, generator=g) / cols ** 0.5
        b = torch.randn(rows, rank, generator=g)
        b *= 0.01 * w.norm() / ((b @ a) * 2.0).norm()  # the update is 1 % of the weight
        prefix = f"base_model.model.model.layers.{i}.{name}"
        adapter[prefix + ".lora_A.weight"] = a.to(torch.bfloat16)
        adapter[prefix + ".lora_B.weight"] = b.to(torch.bfloat16)
    save_file(base, f"{out}/base/model-{i:05d}.safetensors")
save_file(adapter, out + "/adapter/adapter_model.safetensors")
json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": 32, "base_model_name_or_path": out + "/base",
           "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]},
          open(out + "/adapter/adapter_config.json", "w"))
"""


def timed(argv: list[str], cwd: str) -> tuple[float, int, int, bytes, bytes]:
    """(seconds, peak RSS bytes of the command and its waited-for children, exit status, stdout, stderr)."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return seconds, usage.ru_maxrss * 1024, process.returncode, stdout.read(), stderr.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16, help="decoder layers (16 for the 1B shape)")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (reused when present)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    out = args.keep or tempfile.mkdtemp(prefix="bnbdoctor-bench-merge-")
    if not (Path(out) / "adapter" / "adapter_config.json").is_file():
        print(f"generating a 1B-shaped base and adapter ({args.layers} layers) in {out}", file=sys.stderr)
        subprocess.run([sys.executable, "-c", MAKE, out, str(args.layers)], check=True)
    base_bytes = sum(p.stat().st_size for p in (Path(out) / "base").glob("*.safetensors"))
    env_python = sys.executable
    argv = [env_python, "-m", "bnbdoctor", "merge-check", str(Path(out) / "adapter"), "--json", "--python", env_python]
    seconds, peak, code, stdout, stderr = timed(argv, out)
    if code not in (0, 1):
        print(stderr.decode(errors="replace"), file=sys.stderr)
        return 2
    data = json.loads(stdout)
    figures = {
        "layers_measured": len(data["layers"]),
        "wall_s": round(seconds, 2),
        "peak_rss_mib": round(peak / MiB, 1),
        "engine_peak_rss_mib": round((data.get("engine_peak_rss_bytes") or 0) / MiB, 1),
        "base_tensors_mib": round(base_bytes / MiB, 1),
        "peak_vs_base": round(peak / base_bytes, 3),
        "kept": {way: value["kept"] for way, value in data["overall"].items()},
        "unmoved": {way: value["unmoved"] for way, value in data["overall"].items()},
    }
    for key, value in figures.items():
        print(f"{key:>22}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
