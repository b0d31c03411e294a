"""Rules about workflows and messages seen in logs (BNB5xx): PEFT merges, devices, stale modules.

These rules read ``facts.log`` (``needs=("log",)``), so they run under ``bnbdoctor explain`` and
are skipped on a live machine. Two kinds live here:

- workflow rules (BNB521-BNB533) for failures that only a log shows: PEFT merges into quantized
  layers, tensors on different devices, bitsandbytes' device guard, modules left stale by an
  upgrade in a running notebook, transformers' misleading ImportError;
- rules for the families found in real threads (issue 24, ``tests/data/corpus``): bitsandbytes not
  installed or without a wheel for the platform (BNB523, BNB524), a release older than the 4-bit
  layers, the optimizer or the ``quant_storage`` asked of it (BNB525, BNB527, BNB529), an application
  hiding the import error (BNB526), two kernel launch errors (BNB528, BNB553), a bitsandbytes module
  without its submodules (BNB554);
- log twins (BNB501-BNB520) of machine rules, for failures whose message is known but whose facts
  a log does not show (a kernel error names no GPU). Each twin's ``stands_in_for`` names the
  machine rules it stands in for; when one of those fires on the log's facts with at least the same
  severity and covers what the twin matched, ``bnbdoctor explain`` keeps the machine rule's finding
  and folds the twin's log lines into it.

Each rule's ``confirm`` says what to run on the machine to confirm a finding.
"""
