"""Where one `bnbdoctor --json` run spends its time, phase by phase; run by bench_doctor.py with the
installed copy's interpreter (``python bench/doctor_phases.py PATIENT_PYTHON``), it prints one JSON object.

The phases are the command line's, in its order: importing the command line, building the parser and the
host (which imports the probes), each probe, loading the rules, running them, redacting, rendering. The
probes run one after another here, unlike in `bnbdoctor`, which runs independent ones side by side, so that
each one's CPU (its own and that of the commands it starts) is its own; a phase's CPU is this process's
user + system time, ``children_cpu_s`` that of the commands it waited for.
"""

from __future__ import annotations

import itertools
import json
import resource
import sys
import time

marks: list[tuple[str, float, float, float]] = []


def cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def mark(name: str) -> None:
    marks.append((name, time.perf_counter(), *cpu()))


def main() -> int:
    mark("start")
    from bnbdoctor import cli

    mark("import bnbdoctor.cli")
    args = cli.build_parser().parse_args(["--json", "--python", sys.argv[1]])
    host = cli._host(args)
    mark("parser and host (imports the probes)")
    from bnbdoctor.probes import PROBES, ProbeContext, ProbeOptions
    from bnbdoctor.probes.runner import _run_one, _waves

    started = time.perf_counter()
    ctx = ProbeContext(host, ProbeOptions(python=args.python, load=not args.no_load))
    facts = ctx.facts
    facts.source = host.describe()
    for wave in _waves(list(PROBES)):
        for probe in wave:
            value, record = _run_one(probe, ctx)
            facts.probes.append(record)
            if value is not None:
                setattr(facts, probe.section, value)
            mark(f"probe {probe.name}")
    from bnbdoctor.rules import rules_for, run_rules
    from bnbdoctor.rules.engine import DOCTOR

    rules = rules_for({"probes"})  # as bnbdoctor.doctor.diagnose: a machine's facts, no log, fit or lint rules
    mark("load the rules")
    from bnbdoctor.report import build_report

    report = build_report(facts, run_rules(facts, rules, DOCTOR), started)
    mark("run the rules")
    from bnbdoctor.redact import Redactor

    report = cli._redact(report, Redactor.for_machine(host.os_info()), args)
    mark("redact")
    from bnbdoctor.render import OutputFormat, ReportKind, renderer_for

    renderer_for(OutputFormat.JSON, ReportKind.DOCTOR).render(report, color=False)
    mark("render --json")
    phases = [
        {"phase": name, "wall_s": wall - wall0, "cpu_s": own - own0, "children_cpu_s": kids - kids0}
        for (_, wall0, own0, kids0), (name, wall, own, kids) in itertools.pairwise(marks)
    ]
    print(json.dumps({"phases": phases}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
