"""Fuzz campaign for the non-native parsers (logs, saved reports, fit's model input, machine manifests) and for
every rule over typed facts (``facts``: recorded machines' facts with fields changed to odd values of their types).

Each parser is fed mutated copies of real seeds (the logs in ``tests/data/*_logs``, the recorded
machines' reports, the configs in ``tests/data/fit`` laid out as model folders, index files,
safetensors headers and Hugging Face cache entries, the recorded ``machine.json`` manifests). A
mutation is either byte-level (flips, cuts, repeats, splices, interesting tokens) or, for JSON,
structure-aware (a node replaced by an absurd value: huge, negative, infinite, the wrong type, a lone
surrogate, deep nesting, a long list). An input fails when it raises anything but the parser's own
one-line error, runs past ``--timeout`` seconds of CPU time (``hang``; CPU, not wall time, so a loaded
box does not invent hangs), or allocates more than ``--mem-mib`` MiB at its peak (``mem``). Each parser
runs in its own process.

Time and memory are measured apart, because tracing allocations doubles the time of the code it traces
(0.39 s untraced, 0.87 s traced for the worst log): every input runs untraced and timed, with the
process's peak resident size reset before it (``/proc/self/clear_refs``) and read after it; an input
whose peak grew by more than :data:`RSS_RECHECK_MIB`, and every :data:`TRACE_EVERY`-th input, runs again
under tracemalloc for its peak allocation (which a reused heap cannot hide). Where the peak cannot be
reset, every input is traced.

Printed per parser: inputs, failures, distinct failures, the worst time for one input (and which
seed it came from), and peak memory. The smallest input of each distinct failure is written to
``--out`` (``<parser>-<n>-<kind>.bin`` and ``failures.json``): each one becomes a regression test
under ``tests/data/fuzz/``.

    python bench/fuzz_inputs.py                      # 100,000 inputs per parser
    python bench/fuzz_inputs.py --inputs 2000 --parsers log model
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bnbdoctor.fit.options import FitInputError  # noqa: E402
from bnbdoctor.hosts.fixture import FixtureError  # noqa: E402
from bnbdoctor.report_io import ReportError  # noqa: E402

MAX_INPUT = 4 * 1024 * 1024
#: An input whose peak resident size grew by more than this runs again under tracemalloc.
RSS_RECHECK_MIB = 32.0
#: And every this-many-th input does, whatever its resident size did.
TRACE_EVERY = 10


class Hang(Exception):
    """Raised by the interval timer inside an input that runs too long."""


# ---------------------------------------------------------------------------------------------- mutation

_TOKENS = [
    b"0",
    b"-1",
    b"1e999",
    b"-1e999",
    b"NaN",
    b"Infinity",
    b"99999999999999999999999999",
    b"4294967296",
    b"18446744073709551616",
    b"1" * 5000,
    b'"abc"',
    b"[]",
    b"{}",
    b"null",
    b"true",
    b'"\\udce9"',
    b"\\udce9",
    b"\xff\xfe",
    b"\x00",
    b"\x1b[31m",
    b"\r",
    b"&amp;",
    b"'",
    b'"',
    b"/",
    b"\\",
    b"C:\\",
    b"/site-packages/bitsandbytes/",
    b"libbitsandbytes_cuda121.so",
    b"=" * 200,
    b" " * 300,
    b"/" * 300,
]
_VALUES: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63,
    2**64,
    10**30,
    10**300,
    1e308,
    0.5,
    12.1,
    -0.0,
    "abc",
    "",
    "12",
    "cpu",
    "llama",
    [],
    {},
    [1, 2],
    [[1]],
    {"a": 1},
    True,
    False,
    None,
    "\udce9",
    "x" * 5000,
    list(range(200)),
]


def _json_nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):
            yield from _json_nodes(item, (*path, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        copy[head] = _replace(value[head], rest, new)
        return copy
    copy_list = list(value)
    copy_list[head] = _replace(value[head], rest, new)
    return copy_list


def _absurd(rng: random.Random, old: Any) -> Any:
    choice = rng.random()
    if choice < 0.1:
        return f"{_DEEP}{rng.choice([30, 200, 2000, 100000])}"  # nesting, spliced in by _dumps
    if choice < 0.2 and isinstance(old, (list, str)) and old:
        return old * rng.choice([2, 50, 200]) if len(old) < 1000 and _DEEP not in str(old)[:100] else old
    if choice < 0.3 and isinstance(old, int) and not isinstance(old, bool):
        return rng.choice([old * 1000, -old, old + 1, 10 ** rng.randint(3, 40), 0])
    return rng.choice(_VALUES)


def mutate_json(rng: random.Random, data: Any) -> Any:
    """A copy of ``data`` with one to three nodes replaced, deleted or multiplied."""
    for _ in range(rng.randint(1, 3)):
        nodes = list(_json_nodes(data))
        path, old = rng.choice(nodes)
        if path and rng.random() < 0.15:
            parent_path, key = path[:-1], path[-1]
            parent = data
            for step in parent_path:
                parent = parent[step]
            if isinstance(parent, dict):
                data = _replace(data, parent_path, {k: v for k, v in parent.items() if k != key})
                continue
        data = _replace(data, path, _absurd(rng, old))
    return data


_DEEP = "\u0000deep:"


def _dumps(data: Any) -> bytes:
    text = json.dumps(data, indent=1, allow_nan=True)
    marker = json.dumps(_DEEP)[:-1]
    while marker in text:
        start = text.index(marker)
        end = text.index('"', start + len(marker))
        depth = int(text[start + len(marker) : end])
        text = text[:start] + "[" * depth + "1" + "]" * depth + text[end + 1 :]
    return text.encode("utf-8", "surrogatepass")


def mutate_bytes(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    """One to four byte-level mutations of ``data``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        n = len(out)
        op = rng.randrange(8)
        at = rng.randrange(n + 1)
        if op == 0 and n:
            out[min(at, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[at:at] = rng.choice(_TOKENS)
        elif op == 2 and n:
            del out[at : at + rng.randint(1, 64)]
        elif op == 3 and n:
            end = min(n, at + rng.randint(1, 200))
            out[at:at] = out[at:end] * min(rng.choice([2, 10, 200]), MAX_INPUT // max(1, end - at))
        elif op == 4 and n:
            del out[at:]
        elif op == 5:
            other = rng.choice(seeds)
            start = rng.randrange(len(other) + 1)
            out[at:at] = other[start : start + rng.randint(1, 2000)]
        elif op == 6 and n:
            # a line repeated: the pattern of a log that repeats one failure thousands of times
            start = out.rfind(b"\n", 0, at) + 1
            end = out.find(b"\n", at)
            line = bytes(out[start : end if end != -1 else n]) + b"\n"
            out[start:start] = line * min(rng.choice([10, 1000, 20000]), MAX_INPUT // len(line))
        else:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        if len(out) > MAX_INPUT:
            del out[MAX_INPUT:]
    return bytes(out)


# ---------------------------------------------------------------------------------------------- targets


@dataclass
class Target:
    """One parser: its seeds, how an input is fed, and the errors that are its one-line answers."""

    name: str
    seeds: Callable[[], list[bytes]]
    feed: Callable[[bytes, int], None]  # (input, iteration) -> None
    expected: tuple[type[BaseException], ...] = ()
    json: bool = False
    mutate: Callable[[random.Random, bytes, list[bytes]], bytes] | None = None


def _log_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted((ROOT / "tests" / "data").glob("*_logs/*.txt"))]


def _feed_log(data: bytes, iteration: int) -> None:
    from bnbdoctor.logs.extract import extract

    extract(io.BytesIO(data))
    if iteration % 50 == 0:
        from bnbdoctor.explain.pipeline import explain_stream
        from bnbdoctor.render import OutputFormat, ReportKind, render

        report = explain_stream(io.BytesIO(data), "log")
        for fmt in (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN):
            render(report, fmt, ReportKind.EXPLAIN).encode("utf-8")


def _report_seeds() -> list[bytes]:
    from bnbdoctor.doctor import diagnose
    from bnbdoctor.hosts.fixture import FixtureHost, list_fixtures
    from bnbdoctor.render.json import render_json

    seeds = []
    for name, _ in list_fixtures()[:12]:
        seeds.append(render_json(diagnose(FixtureHost.named(name))).encode("utf-8"))
    return seeds


_SCRATCH = Path(tempfile.mkdtemp(prefix="bnbdoctor-fuzz-"))


def _feed_report(data: bytes, iteration: int) -> None:
    from bnbdoctor.report_io import load_facts

    path = _SCRATCH / "report.json"
    path.write_bytes(data)
    facts, _header = load_facts(str(path))
    if iteration % 50 == 0:
        from bnbdoctor.doctor import diagnose_facts
        from bnbdoctor.redact import Redactor
        from bnbdoctor.render import OutputFormat, ReportKind, render
        from bnbdoctor.report_io import redact_report

        report = redact_report(diagnose_facts(facts), Redactor())
        for fmt in (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN):
            render(report, fmt, ReportKind.DOCTOR).encode("utf-8")


def _safetensors(header: dict[str, Any]) -> str:
    body = json.dumps(header).encode("utf-8")
    return (len(body).to_bytes(8, "little") + body).decode("latin-1")


def _model_seeds() -> list[bytes]:
    from bnbdoctor.fit.approx import tensors_from_config

    seeds = []
    for path in sorted((ROOT / "tests" / "data" / "fit").glob("*.json")):
        config = json.loads(path.read_text())
        text = json.dumps(config, indent=2)
        tensors = tensors_from_config(config) or []
        header = {n: {"dtype": d, "shape": s, "data_offsets": [0, 0]} for n, s, d in tensors[:40]}
        half = len(header) // 2
        names = list(header)
        shard1 = {k: header[k] for k in names[:half]}
        shard2 = {k: header[k] for k in names[half:]}
        weight_map = {
            **dict.fromkeys(shard1, "model-00001-of-00002.safetensors"),
            **dict.fromkeys(shard2, "model-00002-of-00002.safetensors"),
        }
        index = {"metadata": {"total_size": 1}, "weight_map": weight_map}
        layouts = [
            {"m/config.json": text},
            {"m/config.json": text, "m/model.safetensors": _safetensors(header)},
            {
                "m/config.json": text,
                "m/model.safetensors.index.json": json.dumps(index, indent=2),
                "m/model-00001-of-00002.safetensors": _safetensors(shard1),
                "m/model-00002-of-00002.safetensors": _safetensors(shard2),
            },
            {
                "hub/models--org--m/snapshots/abc/config.json": text,
                "hub/models--org--m/refs/main": "abc",
                "hub/models--org--m/snapshots/abc/model.safetensors": _safetensors(header),
            },
        ]
        for files in layouts:
            given = "hub/models--org--m" if "hub/models--org--m/refs/main" in files else "m"
            for quant in ("4bit", "8bit"):
                bundle = {"files": files, "given": given, "trust": False, "quant": quant, "dq": True, "dtype": None}
                seeds.append(json.dumps(bundle).encode("utf-8"))
    return seeds


def _mutate_model(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    """A bundle with one of its files mutated (structurally when it is JSON, or its header)."""
    bundle = json.loads(data)
    files: dict[str, str] = bundle["files"]
    name = rng.choice(sorted(files))
    content = files[name]
    raw = content.encode("latin-1", "replace") if name.endswith(".safetensors") else content.encode("utf-8", "replace")
    if name.endswith(".safetensors") and len(raw) > 8 and rng.random() < 0.7:
        try:
            header = json.loads(raw[8:])
            body = _dumps(mutate_json(rng, header)) if rng.random() < 0.8 else mutate_bytes(rng, raw[8:], seeds)
            prefix = len(body).to_bytes(8, "little") if rng.random() < 0.9 else rng.randbytes(8)
            raw = prefix + body
        except ValueError:
            raw = mutate_bytes(rng, raw, seeds)
    elif rng.random() < 0.75:
        try:
            raw = _dumps(mutate_json(rng, json.loads(raw)))
        except ValueError:
            raw = mutate_bytes(rng, raw, seeds)
    else:
        raw = mutate_bytes(rng, raw, seeds)
    files[name] = raw.decode("latin-1") if name.endswith(".safetensors") else raw.decode("utf-8", "surrogateescape")
    if rng.random() < 0.1:
        bundle["dtype"] = rng.choice(["float16", "bfloat16", "float32", "int8", None])
    return json.dumps(bundle).encode("utf-8", "surrogatepass")


def _feed_model(data: bytes, iteration: int) -> None:
    import shutil

    from bnbdoctor.fit.approx import estimate
    from bnbdoctor.fit.model_input import resolve_model
    from bnbdoctor.hosts.live import LiveHost

    bundle = json.loads(data)
    folder = _SCRATCH / "model"
    shutil.rmtree(folder, ignore_errors=True)
    for name, content in bundle["files"].items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".safetensors"):
            target.write_bytes(content.encode("latin-1", "replace"))
        else:
            target.write_bytes(content.encode("utf-8", "surrogateescape"))
    host = LiveHost()
    model = resolve_model(host, str(folder / bundle["given"]), bool(bundle.get("trust")))
    estimate(host, model.config, model.checkpoint_files, bundle["quant"], bundle.get("dtype"), bool(bundle.get("dq")))


_MANIFEST_ROOTS: list[Path] = []


def _manifest_seeds() -> list[bytes]:
    seeds = []
    for manifest in sorted((ROOT / "platform_fixtures").glob("*/machine.json")):
        # the fixture's name rides in front of the manifest, so the mutated manifest keeps its root/
        seeds.append(manifest.parent.name.encode() + b"\n" + manifest.read_bytes())
    return seeds


def _mutate_manifest(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    name, _, body = data.partition(b"\n")
    if rng.random() < 0.75:
        try:
            return name + b"\n" + _dumps(mutate_json(rng, json.loads(body)))
        except ValueError:
            pass
    return name + b"\n" + mutate_bytes(rng, body, seeds)


def _feed_manifest(data: bytes, iteration: int) -> None:
    from bnbdoctor.environment import ALLOWED_ENV
    from bnbdoctor.hosts.fixture import FixtureHost

    name, _, body = data.partition(b"\n")
    folder = _SCRATCH / "machine"
    folder.mkdir(exist_ok=True)
    (folder / "machine.json").write_bytes(body)
    root = folder / "root"
    real = ROOT / "platform_fixtures" / name.decode("utf-8", "replace") / "root"
    if root.is_symlink() or root.exists():
        root.unlink()
    if real.is_dir():
        root.symlink_to(real)
    host = FixtureHost(folder)
    host.os_info()
    for variable in sorted(ALLOWED_ENV)[:40]:
        host.getenv(variable)
    host.nvml()
    python = host.current_python()
    for record in host.manifest.get("commands") or []:
        host.run(list(record.get("argv") or []) or ["true"])
    for purpose in ("facts", "dlopen", "load"):
        host.run_python(python.executable, "", purpose=purpose)
    if iteration % 100 == 0:
        from bnbdoctor.doctor import diagnose

        diagnose(host)


_FACTS: dict[str, Any] = {}


def _facts_seeds() -> list[bytes]:
    """A recorded machine's name and a number: the variant of its facts (:func:`random_variant`) is drawn from it."""
    return [f"{m.parent.name}\n0".encode() for m in sorted((ROOT / "platform_fixtures").glob("*/machine.json"))]


def _mutate_facts(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    return data.partition(b"\n")[0] + b"\n" + str(rng.randrange(1 << 62)).encode()


def _feed_facts(data: bytes, iteration: int) -> None:
    """Every rule, through the doctor's pipeline, on a recorded machine's facts with up to three fields changed to
    odd values of their types; a check that raises fails the input (the report would state a bnbdoctor bug)."""
    from bnbdoctor.doctor import diagnose
    from bnbdoctor.hosts.fixture import FixtureHost
    from bnbdoctor.ruledocs.fuzz import random_variant
    from bnbdoctor.rules import all_rules
    from bnbdoctor.rules.engine import DOCTOR, crashed, run_rules

    name, _, number = data.decode().partition("\n")
    if name not in _FACTS:
        _FACTS[name] = diagnose(FixtureHost.named(name)).facts
    said, facts = random_variant(random.Random(int(number)), _FACTS[name]) if int(number) else ([], _FACTS[name])
    failed = crashed(run_rules(facts, all_rules(), DOCTOR))
    if failed:
        raise RuntimeError(f"{failed[0].rule_id} raised {failed[0].evidence[0].value} on {name} with {said}")


TARGETS: dict[str, Target] = {
    "log": Target("log", _log_seeds, _feed_log),
    "report": Target("report", _report_seeds, _feed_report, (ReportError,), json=True),
    "model": Target("model", _model_seeds, _feed_model, (FitInputError,), mutate=_mutate_model),
    "manifest": Target("manifest", _manifest_seeds, _feed_manifest, (FixtureError,), mutate=_mutate_manifest),
    "facts": Target("facts", _facts_seeds, _feed_facts, mutate=_mutate_facts),
}


# ---------------------------------------------------------------------------------------------- running


@dataclass
class Result:
    parser: str
    inputs: int = 0
    failures: int = 0
    distinct: dict[str, dict[str, Any]] = field(default_factory=dict)
    worst_s: float = 0.0
    worst_seed: int = -1
    peak_mib: float = 0.0
    seconds: float = 0.0


def _where(tb: TracebackType | None, frame: FrameType | None = None) -> str:
    """``file:line(function)`` of the innermost bnbdoctor frame."""
    frames = traceback.extract_tb(tb) if tb is not None else traceback.extract_stack(frame)
    inside = [f for f in frames if "/bnbdoctor/" in f.filename and "/bench/" not in f.filename]
    last = inside[-1] if inside else (frames[-1] if frames else None)
    if last is None:
        return "?"
    return f"{os.path.relpath(last.filename, ROOT)}:{last.lineno}({last.name})"


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _status_mib(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> bool:
    """Reset the process's peak resident size (Linux 4.0+); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        _status_mib("VmHWM:")
    except OSError:
        return False
    return True


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(_where(None, frame))


def run_target(
    name: str, inputs: int, seed: int, timeout: float, growth: float, out: str | None, seconds: float = 0.0
) -> Result:
    target = TARGETS[name]
    rng = random.Random(seed)
    seeds = target.seeds()
    result = Result(name)
    # CPU time, not wall time: a loaded box stretches wall time, never the work an input costs.
    signal.signal(signal.SIGPROF, _on_alarm)
    for index, data in enumerate(seeds):  # warm up: imports, caches; the seeds must pass
        target.feed(data, 0 if index == 0 else 1)
    can_reset_rss = _reset_peak_rss()
    started = time.perf_counter()
    for iteration in range(1, inputs + 1):
        if iteration % 1000 == 0:
            print(
                f"{name}: {iteration - 1} inputs, {result.failures} failures ({len(result.distinct)} distinct), "
                f"worst {result.worst_s:.3f}s, peak {_rss_mib():.0f} MiB",
                file=sys.stderr,
                flush=True,
            )
            if seconds and time.perf_counter() - started > seconds:
                break
        pick = rng.randrange(len(seeds))
        if target.mutate is not None:
            data = target.mutate(rng, seeds[pick], seeds)
        elif target.json and rng.random() < 0.75:
            try:
                data = _dumps(mutate_json(rng, json.loads(seeds[pick])))
            except ValueError:
                data = mutate_bytes(rng, seeds[pick], seeds)
        else:
            data = mutate_bytes(rng, seeds[pick], seeds)
        rss_before = _status_mib("VmRSS:") if can_reset_rss and _reset_peak_rss() else 0.0
        t0 = time.process_time()
        key = _feed_once(target, data, iteration, timeout)
        elapsed = time.process_time() - t0
        allocated = _status_mib("VmHWM:") - rss_before if can_reset_rss else 0.0  # else: traced below
        if key is None and (allocated > RSS_RECHECK_MIB or iteration % TRACE_EVERY == 0 or not can_reset_rss):
            tracemalloc.start()  # the parser's own allocations, not the campaign's mutation step
            try:
                key = _feed_once(target, data, iteration, timeout * 10)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            allocated = peak / (1 << 20)
        result.peak_mib = max(result.peak_mib, allocated)
        if key is None and allocated > growth:
            key = "mem@allocation"
        if elapsed > result.worst_s:
            result.worst_s, result.worst_seed = elapsed, pick
        result.inputs += 1
        if key is not None:
            result.failures += 1
            seen = result.distinct.get(key)
            if seen is None or len(data) < seen["bytes"]:
                result.distinct[key] = {"bytes": len(data), "count": (seen or {}).get("count", 0), "data": data}
            result.distinct[key]["count"] += 1
    result.seconds = time.perf_counter() - started
    if out:
        _save(result, Path(out))
    for entry in result.distinct.values():
        entry.pop("data", None)
    return result


def _feed_once(target: Target, data: bytes, iteration: int, timeout: float) -> str | None:
    """Feed one input under a CPU-time limit: None, or the key of the failure it showed."""
    signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        target.feed(data, iteration)
    except Hang as exc:
        return f"hang@{exc}"
    except target.expected:
        return None
    except RecursionError:
        return f"RecursionError@{_where(sys.exc_info()[2])}"
    except Exception as exc:  # noqa: BLE001 - every unexpected exception is a finding
        return f"{type(exc).__name__}@{_where(exc.__traceback__)}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return None


def _save(result: Result, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    listing = []
    for number, (key, entry) in enumerate(sorted(result.distinct.items())):
        kind = "hang" if key.startswith("hang@") else "mem" if key.startswith("mem@") else "crash"
        file = out / f"{result.parser}-{number:02d}-{kind}.bin"
        file.write_bytes(entry["data"])
        listing.append({"file": file.name, "where": key, "bytes": entry["bytes"], "count": entry["count"]})
    (out / f"{result.parser}-failures.json").write_text(json.dumps(listing, indent=2) + "\n")


def _child(name: str, args: argparse.Namespace, queue: Any) -> None:
    try:
        result = run_target(name, args.inputs, args.seed, args.timeout, args.mem_mib, args.out, args.seconds)
    except BaseException as exc:  # the campaign itself broke: report it as that parser's failure
        key = f"campaign@{type(exc).__name__}: {exc}"[:300]
        broken = Result(name, failures=1, distinct={key: {"count": 1, "bytes": 0}})
        queue.put(broken.__dict__)
        raise
    queue.put(result.__dict__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="mutated inputs per parser")
    parser.add_argument("--parsers", nargs="+", choices=sorted(TARGETS), default=list(TARGETS))
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--timeout", type=float, default=2.0, help="CPU seconds after which one input is a hang")
    parser.add_argument("--mem-mib", type=float, default=200.0, help="MiB one input may allocate at its peak")
    parser.add_argument("--out", default=None, help="folder for the smallest input of each distinct failure")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop each parser after this long (0: never)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    context = multiprocessing.get_context("fork")
    results = []
    for name in args.parsers:
        queue = context.Queue()
        process = context.Process(target=_child, args=(name, args, queue))
        process.start()
        results.append(queue.get())
        process.join()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'parser':<10}{'inputs':>9}{'failures':>10}{'distinct':>10}{'worst s':>9}{'peak MiB':>10}{'wall s':>8}")
        for r in results:
            print(
                f"{r['parser']:<10}{r['inputs']:>9}{r['failures']:>10}{len(r['distinct']):>10}"
                f"{r['worst_s']:>9.3f}{r['peak_mib']:>10.1f}{r['seconds']:>8.0f}"
            )
            for key, entry in sorted(r["distinct"].items()):
                print(f"    {entry['count']:>6} x {key}  (smallest: {entry['bytes']} bytes)")
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
