"""Benchmark ``bnbdoctor lint`` on a generated 5,000-line file: wall time and peak Python memory.

Run: ``PYTHONPATH=. python bench/bench_lint.py``.
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path

from bnbdoctor.lint.cli import lint_report

BLOCK = """
def step_{i}(path):
    cfg_{i} = BitsAndBytesConfig(load_in_4bit=True)
    model_{i} = AutoModelForCausalLM.from_pretrained(path, quantization_config=cfg_{i}, torch_dtype=torch.float16)
    peft_{i} = get_peft_model(model_{i}, LoraConfig(r=8))
    values_{i} = [x * 2 for x in range(10) if x % 3]
    merged_{i} = peft_{i}.merge_and_unload()
    return merged_{i}, values_{i}
"""


def main() -> None:
    text = "import torch\n" + "".join(BLOCK.format(i=i) for i in range(625))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.py"
        path.write_text(text, encoding="utf-8")
        tracemalloc.start()
        started = time.perf_counter()
        report = lint_report([str(path)], read_python=False)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    lines = text.count("\n")
    print(f"lint: {lines} lines, {len(report.findings)} findings, {elapsed:.2f} s, peak {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
