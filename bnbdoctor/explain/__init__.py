"""``bnbdoctor explain``: the doctor's diagnosis from a console log instead of the machine.

- :mod:`~bnbdoctor.explain.pipeline`: a log in, a ranked report out (extract -> the engine's ``EXPLAIN``
  pipeline, whose log stages, :mod:`bnbdoctor.rules.log_judgement`, say which findings stand, which come
  first and how sure each is);
- :mod:`~bnbdoctor.explain.cli`: the command line (``bnbdoctor explain FILE``).

The text renderer of an explain report is :mod:`bnbdoctor.render.explain_text`, beside the others
(re-exported here: :func:`render_explain_text`, :func:`seen_lines`).
"""

from __future__ import annotations

from bnbdoctor.explain.cli import build_parser, main
from bnbdoctor.explain.pipeline import ExplainError, explain_file, explain_stream, explain_text
from bnbdoctor.render.explain_text import render_explain_text, seen_lines

__all__ = [
    "ExplainError",
    "build_parser",
    "explain_file",
    "explain_stream",
    "explain_text",
    "main",
    "render_explain_text",
    "seen_lines",
]
