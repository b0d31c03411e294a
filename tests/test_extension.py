"""Adding a rule, a log family or an output format touches what docs/architecture.md says, and nothing else.

A temporary copy of the checkout gets a throwaway rule (BNB199, with a firing and a passing case), a
throwaway log family (a new failure: its catalog entry, its signature, one collector line, a log that shows
it, and the log-side rule BNB598 that reads it) and a throwaway output format (``--canary``), each written
only into the files the "To add …" table of ``docs/architecture.md`` names for it; then the table's "then"
steps run (``python -m bnbdoctor.ruledocs`` for the pages, the index and the case snapshots), and the tests
that show whole documents (the fast suite, the Markdown goldens, the app's snapshots and first minutes,
replayed reports, explain on every kept log) must pass there, unchanged. A test that had to be edited for
the new rule, or a file the table does not name, fails this test. Before its rule is added, the log family
must be refused (tests/test_log_families.py): recognised lines that no rule reads would say nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

RULE_FILE = "bnbdoctor/rules/platform/bnb199_extension_canary.py"
RULE_SOURCE = '''"""BNB199 extension-canary: passes when the kernel is not the canary (a throwaway rule)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev


@rule(
    Severity.WARNING,
    "The machine's kernel is not the canary kernel",
    needs=("platform",),
)
def extension_canary(facts: Facts) -> Hit | None:
    """## What it detects

    A machine whose kernel release is `canary`: no machine has one, so the rule passes everywhere.

    ## Why it matters

    It is a throwaway rule: the extension test adds it to check that a new rule needs nothing but its file and its
    cases.

    ## How to fix

    Nothing to fix.
    """
    platform = facts.platform
    assert platform is not None
    if platform.kernel != "canary":
        return None
    return Hit(
        title="this machine runs the canary kernel",
        explanation="The kernel release is 'canary'.",
        evidence=[ev("kernel", platform.kernel, "platform.kernel")],
        remediation=Remediation("Nothing to do: this finding only exists in the extension test."),
    )
'''
CASES = {
    "tests/rule_cases/BNB199/fires-canary.json": {
        "description": "The A100 server with the canary kernel",
        "base": {"fixture": "a100-healthy"},
        "set": {"platform.kernel": "canary"},
        "expect": {"fires": True, "severity": "warning", "title": "canary kernel"},
        "example": True,
    },
    "tests/rule_cases/BNB199/passes-a100.json": {
        "description": "The A100 server as recorded",
        "base": {"fixture": "a100-healthy"},
        "expect": {"fires": False},
    },
}

#: The throwaway log family: a new failure, "CanaryError: the canary stopped singing".
CATALOG = "bnbdoctor/data/failure_catalog.json"
CATALOG_ENTRY = {
    "id": "canary_stopped_singing",
    "title": "The canary stopped singing (a throwaway failure of tests/test_extension.py)",
    "log_excerpt": "CanaryError: the canary stopped singing",
    "platform": "any",
    "versions": "any",
    "root_cause": "The mine's air went bad.",
    "remediation": "Leave the mine.",
    "urls": [],
    "added": "the extension test",
}
SIGNATURE_EDIT = (
    "bnbdoctor/knowledge/signatures.py",
    "# --- facts (no failure) ",
    (
        'CANARY_STOPPED_SINGING = _declare(\n    "canary_stopped_singing", ROOT, "workflow", '
        '("canary_stopped_singing",), '
        '"the canary stopped singing"\n)\n'
    ),
)
COLLECTOR_FILE = "bnbdoctor/logs/collectors/workflow.py"
COLLECTOR_LINE = (
    '\n\nrecognises(S.CANARY_STOPPED_SINGING, "canary stopped", r"CanaryError: the canary stopped singing")\n'
)
LOG_FILE = "tests/data/synthetic_logs/canary_stopped_singing.txt"
LOG_TEXT = """$ python descend.py
Traceback (most recent call last):
  File "/home/miner/descend.py", line 3, in <module>
    listen()
  File "/home/miner/descend.py", line 2, in listen
    raise CanaryError("the canary stopped singing")
CanaryError: the canary stopped singing
"""
LOG_RULE_FILE = "bnbdoctor/rules/workflow_logs/bnb598_log_canary_stopped_singing.py"
LOG_RULE_SOURCE = '''"""BNB598 log-canary-stopped-singing: passes when no canary went silent (throwaway)."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule


@rule(
    Severity.ERROR,
    "The log shows no canary that stopped singing",
    needs=("log",),
    covers=("canary_stopped_singing",),
)
def canary_stopped_singing(facts: Facts) -> Hit | None:
    """## What it detects

    The throwaway failure `CanaryError: the canary stopped singing` in a log.

    ## Why it matters

    It is a throwaway rule: the extension test adds it to check that a new log family needs nothing but the files the
    architecture names.

    ## How to fix

    Leave the mine.
    """
    if not log.seen(facts, S.CANARY_STOPPED_SINGING):
        return None
    return Hit(
        title="the canary stopped singing",
        explanation="The log shows the canary's last song.",
        evidence=log.line_evidence(facts, S.CANARY_STOPPED_SINGING),
        remediation=Remediation("Leave the mine."),
        covers=["canary_stopped_singing"],
    )
'''
LOG_CASES = {
    "tests/rule_cases/BNB598/fires-canary-log.json": {
        "description": "The canary's last song",
        "base": {"log": LOG_FILE},
        "expect": {"fires": True, "severity": "error", "title": "canary stopped singing"},
        "example": True,
    },
    "tests/rule_cases/BNB598/passes-near-misses.json": {
        "description": "Logs that say nothing of canaries",
        "base": {"log": "tests/data/outcome_logs/near_misses.txt"},
        "expect": {"fires": False},
    },
}

FORMAT_MODULE = "bnbdoctor/render/canary.py"
FORMAT_SOURCE = '''"""``--canary``: one line per finding (a throwaway format of tests/test_extension.py)."""

from __future__ import annotations

from bnbdoctor.report import Report


class CanaryRenderer:
    def render(self, document: Report, *, color: bool) -> str:
        return "".join(f"canary {f.rule_id} {f.title}\\n" for f in document.findings) or "canary: no findings\\n"
'''
#: (file, anchor, inserted before the anchor): the enum member, the dispatch's branch, the table's row.
FORMAT_EDITS = (
    ("bnbdoctor/render/__init__.py", '    TUI = "tui"\n', '    CANARY = "canary"\n'),
    (
        "bnbdoctor/render/__init__.py",
        "    if fmt is OutputFormat.TUI:\n",
        (
            "    if fmt is OutputFormat.CANARY:\n"
            "        if kind is not ReportKind.DOCTOR:\n"
            "            raise _unsupported(fmt, kind)\n"
            "        from bnbdoctor.render.canary import CanaryRenderer\n\n"
            "        return CanaryRenderer()\n"
        ),
    ),
    (
        "bnbdoctor/render/formats.py",
        "    OutputFormat.TUI: Format(\n",
        '    OutputFormat.CANARY: Format(help={ReportKind.DOCTOR: "one line per finding"}, suffix=".canary"),\n',
    ),
)

#: The tests the copy runs besides the fast suite: the slow ones that show whole documents and the app
#: (where a count of checks or a list of passed checks would show a new rule). Left out: the ones that build
#: environments or run the fit and merge-check engines, which read no rule, no log family and no format.
SLOW_TESTS_TOO = (
    "tests/test_tui.py",
    "tests/test_tui_first_minutes.py",
    "tests/test_tui_tabs.py",
    "tests/test_tui_paste.py",
    "tests/test_tui_fleet.py",
    "tests/test_report_io.py",
    "tests/test_cli_commands.py",
    "tests/test_explain.py",
    "tests/test_line_endings.py",
)


def _table_row(what: str) -> str:
    """The "To add …" row of docs/architecture.md whose first cell is ``what``."""
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == what:
            return line
    raise AssertionError(f"docs/architecture.md has no 'To add' row for {what!r}")


def _named_paths(row: str) -> list[re.Pattern[str]]:
    """The backticked paths of a row's "touch" cell, as patterns (``<ID>``, ``<family>``, ... match a name)."""
    touch = row.strip().strip("|").split("|")[1]
    patterns = []
    for path in re.findall(r"`([^`]*/[^`]*)`", touch):
        escaped = re.escape(path.rstrip("/"))
        escaped = re.sub(r"<[^>]+>|NNN", "[^/]+", escaped.replace(r"\<", "<").replace(r"\>", ">"))
        patterns.append(re.compile(escaped + r"(/.*)?$"))
    return patterns


def _assert_named(what: str, written: list[str]) -> None:
    patterns = _named_paths(_table_row(what))
    unnamed = [path for path in written if not any(p.match(path) for p in patterns)]
    assert not unnamed, f"adding {what} wrote files its row of docs/architecture.md does not name: {unnamed}"


def _copy_checkout(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source, destination = ROOT / os.fsdecode(name), target / os.fsdecode(name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # the recorded machines' file trees hold links the loader follows
            destination.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, destination)


def _write(checkout: Path, relative: str, text: str) -> None:
    path = checkout / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _insert(checkout: Path, relative: str, anchor: str, text: str) -> None:
    path = checkout / relative
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{relative}: the anchor {anchor!r} is not there once; update the test"
    path.write_text(source.replace(anchor, text + anchor), encoding="utf-8")


def _run(checkout: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=checkout, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def _add_rule(checkout: Path) -> list[str]:
    _write(checkout, RULE_FILE, RULE_SOURCE)
    for relative, case in CASES.items():
        _write(checkout, relative, json.dumps(case, indent=2) + "\n")
    return [RULE_FILE, *CASES]


def _add_log_family(checkout: Path) -> list[str]:
    """The family without its rule: the catalog entry, the signature, the collector's line, the log."""
    catalog = json.loads((checkout / CATALOG).read_text(encoding="utf-8"))
    _write(checkout, CATALOG, json.dumps([*catalog, CATALOG_ENTRY], indent=2, ensure_ascii=False) + "\n")
    _insert(checkout, *SIGNATURE_EDIT)
    collector = checkout / COLLECTOR_FILE
    collector.write_text(collector.read_text(encoding="utf-8") + COLLECTOR_LINE, encoding="utf-8")
    _write(checkout, LOG_FILE, LOG_TEXT)
    return [CATALOG, SIGNATURE_EDIT[0], COLLECTOR_FILE, LOG_FILE]


def _add_log_rule(checkout: Path) -> list[str]:
    _write(checkout, LOG_RULE_FILE, LOG_RULE_SOURCE)
    for relative, case in LOG_CASES.items():
        _write(checkout, relative, json.dumps(case, indent=2) + "\n")
    return [LOG_RULE_FILE, *LOG_CASES]


def _add_format(checkout: Path) -> list[str]:
    _write(checkout, FORMAT_MODULE, FORMAT_SOURCE)
    for relative, anchor, text in FORMAT_EDITS:
        _insert(checkout, relative, anchor, text)
    return [FORMAT_MODULE, *dict.fromkeys(relative for relative, _, _ in FORMAT_EDITS)]


ADDITIONS: dict[str, Callable[[Path], list[str]]] = {"a machine rule": _add_rule, "an output format": _add_format}


@pytest.mark.slow
def test_a_rule_a_log_family_and_a_format_need_only_the_files_the_architecture_names(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    _copy_checkout(checkout)
    for what, add in ADDITIONS.items():
        _assert_named(what, add(checkout))

    _assert_named("a log message family", _add_log_family(checkout))
    unread = _run(checkout, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_log_families.py")
    assert unread.returncode != 0 and "canary_stopped_singing" in unread.stdout, (
        "a log family no rule reads was not refused:\n" + unread.stdout[-3000:]
    )
    silent = _run(checkout, "-m", "bnbdoctor", "explain", LOG_FILE, "--json")
    assert "canary_stopped_singing" in silent.stdout, silent.stdout[-2000:] + silent.stderr  # recognised ...
    assert "BNB598" not in silent.stdout  # ... but nothing reads it yet
    _assert_named("a log-side rule", _add_log_rule(checkout))

    pages = _run(checkout, "-m", "bnbdoctor.ruledocs")  # the "then" step of the rule's row
    assert pages.returncode == 0, pages.stdout + pages.stderr
    assert "docs/rules/BNB199.md" in pages.stdout

    explained = _run(checkout, "-m", "bnbdoctor", "explain", LOG_FILE, "--json")
    top = json.loads(explained.stdout)["findings"][0]
    assert (top["rule_id"], top["title"]) == ("BNB598", "the canary stopped singing"), explained.stdout[-2000:]

    fired = _run(checkout, "-m", "bnbdoctor", "--fixture", "a100-healthy", "--rule", "BNB199", "--canary")
    assert fired.returncode == 0 and fired.stdout == "canary: no findings\n", fired.stdout + fired.stderr
    listed = _run(checkout, "-m", "bnbdoctor", "--list-rules")
    assert "BNB199" in listed.stdout

    for selection, paths in (("not slow and not network", ["tests"]), ("slow and not network", SLOW_TESTS_TOO)):
        suite = _run(
            checkout,
            *("-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", selection),
            *("--deselect", "tests/test_extension.py", *paths),
            timeout=1500,
        )
        tail = "\n".join((suite.stdout + suite.stderr).splitlines()[-30:])
        assert suite.returncode == 0, (
            f"{selection}: tests failed in the copy with the throwaway rule and format:\n{tail}"
        )
