"""Remedies that fit the machine they are printed for.

Rules write their commands as a person would (``pip install -U "bitsandbytes>=0.45.1"``);
:func:`~bnbdoctor.remedy.fitting.fit_remedies` then makes every command of a diagnosis true for
*this* machine, in one place for every rule: pip runs as the examined interpreter's
``python -m pip``, a bitsandbytes requirement is narrowed to the releases that install here
(platform tag, glibc, Python, and the torch it would keep), the report names one bitsandbytes
specifier, a requirement nothing satisfies becomes "change this first", and tools the machine does
not have are not offered. :func:`~bnbdoctor.remedy.check.remedy_problems` checks the result
independently (the tests run it over every recorded machine and log).
"""

from bnbdoctor.remedy.fitting import fit_remedies

__all__ = ["fit_remedies"]
