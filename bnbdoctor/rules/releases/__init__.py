"""Rules about which bitsandbytes release is installed, and how: known-bad releases, a release
older than transformers accepts, and a package folder holding files of more than one install.

All three read the ``python`` facts the patient probe gathers from metadata and files (the shipped
regressions are the table in ``knowledge/bad_releases.py``; transformers' minimum is read from its
own source, ``knowledge/dependents.py``; the folder is compared with the RECORD of each
distribution that claims it). BNB216 reads a log's ``No module named 'bitsandbytes.…'``.
"""
