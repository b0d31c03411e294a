"""One renderer interface and one dispatch, one declaration of the output flags, one atomic writer.

Whole documents per format are compared elsewhere (test_markdown.py and tests/golden/, test_cli.py,
test_explain.py, test_fit.py, the export tests in test_tui.py); here: every (format, report kind)
pair the table offers reaches a renderer and every other pair is an error, every command offers the
table's flags, and ``-o`` never leaves a partial file.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from unprivileged import as_unprivileged, shared_folder

from bnbdoctor.cli import build_parser as doctor_parser
from bnbdoctor.contract import write_file, write_output
from bnbdoctor.doctor import diagnose
from bnbdoctor.explain import build_parser as explain_parser
from bnbdoctor.explain import explain_file
from bnbdoctor.facts import FitFacts
from bnbdoctor.fit.cli import build_parser as fit_parser
from bnbdoctor.fleet.cli import build_parser as fleet_parser
from bnbdoctor.fleet_report import FLEET_SCHEMA_VERSION, FindingKey, FleetReport, Group
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.lint.cli import build_parser as lint_parser
from bnbdoctor.lint.cli import lint_report
from bnbdoctor.merge_check.cli import build_parser as merge_check_parser
from bnbdoctor.merge_check_result import WAYS, MergeCheck, WayResult
from bnbdoctor.render import (
    REPORT_KINDS,
    OutputFormat,
    Renderer,
    ReportKind,
    ReportKinds,
    UnsupportedFormat,
    render,
    renderer_for,
)
from bnbdoctor.render.explain_text import render_explain_text
from bnbdoctor.render.fit_markdown import fit_markdown
from bnbdoctor.render.fit_text import render_fit_text
from bnbdoctor.render.fleet import render_json as fleet_json
from bnbdoctor.render.fleet import render_markdown as fleet_markdown
from bnbdoctor.render.fleet import render_text as fleet_text
from bnbdoctor.render.formats import FORMATS, app_exports, offered
from bnbdoctor.render.json import render_json
from bnbdoctor.render.lint_text import LintTextRenderer
from bnbdoctor.render.markdown import render_markdown
from bnbdoctor.render.merge_check import render_json as merge_check_json
from bnbdoctor.render.merge_check import render_text as merge_check_text
from bnbdoctor.render.merge_check_markdown import render_markdown as merge_check_markdown
from bnbdoctor.render.text import render_text
from bnbdoctor.report import Report

LOG = ROOT / "tests" / "data" / "real_logs" / "glibc_2_34_not_found.txt"
#: The formats every Report kind offers, whose documents each command rendered before the one dispatch existed.
DOCUMENTS = [OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN]


@pytest.fixture(scope="module")
def reports() -> dict[ReportKinds, Report]:
    """One report of each kind that makes a Report; the fit one is the doctor's with made-up fit facts."""
    doctor = diagnose(FixtureHost.named("kepler-k80"))
    fit = copy.deepcopy(doctor)
    fit.facts.fit = FitFacts(
        model="./llama",
        config_path="./llama/config.json",
        verdict="raises",
        error_text="Some modules are dispatched on the CPU or the disk.",
        placement={"model.layers.0": 0, "model.layers.1": 0, "lm_head": "cpu"},
    )
    lint = lint_report([str(ROOT / "tests" / "data" / "lint" / "bare_kwargs.py")], read_python=False)
    return {
        ReportKind.DOCTOR: doctor,
        ReportKind.EXPLAIN: explain_file(str(LOG)),
        ReportKind.FIT: fit,
        ReportKind.LINT: lint,
    }


FLEET = FleetReport(
    tool="bnbdoctor",
    kind="fleet",
    tool_version="0.1.0",
    schema_version=FLEET_SCHEMA_VERSION,
    created="2025-01-01T00:00:00Z",
    nodes=3,
    groups=[
        Group(
            id="a1",
            status="error",
            count=2,
            facts={"gpu": "Tesla K80", "driver": "470"},
            findings=[FindingKey("BNB103", "error", "the GPU is too old")],
            nodes=["n1", "n2"],
        ),
        Group(id="b2", status="ok", count=1, facts={"gpu": "A100", "driver": "550"}, nodes=["n3"]),
    ],
    differs=["gpu", "driver", "findings"],
)
MERGE_CHECK = MergeCheck(
    adapter="out/adapter",
    base="org/base",
    base_dir="/cache/base",
    base_ref="org/base",
    python="python",
    quant_type="nf4",
    blocksize=64,
    double_quant=False,
    rank=8,
    alpha=16,
    overall={way: WayResult(kept=0.9, unmoved=0.1) for way in WAYS},
)


def expected(report: Report, fmt: OutputFormat, kind: ReportKinds) -> str:
    """What each command rendered before the one dispatch existed."""
    if fmt is OutputFormat.JSON:
        return render_json(report)
    if fmt is OutputFormat.TEXT:
        return {
            ReportKind.DOCTOR: render_text,
            ReportKind.EXPLAIN: render_explain_text,
            ReportKind.FIT: render_fit_text,
            ReportKind.LINT: lambda r: LintTextRenderer().render(r, color=False),
        }[kind](report)
    if kind is ReportKind.FIT:
        return fit_markdown(report) + "\n" + render_markdown(report)
    return render_markdown(report)


@pytest.mark.parametrize("kind", REPORT_KINDS)
@pytest.mark.parametrize("fmt", DOCUMENTS)
def test_every_format_and_kind_dispatches_to_a_renderer(
    reports: dict[ReportKinds, Report], fmt: OutputFormat, kind: ReportKinds
) -> None:
    renderer: Renderer[Report] = renderer_for(fmt, kind)
    assert renderer.render(reports[kind], color=False) == expected(reports[kind], fmt, kind)
    assert render(reports[kind], fmt, kind, color=False) == expected(reports[kind], fmt, kind)


def test_the_fleet_and_merge_check_documents_go_through_the_same_dispatch() -> None:
    assert render(FLEET, OutputFormat.TEXT, ReportKind.FLEET) == fleet_text(FLEET)
    assert render(FLEET, OutputFormat.JSON, ReportKind.FLEET) == fleet_json(FLEET)
    assert render(FLEET, OutputFormat.MARKDOWN, ReportKind.FLEET) == fleet_markdown(FLEET)
    assert render(MERGE_CHECK, OutputFormat.TEXT, ReportKind.MERGE_CHECK) == merge_check_text(MERGE_CHECK)
    assert render(MERGE_CHECK, OutputFormat.JSON, ReportKind.MERGE_CHECK) == merge_check_json(MERGE_CHECK)
    assert render(MERGE_CHECK, OutputFormat.MARKDOWN, ReportKind.MERGE_CHECK) == merge_check_markdown(MERGE_CHECK)
    assert fleet_text(FLEET).startswith("bnbdoctor fleet: 3 nodes in 2 groups")


def test_the_table_and_the_dispatch_agree() -> None:
    """Every pair the table offers renders (the app aside); every other pair is one line, not another format."""
    for fmt, row in FORMATS.items():
        for kind in ReportKind:
            if kind in row.help and fmt is not OutputFormat.TUI:
                assert callable(renderer_for(fmt, kind).render), (fmt, kind)
            else:
                with pytest.raises(UnsupportedFormat) as raised:
                    renderer_for(fmt, kind)
                assert "\n" not in str(raised.value), (fmt, kind)


def test_the_app_is_not_a_document() -> None:
    for kind in ReportKind:
        with pytest.raises(UnsupportedFormat, match="not a document"):
            renderer_for(OutputFormat.TUI, kind)


def test_an_unsupported_pair_says_what_the_command_offers() -> None:
    with pytest.raises(
        UnsupportedFormat,
        match=r"^bnbdoctor merge-check has no --sarif output \(it offers --text, --json, --markdown\)$",
    ):
        renderer_for(OutputFormat.SARIF, ReportKind.MERGE_CHECK)


def test_every_format_a_command_offers_has_help_and_the_apps_export_files() -> None:
    for fmt, row in FORMATS.items():
        assert row.help, fmt  # a format no command offers is not in the table
        assert row.exported_by <= set(row.help), fmt  # the app writes only what its command offers
        assert (row.suffix is None) == (fmt is OutputFormat.TUI), fmt  # every document is a file, the app is not
    assert list(app_exports(ReportKind.FLEET)) == [OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN]
    assert app_exports(ReportKind.DOCTOR) == {OutputFormat.JSON: ".json", OutputFormat.MARKDOWN: ".md"}
    assert app_exports(ReportKind.LINT) == {}


def test_colour_reaches_text_renderers_only(reports: dict[ReportKinds, Report]) -> None:
    for kind in REPORT_KINDS:
        assert "\x1b[" in render(reports[kind], OutputFormat.TEXT, kind, color=True)
        for fmt in (OutputFormat.JSON, OutputFormat.MARKDOWN):
            assert render(reports[kind], fmt, kind, color=True) == render(reports[kind], fmt, kind)
    assert [fmt for fmt, row in FORMATS.items() if row.coloured] == [OutputFormat.TEXT]


def output_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, object]]:
    """option string -> (dest, const) for the format and output options."""
    return {
        option: (action.dest, action.const)
        for action in parser._actions
        for option in action.option_strings
        if action.dest in ("format", "output")
    }


def test_every_command_exposes_the_output_flags_of_the_table() -> None:
    parsers = {
        ReportKind.DOCTOR: doctor_parser(),
        ReportKind.EXPLAIN: explain_parser(),
        ReportKind.FIT: fit_parser(),
        ReportKind.LINT: lint_parser(),
        ReportKind.FLEET: fleet_parser(),
        ReportKind.MERGE_CHECK: merge_check_parser(),
    }
    assert set(parsers) == set(ReportKind)
    for kind, parser in parsers.items():
        flags = {f"--{fmt.value}": ("format", fmt) for fmt in offered(kind)}
        assert output_flags(parser) == {**flags, "-o": ("output", None), "--output": ("output", None)}, kind
        [group] = [g for g in parser._mutually_exclusive_groups if any(a.dest == "format" for a in g._group_actions)]
        assert {a.dest for a in group._group_actions} == {"format"}  # one group: --json --markdown is an error
        helps = {a.option_strings[0]: a.help for a in parser._actions if a.dest == "format"}
        assert helps == {f"--{fmt.value}": text for fmt, text in offered(kind).items()}, kind
    known = (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.MARKDOWN, OutputFormat.TUI, OutputFormat.SARIF)
    assert [fmt for fmt in offered(ReportKind.DOCTOR) if fmt in known] == list(known[:4])  # --help's order
    assert [fmt for fmt in offered(ReportKind.LINT) if fmt in known][-1] is OutputFormat.SARIF


def test_help_texts_stay_per_command() -> None:
    def helps(parser: argparse.ArgumentParser) -> dict[str, str | None]:
        return {a.option_strings[0]: a.help for a in parser._actions if a.dest == "format"}

    assert helps(doctor_parser())["--markdown"] == "a report to paste into a GitHub issue (redacted, replayable)"
    assert helps(explain_parser())["--markdown"] == "Markdown to paste into an issue"
    assert helps(fit_parser())["--text"] == "text (default)"
    assert helps(fleet_parser())["--tui"] == "the groups in the interactive app (same exit code; needs a terminal)"


@pytest.mark.parametrize("args", [["--fixture", "kepler-k80", "--json"], ["explain", str(LOG), "--json"]])
def test_json_never_imports_rich_or_textual(args: list[str]) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from bnbdoctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({args!r})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'torch', 'rich'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- writing ------------------------------------------------------------------------------------------------


def test_write_file_replaces_whole_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    write_file(target, "first\n")
    target.chmod(0o640)
    write_file(str(target), "second\n")
    assert target.read_text() == "second\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # written again, the file keeps its permissions
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_an_interrupted_write_keeps_the_old_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(target, "new\n" * 1000)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_write_file_follows_symlinks_and_writes_devices_in_place(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_file(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    write_file(os.devnull, "nothing")  # -o /dev/null works as it did with open()


def test_a_report_written_through_a_symlink_replaces_the_file_it_names(tmp_path: Path) -> None:
    """Issue 25, item 13: ``-o LINK`` was written in place (truncate, then write): a kill left the previous
    report empty, and two runs through one link left one report with the other's tail."""
    real = tmp_path / "good.json"
    real.write_text("previous report\n" * 100)
    link = tmp_path / "latest.json"
    link.symlink_to("good.json")
    before = real.stat().st_ino
    write_file(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "good.json" and real.read_text() == "new\n"
    assert real.stat().st_ino != before  # replaced whole, not truncated and rewritten
    dangling = tmp_path / "next.json"
    dangling.symlink_to(tmp_path / "sub" / ".." / "made.json")
    write_file(dangling, "made\n")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made\n"


def test_an_interrupted_write_through_a_symlink_keeps_the_old_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "good.json"
    real.write_text("old\n")
    (tmp_path / "latest.json").symlink_to(real)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(tmp_path / "latest.json", "new\n" * 1000)
    assert real.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json", "latest.json"]


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="O_TMPFILE is Linux's")
def test_while_a_report_is_written_no_temporary_file_has_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill between the temporary file and the rename left ``.NAME.<pid>.<hex>.tmp`` behind (item 13):
    until the text is whole and synced, the temporary file has no name to leave."""
    target = tmp_path / "report.json"
    target.write_text("old\n")
    seen: list[list[str]] = []
    real_fsync = os.fsync

    def watching(fd: int) -> None:
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watching)
    write_file(target, "new\n")
    assert seen == [["report.json"]] and target.read_text() == "new\n"


def test_a_name_of_240_characters_can_be_written(tmp_path: Path) -> None:
    """The temporary name was ``.NAME.<pid>.<hex>.tmp``, 20 characters past NAME_MAX for such a name."""
    target = tmp_path / ("r" * 235 + ".json")
    write_file(target, "report\n")
    write_file(target, "again\n")
    assert target.read_text() == "again\n" and [p.name for p in tmp_path.iterdir()] == [target.name]


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="no /dev/stdout")
def test_output_to_dev_stdout_writes_through_the_pipe() -> None:
    command = [sys.executable, "-m", "bnbdoctor", "--fixture", "kepler-k80", "--json", "-o", "/dev/stdout"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert result.returncode == 1, result.stderr  # the K80 has error findings
    assert result.stdout.startswith("{") and result.stderr == "bnbdoctor: report written to /dev/stdout\n"


class Usage(Exception):
    pass


def test_write_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(Usage, match=r"^cannot write .*: No such file or directory$"):
        write_output("text", str(tmp_path / "missing" / "r.json"), Usage)
    with pytest.raises(Usage, match=r"^cannot write .*: Is a directory$"):
        write_output("text", str(tmp_path), Usage)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX permissions")
def test_a_read_only_report_stays_unwritten() -> None:
    """``-o`` onto a file the user may not write (as ``nobody`` when the suite runs as root)."""
    folder = shared_folder()
    try:
        read_only = folder / "read-only.json"
        read_only.write_text("keep")
        read_only.chmod(0o444)
        program = (
            "import sys\n"
            "from bnbdoctor.contract import write_output\n"
            "class Usage(Exception): pass\n"
            "try:\n"
            "    write_output('text', sys.argv[1], Usage)\n"
            "except Usage as exc:\n"
            "    print(exc)\n"
        )
        run = subprocess.run(
            as_unprivileged([sys.executable, "-c", program, str(read_only)]),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert re.match(r"^cannot write .*read-only.json: Permission denied$", run.stdout.strip()), run.stdout
        assert read_only.read_text() == "keep"
        assert sorted(p.name for p in folder.iterdir()) == ["read-only.json"]  # no temporary file left
    finally:
        shutil.rmtree(folder, ignore_errors=True)
