"""How much CPU RAM this machine has free now: the figure a fit uses when CPU RAM is left empty.

The fit engine reads ``psutil.virtual_memory().available`` in the patient interpreter; the Fit
tab shows the same figure as the CPU RAM field's hint, so the default is visible before a run.
No Textual here: a plain function, tried in turn with psutil (when this interpreter has it) and
Linux's ``/proc/meminfo``, read through the live host like every other file bnbdoctor reads (the fit
runs on this machine even when the app shows a recorded one); ``None`` when neither answers.
"""

from __future__ import annotations

MEMINFO = "/proc/meminfo"


def meminfo_available(text: str) -> int | None:
    """``MemAvailable`` of a ``/proc/meminfo`` text, in bytes (None without it)."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "MemAvailable":
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) * (1024 if fields[1:2] == ["kB"] else 1)
    return None


def psutil_available() -> int | None:
    """psutil's figure (the one the fit engine reads), or None without psutil or an answer."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - not installed, or no answer on this platform
        return None


def free_ram_bytes() -> int | None:
    """This machine's available CPU RAM in bytes, or None when it cannot be read."""
    found = psutil_available()
    if found is not None:
        return found
    from bnbdoctor.hosts.live import LiveHost

    text = LiveHost().read_text(MEMINFO, limit=1 << 16)
    return meminfo_available(text) if text is not None else None
