"""The BNB6xx rules: bitsandbytes mistakes in the user's code, read by ``bnbdoctor lint``.

They judge :class:`~bnbdoctor.facts.LintSite` facts (``needs=("lint",)``), which the static analysis
in :mod:`bnbdoctor.lint.analyze` recorded; the installed transformers/bitsandbytes, when the examined
interpreter was read, decide some severities (boundaries in ``knowledge/kbit.py``). Each finding's
evidence is ``file:line:col`` (``file cell N:line:col`` in a notebook) and its fix is code.
"""
