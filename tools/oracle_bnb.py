"""Run every bitsandbytes release's own loader against simulated machines; write what each one did.

bnbdoctor predicts which ``libbitsandbytes_*`` file a release asks for, what it falls back to,
whether ``import bitsandbytes`` raises and what it prints (``bnbdoctor/knowledge/selection.py``).
This tool asks the releases themselves: for every release on PyPI from 0.37.0 on, and every wheel
of it (one per platform it installs on), it reads the wheel's Python sources and file list from
PyPI (range requests, cached in ``~/.cache/bnbdoctor-oracle``; no bitsandbytes code is committed
here), lays them out as an installed package (the native libraries as empty files of their real
names), and imports it in a forked child of a process that holds the real CPU torch, patched to be
the scenario's torch (see ``tools/oracle_bnb_world.py``). The results, one row per release x
scenario, go to ``tests/data/oracle/bnb_loader.json``; ``tests/test_oracle_bnb.py`` holds
bnbdoctor's predictions to them.

    .venv/bin/python tools/oracle_bnb.py                 # every release, every scenario (~15 min)
    .venv/bin/python tools/oracle_bnb.py --releases 0.45.5,0.50.2 --check   # re-run some, compare
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle_bnb_world import observe, scrub
from oracle_wheels import CACHE, Published, published_files, wheel_contents
from packaging.version import Version

TABLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "oracle" / "bnb_loader.json"
FIRST = Version("0.37.0")
SOURCES = re.compile(r"^bitsandbytes/.*\.py$")

#: Which simulated platforms a wheel installs on, by its platform tag (a pure wheel installs anywhere).
WHEEL_PLATFORMS = {
    "any": ("linux-x86_64", "windows-amd64", "linux-aarch64", "macos-arm64"),
    "manylinux_2_24_x86_64": ("linux-x86_64",),
    "manylinux_2_24_aarch64": ("linux-aarch64",),
    "win_amd64": ("windows-amd64",),
    "win_arm64": ("windows-arm64",),
    "macosx_14_0_arm64": ("macos-arm64",),
}

CUDA_BUILDS = ("11.7", "11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")
CCS = ((3, 7), (6, 1), (7, 5), (8, 6), (12, 0))
ROCM_BUILDS = ("6.1", "6.2", "6.3", "6.4", "7.0")
CUDART_DIR = "/usr/local/cuda/lib64"


def _cuda(torch_cuda: str, cc: tuple[int, int], **extra: Any) -> dict[str, Any]:
    """A machine with a CUDA torch that sees one GPU, and a CUDA toolkit of the same version installed
    in /usr/local/cuda (what the CUDASetup releases search for libcudart)."""
    scenario: dict[str, Any] = {
        "torch_cuda": torch_cuda,
        "available": True,
        "ccs": [list(cc)],
        "system_files": [f"{CUDART_DIR}/libcudart.so"],
        "system_cuda": torch_cuda,
    }
    scenario.update(extra)
    return scenario


def full_grid() -> list[dict[str, Any]]:
    """The scenarios a release is run in on its main platforms (one label each)."""
    grid: list[dict[str, Any]] = [
        {"label": "cpu torch", "torch_cuda": None, "available": False, "ccs": []},
        {
            "label": "cpu torch, BNB_CUDA_VERSION=121",
            "torch_cuda": None,
            "available": False,
            "ccs": [],
            "env": {"BNB_CUDA_VERSION": "121"},
        },
    ]
    for build in CUDA_BUILDS:
        for cc in CCS:
            grid.append(_cuda(build, cc, label=f"cuda {build}, cc {cc[0]}.{cc[1]}"))
    grid.append(_cuda("12.1", (8, 6), available=False, driver=False, label="cuda 12.1, no GPU visible"))
    grid.append(_cuda("11.8", (7, 5), available=False, driver=False, label="cuda 11.8, no GPU visible"))
    for value in ("118", "124", "130", "999", "abc", ""):
        grid.append(
            _cuda(
                "12.1", (8, 6), env={"BNB_CUDA_VERSION": value}, label=f"cuda 12.1, cc 8.6, BNB_CUDA_VERSION={value!r}"
            )
        )
    grid.append(
        _cuda("12.1", (6, 1), env={"BNB_CUDA_VERSION": "118"}, label="cuda 12.1, cc 6.1, BNB_CUDA_VERSION='118'")
    )
    grid.append(_cuda("11.8", (8, 6), system_files=[], label="cuda 11.8, cc 8.6, no libcudart on the system"))
    grid.append(_cuda("11.8", (8, 6), system_cuda="12.1", label="cuda 11.8, cc 8.6, system CUDA 12.1"))
    for build in ROCM_BUILDS:
        grid.append(
            {
                "label": f"rocm {build}",
                "torch_cuda": None,
                "torch_hip": f"{build}.0",
                "available": True,
                "ccs": [[9, 0]],
                "gcn_arch": "gfx90a",
            }
        )
    for variable, value in (
        ("BNB_ROCM_VERSION", "62"),
        ("BNB_ROCM_VERSION", "999"),
        ("BNB_ROCM_VERSION", "6.2"),
        ("BNB_CUDA_VERSION", "121"),
    ):
        grid.append(
            {
                "label": f"rocm 6.3, {variable}={value!r}",
                "torch_cuda": None,
                "torch_hip": "6.3.0",
                "available": True,
                "ccs": [[9, 0]],
                "gcn_arch": "gfx90a",
                "env": {variable: value},
            }
        )
    grid.append({"label": "xpu", "torch_cuda": None, "torch_xpu": "20250101", "available": True, "ccs": []})
    grid.append(
        _cuda(
            "12.1",
            (8, 6),
            fault="missing_dependency",
            missing="libcudart.so.12",
            label="cuda 12.1, cc 8.6, the library's libcudart.so.12 missing",
        )
    )
    grid.append(_cuda("12.1", (8, 6), fault="wrong_architecture", label="cuda 12.1, cc 8.6, wrong architecture"))
    return grid


def small_grid() -> list[dict[str, Any]]:
    """The scenarios for a platform a release installs on without being built for it."""
    return [
        {"label": "cpu torch", "torch_cuda": None, "available": False, "ccs": []},
        _cuda("12.1", (8, 6), label="cuda 12.1, cc 8.6"),
        _cuda("11.8", (7, 5), label="cuda 11.8, cc 7.5"),
        _cuda("12.1", (8, 6), available=False, driver=False, label="cuda 12.1, no GPU visible"),
        _cuda("12.1", (8, 6), env={"BNB_CUDA_VERSION": "121"}, label="cuda 12.1, cc 8.6, BNB_CUDA_VERSION='121'"),
        {"label": "cpu torch, mps", "torch_cuda": None, "available": False, "ccs": [], "mps": True},
    ]


def scenarios_for(tag: str, version: Version) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for platform_name in WHEEL_PLATFORMS.get(tag, ()):
        main = (tag != "any" and not platform_name.startswith("macos") and platform_name != "windows-arm64") or (
            tag == "any" and platform_name == "linux-x86_64"
        )
        foreign = tag == "any" and platform_name != "linux-x86_64"  # its libraries are Linux x86-64 ELF files
        for base in full_grid() if main else small_grid():
            if platform_name.startswith("macos") and base.get("torch_cuda"):
                continue  # no CUDA torch exists for macOS
            scenario = dict(base, fault="wrong_architecture") if foreign else base
            out.append((platform_name, dict(scenario, platform=platform_name)))
    return out


def lay_out(published: Published) -> Path:
    """The release as an installed package folder: its sources, and its other files as empty files."""
    root = CACHE / "packages" / published.filename
    marker = root / ".complete"
    if marker.exists():
        return root
    names, sources = wheel_contents(published, SOURCES)
    for name in names:
        if not name.startswith("bitsandbytes/"):
            continue
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name in sources:
            target.write_text(sources[name], encoding="utf-8")
        else:
            target.write_bytes(b"")
    marker.write_text("")
    return root


def _run_one(job: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
    root, scenario, _ = job
    with tempfile.TemporaryDirectory(prefix="bnb-oracle-env-") as env_dir:
        env = dict(scenario.get("env") or {})
        for variable in ("LD_LIBRARY_PATH", "CONDA_PREFIX"):
            if variable in scenario.get("folders", {}):
                folder = Path(env_dir) / variable
                (folder / "lib").mkdir(parents=True)
                for file in scenario["folders"][variable]:
                    (folder / "lib" / file).write_bytes(b"")
                env[variable] = str(folder) if variable == "CONDA_PREFIX" else str(folder / "lib")
        world = dict(scenario, env=env)
        result = observe(world, root)
        replacements = {root + os.sep + "bitsandbytes": "<package>", root: "<site-packages>", env_dir: "<env>"}
        result["messages"] = [scrub(m, replacements) for m in result["messages"]]
        result["import"] = scrub(result["import"], replacements)
        if result["first_call"]:
            result["first_call"] = scrub(result["first_call"], replacements)
        result["asked"] = [scrub(a, replacements) for a in result["asked"]]
        return result


def _modules_after_import(job: tuple[str, dict[str, Any], str]) -> list[str]:
    _run_one(job)
    return [name for name in sys.modules if not name.startswith("bitsandbytes")]


_PRELOADED: list[bool] = []
#: Heavy modules older releases import that the newest does not (0.39-0.42 import scipy.stats at the top).
EXTRA_PRELOAD = ("scipy", "scipy.stats")


def _preload(context: Any, jobs: list[tuple[str, dict[str, Any], str]]) -> None:
    """Import here, once, every module outside bitsandbytes that the release of ``jobs[0]`` pulls in
    (torch's submodules mostly; the newest release pulls in the most): each forked child then pays only
    for bitsandbytes itself."""
    import importlib

    import torch  # noqa: F401

    if _PRELOADED:
        return
    _PRELOADED.append(True)
    cpu = jobs[0]
    with context.Pool(1) as pool:
        names = pool.apply(_modules_after_import, (cpu,))
    for name in [*names, *EXTRA_PRELOAD]:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - a module that only imports in that world
                continue


def run_jobs(jobs: list[tuple[str, dict[str, Any], str]], workers: int) -> list[dict[str, Any]]:
    """Each job in a fresh child forked from this process (torch already imported): no state leaks
    from one release's import into the next."""
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, maxtasksperchild=1) as pool:
        pending = [pool.apply_async(_run_one, (job,)) for job in jobs]
        results = []
        for future in pending:
            try:
                results.append(future.get(timeout=120))
            except Exception as exc:  # noqa: BLE001 - a hung or crashed import is an observation
                results.append(
                    {
                        "asked": [],
                        "loaded": None,
                        "import": f"harness: {type(exc).__name__}: {exc}",
                        "first_call": None,
                        "messages": [],
                        "reads": [],
                    }
                )
    return results


def releases(only: set[str] | None) -> list[Published]:
    wheels = [f for f in published_files("bitsandbytes") if f.filename.endswith(".whl")]
    chosen = [f for f in wheels if Version(f.version) >= FIRST and (only is None or f.version in only)]
    return sorted(chosen, key=lambda f: (Version(f.version), f.tag))


def build_rows(wheels: list[Published], workers: int, reuse: bool) -> list[dict[str, Any]]:
    """Rows for every wheel x scenario; a wheel's rows are kept in the cache as soon as they exist, so
    an interrupted run resumes (``reuse``) instead of starting again."""
    rows: list[dict[str, Any]] = []
    every = releases(None)  # preload what the newest release pulls in, whichever releases this run covers
    newest = max(every, key=lambda w: (Version(w.version), w.tag == "manylinux_2_24_x86_64"))
    newest_root = str(lay_out(newest))
    _preload(multiprocessing.get_context("fork"), [(newest_root, full_grid()[0] | {"platform": "linux-x86_64"}, "")])
    for published in wheels:
        kept = CACHE / "rows" / f"{published.filename}.json"
        if reuse and kept.exists():
            rows += json.loads(kept.read_text(encoding="utf-8"))
            continue
        started = time.monotonic()
        root = str(lay_out(published))
        plan = scenarios_for(published.tag, Version(published.version))
        results = run_jobs([(root, scenario, published.filename) for _, scenario in plan], workers)
        these = []
        for (platform_name, scenario), result in zip(plan, results, strict=True):
            shown = {k: v for k, v in scenario.items() if k not in {"platform", "label"}}
            these.append(
                {
                    "release": published.version,
                    "wheel": published.tag,
                    "platform": platform_name,
                    "label": scenario["label"],
                    "scenario": shown,
                    "outcome": result,
                }
            )
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(these), encoding="utf-8")
        rows += these
        print(f"{published.filename}: {len(these)} scenarios, {time.monotonic() - started:.0f} s", flush=True)
    return rows


def shipped_libraries(wheels: list[Published]) -> dict[str, list[str]]:
    """Per wheel (``release tag``), the native library file names in its package folder."""
    shipped = {}
    for published in wheels:
        names, _ = wheel_contents(published, SOURCES)
        shipped[f"{published.version} {published.tag}"] = sorted(
            name.split("/")[-1] for name in names if re.match(r"bitsandbytes/libbitsandbytes_", name)
        )
    return shipped


def write_table(rows: list[dict[str, Any]], seconds: float, shipped: dict[str, list[str]]) -> None:
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    header = {
        "source": "each release's own bitsandbytes/*.py from its PyPI wheel, imported by tools/oracle_bnb.py "
        f"against simulated machines (run {date.today().isoformat()}, {seconds:.0f} s); torch is the real "
        "CPU torch with its device queries replaced; OSError texts for faults are the harness's",
        "releases": sorted({r["release"] for r in rows}, key=Version),
        "rows": len(rows),
        "shipped": shipped,
    }
    lines = ",\n".join("  " + json.dumps(row, sort_keys=True) for row in rows)
    TABLE.write_text(f'{{"header": {json.dumps(header)},\n "rows": [\n{lines}\n]}}\n', encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", help="comma-separated versions (default: every release from 0.37.0)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--check", action="store_true", help="compare with the committed table instead of writing")
    parser.add_argument("--resume", action="store_true", help="reuse the rows an earlier run kept in the cache")
    args = parser.parse_args(argv)
    only = set(args.releases.split(",")) if args.releases else None
    started = time.monotonic()
    wheels = releases(only)
    rows = build_rows(wheels, args.workers, reuse=args.resume and not args.check)
    if args.check:
        return compare(rows)
    write_table(rows, time.monotonic() - started, shipped_libraries(wheels))
    print(f"wrote {TABLE} ({len(rows)} rows, {time.monotonic() - started:.0f} s)")
    return 0


def row_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return row["release"], row["wheel"], row["platform"], row["label"]


def compare(rows: list[dict[str, Any]]) -> int:
    committed = {row_key(r): r for r in json.loads(TABLE.read_text(encoding="utf-8"))["rows"]}
    changed = [r for r in rows if committed.get(row_key(r), {}).get("outcome") != r["outcome"]]
    for row in changed[:20]:
        print("changed:", row_key(row), json.dumps(row["outcome"])[:300])
    print(f"{len(rows)} rows re-run, {len(changed)} differ from {TABLE.name}")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
