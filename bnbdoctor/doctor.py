"""The diagnosis pipeline in one call: host -> probes -> facts -> rules -> report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from bnbdoctor.facts import Facts
from bnbdoctor.hosts.base import Host
from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions, run_probes
from bnbdoctor.probes.native import warm_up
from bnbdoctor.probes.runner import ProgressCallback
from bnbdoctor.report import Report, build_report
from bnbdoctor.rules import mode_sections, rules_for, run_rules
from bnbdoctor.rules.base import Rule
from bnbdoctor.rules.engine import DOCTOR, Pipeline

T = TypeVar("T")


def gather(host: Host, options: ProbeOptions | None = None, progress: ProgressCallback | None = None) -> Facts:
    """Run every probe against ``host``."""
    return run_probes(PROBES, ProbeContext(host, options or ProbeOptions()), progress)


def diagnose_facts(
    facts: Facts, rules: Iterable[Rule] | None = None, started: float | None = None, pipeline: Pipeline = DOCTOR
) -> Report:
    """Run ``pipeline`` (the doctor's, by default) on facts gathered earlier (live, recorded, from a saved
    report, a log, a fit run or lint) over ``rules`` (default: all of them, as the pipeline selects)."""
    chosen = list(rules) if rules is not None else rules_for(mode_sections(facts))
    return build_report(facts, run_rules(facts, chosen, pipeline), started)


class Cancelled(Exception):
    """The caller gave up waiting (the app is quitting); the work was abandoned, not stopped."""


def in_background(fn: Callable[[], T], name: str = "bnbdoctor-task") -> Callable[..., T]:
    """Start ``fn()`` in a daemon thread now; the returned ``wait(cancelled=None, poll_s=0.05)``
    returns its result or re-raises its exception, or raises :class:`Cancelled` as soon as
    ``cancelled()`` turns true (a hung NVML call or dlopen never holds up the caller)."""
    results: list[T] = []  # fn's result, once it has returned
    errors: list[BaseException] = []  # or what it raised
    done = threading.Event()

    def call() -> None:
        try:
            results.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=call, name=name, daemon=True).start()

    def wait(cancelled: Callable[[], bool] | None = None, poll_s: float = 0.05) -> T:
        while not done.wait(poll_s if cancelled is not None else None):
            if cancelled is not None and cancelled():
                raise Cancelled()
        if errors:
            raise errors[0]
        return results[0]

    return wait


def diagnose(
    host: Host,
    options: ProbeOptions | None = None,
    rules: Iterable[Rule] | None = None,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Report:
    """Probe and diagnose. The rule modules load while the probes wait on subprocesses;
    ``cancelled`` lets a caller (the app) abandon a run whose probes hang."""
    started = time.perf_counter()
    wait = in_background(lambda: gather(host, options, progress), name="bnbdoctor-probes")
    chosen = list(rules) if rules is not None else rules_for({"probes"})  # a machine's facts: no log, fit or lint
    warm_up()
    return diagnose_facts(wait(cancelled), chosen, started)
