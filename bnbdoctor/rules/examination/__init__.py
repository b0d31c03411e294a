"""Rules about the examination itself (ids BNB001-BNB099): what bnbdoctor could not examine.

A probe that failed is a fact (:class:`~bnbdoctor.facts.ProbeRun`), and a diagnosis that rests on
nothing must not read as "no problems": these rules turn each failed probe into an error finding
with the probe's own message and what to do, so that a run that examined nothing exits 1. A probe
skipped because another one failed (``ProbeRun.skipped``) is a consequence, never its own finding.
They need the ``probes`` section: a log's facts (``bnbdoctor explain``) ran no probes.
"""
