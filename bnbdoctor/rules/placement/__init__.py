"""Rules about model placement with device_map (BNB4xx): the transformers dispatch ValueError and its remedies.

They read :class:`~bnbdoctor.facts.FitFacts`, which ``bnbdoctor fit`` computes with the user's own
transformers on a meta-device model (see bnbdoctor/fit/). BNB450-469 (log signatures for the same
catalog entries) live in ``placement_logs.py``.
"""
