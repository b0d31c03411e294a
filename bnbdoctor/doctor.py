"""The diagnosis pipeline in one call: host -> probes -> facts -> rules -> report."""

from __future__ import annotations

import threading
import time
from typing import Iterable

from bnbdoctor.facts import Facts
from bnbdoctor.hosts.base import Host
from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions, run_probes
from bnbdoctor.probes.native import warm_up
from bnbdoctor.probes.runner import ProgressCallback
from bnbdoctor.report import Report, build_report
from bnbdoctor.rules import all_rules, run_rules
from bnbdoctor.rules.base import Rule


def gather(host: Host, options: ProbeOptions | None = None, progress: ProgressCallback | None = None) -> Facts:
    """Run every probe against ``host``."""
    return run_probes(PROBES, ProbeContext(host, options or ProbeOptions()), progress)


def diagnose_facts(facts: Facts, rules: Iterable[Rule] | None = None, started: float | None = None) -> Report:
    """Run the rules on facts gathered earlier (live, recorded or from a saved report)."""
    return build_report(facts, run_rules(facts, list(rules) if rules is not None else all_rules()), started)


def diagnose(
    host: Host,
    options: ProbeOptions | None = None,
    rules: Iterable[Rule] | None = None,
    progress: ProgressCallback | None = None,
) -> Report:
    """Probe and diagnose. The rule modules load while the probes wait on subprocesses."""
    started = time.perf_counter()
    box: dict[str, Facts] = {}
    worker = threading.Thread(target=lambda: box.update(facts=gather(host, options, progress)), daemon=True)
    worker.start()
    chosen = list(rules) if rules is not None else all_rules()
    warm_up()
    worker.join()
    return diagnose_facts(box["facts"], chosen, started)
