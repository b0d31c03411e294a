"""bnbdoctor: finds why bitsandbytes will not work on a machine, and says what to do.

The package is layered: ``hosts`` is the one seam to a machine, ``probes`` turn what a host
answers into plain facts, ``rules`` turn facts into findings, and ``render`` shows them.
"""

__version__ = "0.1.0"
