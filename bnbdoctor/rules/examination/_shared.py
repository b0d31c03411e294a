"""What the examination rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

from bnbdoctor.facts import Facts, ProbeRun


def _failed(facts: Facts) -> list[tuple[int, ProbeRun]]:
    return [(i, run) for i, run in enumerate(facts.probes) if not run.ok and not run.skipped]
