"""One renderer interface and one dispatch, one declaration of the output flags, one atomic writer.

Whole documents per format are compared elsewhere (test_markdown.py and tests/golden/, test_cli.py,
test_explain.py, test_fit.py, the export tests in test_tui.py); here: every (format, report kind)
pair reaches a renderer, the three commands offer the same output flags, and ``-o`` never leaves a
partial file.
"""

from __future__ import annotations

import argparse
import builtins
import copy
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

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
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.lint.cli import lint_report
from bnbdoctor.render import OutputFormat, Renderer, ReportKind, render, renderer_for
from bnbdoctor.render.explain_text import render_explain_text
from bnbdoctor.render.fit_markdown import fit_markdown
from bnbdoctor.render.fit_text import render_fit_text
from bnbdoctor.render.json import render_json
from bnbdoctor.render.lint_text import LintTextRenderer
from bnbdoctor.render.markdown import render_markdown
from bnbdoctor.render.options import FORMAT_HELP
from bnbdoctor.render.text import render_text
from bnbdoctor.report import Report

LOG = ROOT / "tests" / "data" / "real_logs" / "glibc_2_34_not_found.txt"
DOCUMENTS = [fmt for fmt in OutputFormat if fmt not in (OutputFormat.TUI, OutputFormat.SARIF)]  # SARIF: lint only


@pytest.fixture(scope="module")
def reports() -> dict[ReportKind, Report]:
    """One report of each kind; the fit one is the doctor's with made-up fit facts (no engine run)."""
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


def expected(report: Report, fmt: OutputFormat, kind: ReportKind) -> str:
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


@pytest.mark.parametrize("kind", list(ReportKind))
@pytest.mark.parametrize("fmt", DOCUMENTS)
def test_every_format_and_kind_dispatches_to_a_renderer(
    reports: dict[ReportKind, Report], fmt: OutputFormat, kind: ReportKind
) -> None:
    renderer: Renderer = renderer_for(fmt, kind)
    assert callable(renderer.render)
    text = render(reports[kind], fmt, kind, color=False)
    assert text == expected(reports[kind], fmt, kind)


def test_the_app_is_not_a_document() -> None:
    for kind in ReportKind:
        with pytest.raises(ValueError, match="not a document"):
            renderer_for(OutputFormat.TUI, kind)


def test_colour_reaches_text_renderers_only(reports: dict[ReportKind, Report]) -> None:
    for kind in ReportKind:
        assert "\x1b[" in render(reports[kind], OutputFormat.TEXT, kind, color=True)
        for fmt in (OutputFormat.JSON, OutputFormat.MARKDOWN):
            assert render(reports[kind], fmt, kind, color=True) == render(reports[kind], fmt, kind)


def without_markdown(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_markdown(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "bnbdoctor.render.markdown":
            raise ImportError("not in this build")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_markdown)


def test_markdown_fallbacks(
    reports: dict[ReportKind, Report], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    without_markdown(monkeypatch)
    with pytest.raises(ImportError):  # the doctor has no fallback: the app does not offer the format
        renderer_for(OutputFormat.MARKDOWN, ReportKind.DOCTOR)
    explain = reports[ReportKind.EXPLAIN]
    assert render(explain, OutputFormat.MARKDOWN, ReportKind.EXPLAIN) == render_explain_text(explain)
    assert capsys.readouterr().err == (
        "bnbdoctor: Markdown output is not available in this build; writing text instead\n"
    )
    fit = reports[ReportKind.FIT]
    assert render(fit, OutputFormat.MARKDOWN, ReportKind.FIT) == fit_markdown(fit)
    assert "printing the fit section only" in capsys.readouterr().err


def output_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, object]]:
    """option string -> (dest, const) for the format and output options."""
    return {
        option: (action.dest, action.const)
        for action in parser._actions
        for option in action.option_strings
        if action.dest in ("format", "output")
    }


def test_the_three_commands_expose_the_same_output_flags() -> None:
    common = {
        "--text": ("format", OutputFormat.TEXT),
        "--json": ("format", OutputFormat.JSON),
        "--markdown": ("format", OutputFormat.MARKDOWN),
        "-o": ("output", None),
        "--output": ("output", None),
    }
    assert output_flags(explain_parser()) == common
    assert output_flags(fit_parser()) == common
    assert output_flags(doctor_parser()) == {**common, "--tui": ("format", OutputFormat.TUI)}
    for parser in (doctor_parser(), explain_parser(), fit_parser()):
        [group] = [g for g in parser._mutually_exclusive_groups if any(a.dest == "format" for a in g._group_actions)]
        assert {a.dest for a in group._group_actions} == {"format"}  # one group: --json --markdown is an error
    assert set(FORMAT_HELP) == set(ReportKind)


def test_help_texts_stay_per_command() -> None:
    def helps(parser: argparse.ArgumentParser) -> dict[str, str | None]:
        return {a.option_strings[0]: a.help for a in parser._actions if a.dest == "format"}

    assert helps(doctor_parser())["--markdown"] == "a report to paste into a GitHub issue (redacted, replayable)"
    assert helps(explain_parser())["--markdown"] == "Markdown to paste into an issue"
    assert helps(fit_parser())["--text"] == "text (default)"


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
