"""Snapshot what bnbdoctor concludes on every kept input, to prove a refactor changed no behaviour.

Runs the installed CLI (``python -m bnbdoctor``) on every recorded machine (``--fixture``), every
kept log (``explain``), every model config the fit tests keep (``fit``), the lint samples (``lint``)
and every rule case (the whole finding: title, explanation, evidence, every command), in text,
JSON and Markdown, and writes one file per input into a folder, with the run's moving parts (the
creation time, timings) blanked. Compare two snapshots with ``diff -r``:

    python tools/behaviour_snapshot.py /tmp/before      # on the old commit
    python tools/behaviour_snapshot.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOG_FOLDERS = ("tests/data/real_logs", "tests/data/synthetic_logs", "tests/data/outcome_logs")
#: Values that differ from run to run whatever the code does.
_MOVING = re.compile(r'("created": |"elapsed_s": |"duration_s": |"seconds": )("[^"]*"|[0-9.e-]+)')
_MOVING_KEYS = frozenset({"created", "timings", "duration_s", "elapsed_s", "seconds", "peak_rss_bytes"})
_MOVING_TEXT = re.compile(r"(\d+(\.\d+)?) ?(ms|s)\b|(\| yes \| )[0-9.]+( \|)|(\"[\w.]+\": )[0-9]+\.[0-9]+")


def _blank(text: str) -> str:
    text = _MOVING.sub(r"\1null", text)
    return text


def _blank_json(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: (None if k in _MOVING_KEYS else _blank_json(v)) for k, v in document.items()}
    if isinstance(document, list):
        return [_blank_json(v) for v in document]
    return document


def _run(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bnbdoctor", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # A HOME that does not exist: no user's configuration or cache reaches the outputs.
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/snapshot-home", "NO_COLOR": "1", "COLUMNS": "100"},  # noqa: S108
        timeout=300,
        check=False,
    )
    out = _MOVING_TEXT.sub("<t>", done.stdout)
    if "--json" in args:
        with contextlib.suppress(ValueError):  # not JSON (a usage error): compared as text
            out = json.dumps(_blank_json(json.loads(done.stdout)), indent=1, sort_keys=True)
    else:
        out = _blank(out)
    return f"exit {done.returncode}\n{out}\nstderr:\n{_MOVING_TEXT.sub('<t>', done.stderr)}"


def _jobs() -> dict[str, list[str]]:
    jobs: dict[str, list[str]] = {}
    for fixture in sorted(p.name for p in (ROOT / "platform_fixtures").iterdir() if p.is_dir()):
        for fmt in ("--json", "--text", "--markdown"):
            jobs[f"doctor/{fixture}{fmt}"] = ["--fixture", fixture, fmt]
    for folder in LOG_FOLDERS:
        for log in sorted((ROOT / folder).glob("*.txt")):
            for fmt in ("--json", "--text", "--markdown"):
                jobs[f"explain/{log.parent.name}/{log.stem}{fmt}"] = ["explain", str(log.relative_to(ROOT)), fmt]
    for model in sorted((ROOT / "tests/data/fit").glob("*.json")):
        jobs[f"fit/{model.stem}--json"] = [
            "fit",
            str(model.relative_to(ROOT)),
            "--json",
            "--gpus",
            "24GiB",
            "--cpu-memory",
            "64GiB",
            "--python",
            sys.executable,
        ]
    jobs["lint/all--json"] = ["lint", "tests/data/lint", "--json", "--no-python"]
    jobs["lint/all--text"] = ["lint", "tests/data/lint", "--no-python"]
    return jobs


def _rule_cases() -> dict[str, Any]:
    """Every rule case's whole outcome: the findings, passed and skipped checks, as JSON."""
    sys.path.insert(0, str(ROOT))
    from bnbdoctor.ruledocs.cases import all_cases, run_case
    from bnbdoctor.serde import to_jsonable

    outcomes: dict[str, Any] = {}
    for case in all_cases():
        diagnosis = run_case(case)
        outcomes[case.label] = to_jsonable(diagnosis)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--only", help="a regular expression: only the inputs whose names match")
    options = parser.parse_args()
    jobs = _jobs()
    if options.only:
        jobs = {k: v for k, v in jobs.items() if re.search(options.only, k)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(jobs, pool.map(_run, jobs.values()), strict=True))
    for name, text in results.items():
        path = options.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not options.only or re.search(options.only, "cases"):
        cases = _rule_cases()
        for label, outcome in cases.items():
            path = options.folder / "cases" / f"{label}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(outcome, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(results)} runs and the rule cases written under {options.folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
