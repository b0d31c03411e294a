"""Placement failures read from a log (BNB450-BNB469): the transformers dispatch ValueError,
the misnamed fp32-offload option, and device_map imbalance across GPUs.

These rules read ``facts.log`` (``needs=("log",)``): they run under ``bnbdoctor explain``. The
machine-side placement rules (BNB4xx in ``placement.py``, and ``bnbdoctor fit``) predict the same
failures from a model and the GPUs; here the evidence is the error message and the versions the
log shows. The under-packing facts come from the shared dispatch research (dispatch_fit.md §1,
§2.6): transformers #46823, fixed by #47203 (first in 5.14.0) and #47211 (first in 5.18.0).
"""
