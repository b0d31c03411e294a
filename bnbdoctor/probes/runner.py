"""Runs probes: independent ones side by side, each time-boxed; failures become facts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from bnbdoctor.facts import Facts, ProbeRun
from bnbdoctor.probes.base import Probe, ProbeContext, ProbeError

#: Called as each probe finishes (the TUI shows progress with it).
ProgressCallback = Callable[[ProbeRun], None]


def _waves(probes: list[Probe]) -> list[list[Probe]]:
    """Group probes so that each runs after the probes it requires."""
    names = {p.name for p in probes}
    done: set[str] = set()
    pending = list(probes)
    waves: list[list[Probe]] = []
    while pending:
        ready = [p for p in pending if all(r in done or r not in names for r in p.requires)]
        if not ready:  # a cycle: run the rest anyway, they will report missing facts
            ready = pending
        waves.append(ready)
        done.update(p.name for p in ready)
        pending = [p for p in pending if p not in ready]
    return waves


def _run_one(probe: Probe, ctx: ProbeContext) -> tuple[Any, ProbeRun]:
    """Run a probe in a daemon thread so that a hang can be abandoned, never waited on."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = probe.gather(ctx)
        except ProbeError as exc:
            box["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - any probe bug must become a fact
            box["error"] = f"{type(exc).__name__}: {exc}"

    started = time.perf_counter()
    worker = threading.Thread(target=target, name=f"probe-{probe.name}", daemon=True)
    worker.start()
    worker.join(probe.timeout_s)
    elapsed = time.perf_counter() - started
    if worker.is_alive():
        return None, ProbeRun(probe.name, False, elapsed, f"timed out after {probe.timeout_s:.0f}s")
    if "error" in box:
        return None, ProbeRun(probe.name, False, elapsed, box["error"])
    return box.get("value"), ProbeRun(probe.name, True, elapsed)


def _run_wave(
    wave: list[Probe], ctx: ProbeContext, by_name: dict[str, Probe], progress: ProgressCallback | None
) -> dict[str, tuple[Any, ProbeRun]]:
    """Run one wave's probes side by side; each reports as soon as it finishes."""
    results: dict[str, tuple[Any, ProbeRun]] = {}

    def run(probe: Probe) -> None:
        missing = [r for r in probe.requires if r in by_name and getattr(ctx.facts, by_name[r].section, None) is None]
        if missing:
            skipped = ProbeRun(probe.name, False, 0.0, f"needs facts from {', '.join(missing)}", skipped=True)
            results[probe.name] = (None, skipped)
        else:
            results[probe.name] = _run_one(probe, ctx)
        if progress is not None:
            progress(results[probe.name][1])

    threads = [threading.Thread(target=run, args=(p,), name=f"wave-{p.name}", daemon=True) for p in wave]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def run_probes(
    probes: Iterable[Probe],
    ctx: ProbeContext,
    progress: ProgressCallback | None = None,
) -> Facts:
    """Fill ``ctx.facts`` from every probe and return it."""
    facts = ctx.facts
    facts.source = ctx.host.describe()
    probes = list(probes)
    by_name = {p.name: p for p in probes}
    for wave in _waves(probes):
        results = _run_wave(wave, ctx, by_name, progress)
        for probe in wave:
            value, record = results[probe.name]
            facts.probes.append(record)
            if value is not None:
                setattr(facts, probe.section, value)
    return facts
