"""Byte sizes as text, in binary units: the formatter the fit engine's report, the placement rules and the TUI share.

A neutral module: it imports nothing from bnbdoctor, so ``bnbdoctor.rules`` can use it without importing
``bnbdoctor.fit`` (which the layer contracts forbid).
"""

from __future__ import annotations

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40


def human(size: float | None) -> str:
    """Bytes as TiB/GiB/MiB/KiB with two decimals (binary units, as from_pretrained's strings); ``?`` for None."""
    if size is None:
        return "?"
    value = float(size)
    for unit, scale in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{int(value)} B"
