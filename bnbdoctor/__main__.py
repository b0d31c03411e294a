"""``python -m bnbdoctor``: the same entry point as the console script."""

from bnbdoctor.cli import entry

entry()
