"""``bnbdoctor lint PATH...``: find bitsandbytes mistakes in Python code before it runs.

Static analysis only (the standard :mod:`ast` module): the user's code is read, never imported or
run. :mod:`bnbdoctor.lint.sources` turns files, folders and notebooks into parseable units,
:mod:`bnbdoctor.lint.analyze` follows values through assignments and records
:class:`~bnbdoctor.facts.LintSite` facts, and the BNB6xx rules (``rules/lint_code.py``) judge them.
"""

from __future__ import annotations

from bnbdoctor.lint.analyze import analyze_source, lint_facts

__all__ = ["analyze_source", "lint_facts"]
