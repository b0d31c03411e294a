"""Log rules for what transformers, accelerate and FSDP refuse to do with a 4-bit/8-bit model, two
harmless messages, and the error no family names (BNB534-BNB549, issue 12).

These rules read ``facts.log`` (``needs=("log",)``) and run under ``bnbdoctor explain``; a machine
has none of these facts (they happen in the user's script). The message families are in
``logs/collectors/kbit.py``; the release boundaries in ``knowledge/kbit.py``. BNB549 reports an
exception line that no family names, so that an unknown error is never "no known failure".
"""
