"""Rule documentation and rule cases: the development side of the rules.

- :mod:`~bnbdoctor.ruledocs.cases`: the per-rule cases in ``tests/rule_cases/<ID>/`` (facts that
  make a rule fire and facts that make it pass), loaded and run the same way by the test suite and
  by the page generator;
- :mod:`~bnbdoctor.ruledocs.pages`: ``docs/rules/<ID>.md`` and ``docs/rules/README.md`` built from
  each rule's declaration, its prose (the docstring of its check) and the output of running
  it on its example case (``python -m bnbdoctor.ruledocs`` writes them, ``--check`` fails when stale).

It sits above the rules, hosts and renderers (it drives them); nothing in the diagnosis imports it.
"""
