"""The Explain tab reads a paste the same with LF, CRLF and CR line ends (issue 13, item 1).

As seen in tmux: its paste turns newlines into CRs, and the tab said ``pasted log: 1 line`` with the
finding at line 1. Pilot pastes the real CXXABI log into the log box (and outside it, where a paste
replaces the log), explains it, and checks the line count, the finding's lines and the row selected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual import events
from tui_support import SMALL, _quiet_app, asynctest, make_app  # noqa: F401 - _quiet_app: autouse fixture

from bnbdoctor.tui.widgets.explain import ExplainView, for_the_log_box

LOG = Path(__file__).resolve().parent / "data" / "real_logs" / "cxxabi_not_found.txt"


def cxxabi_log() -> str:
    return LOG.read_text(encoding="utf-8").split("\n", 1)[1]  # without the "# source:" line


def test_the_log_box_holds_lf_line_ends_and_breaks_only_where_the_reader_does() -> None:
    assert for_the_log_box("a\r\nb\rc\nd") == "a\nb\nc\nd"
    assert for_the_log_box("a\x0cb\u2028c\x85d") == "a b c d"  # TextArea would break there, the reader does not


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("where", ["log-box", "outside"])
@asynctest
async def test_a_pasted_log_is_explained_alike_whatever_its_line_ends(ending: str, where: str) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await app.wait_for_report()
        await pilot.pause()
        while app.main.query_one("#views").active != "explain":  # type: ignore[attr-defined]
            await pilot.press("v")
            await pilot.pause()
        view = app.main.query_one(ExplainView)
        if where == "log-box":
            await pilot.click("#explain-log")
            assert view.log_area.has_focus
        text = cxxabi_log()
        app.post_message(events.Paste(text.replace("\n", ending)))  # as the terminal's bracketed paste arrives
        await pilot.pause()
        assert view.log_area.text == text
        assert view.log_area.document.line_count == 16  # the last line end starts an empty row
        await pilot.press("ctrl+r")
        await view.wait()
        await pilot.pause()
        top = view.findings.entries[0].finding
        assert top is not None and top.rule_id == "BNB306" and list(top.log_lines) == [8, 13]
        assert "pasted log: 15 lines" in str(view.status.render())  # before, with CR: "1 line"
        assert view.log_area.selection.end == (7, 0) and "CXXABI_1.3.9" in view.log_area.selected_text
