"""The load probe: confirm the static prediction with the real dynamic loader.

The selected library is loaded with ctypes in a separate, time-limited process of the patient
interpreter, with the same environment, after preloading what torch would have loaded. A crash
or hang there cannot take bnbdoctor down. ``--no-load`` skips it.
"""

from __future__ import annotations

import json
from typing import Any

from bnbdoctor.derive import predict_selection
from bnbdoctor.facts import LoadCheck
from bnbdoctor.probes.base import ProbeContext, own_script
from bnbdoctor.probes.native import preload_plan

LOAD_TIMEOUT_S = 15.0


def load_script() -> str:
    return own_script("load_script.py")


def load_script_for(args: dict[str, Any]) -> str:
    """The load script with its arguments (``library``, ``preload``, ``dll_directories``) in front:
    it reads them from ``sys.argv[1]``, as when run as a file."""
    return f"import sys; sys.argv[1:] = [{json.dumps(json.dumps(args))}]\n" + load_script()


def _needed(data: bytes | None) -> list[str]:
    """DT_NEEDED / DLL imports of the selected file (a cheap parse, repeated by the native probe)."""
    if not data:
        return []
    if data[:4] == b"\x7fELF":
        from bnbdoctor.native.elf import parse_elf

        return list(parse_elf(data).needed)
    if data[:2] == b"MZ":
        from bnbdoctor.native.pe import parse_pe

        return list(parse_pe(data).imports)
    return []


def gather_load(ctx: ProbeContext) -> LoadCheck:
    """Runs beside the static native probe (it re-derives the selection), so its subprocess
    overlaps the static analysis instead of following it."""
    facts, host = ctx.facts, ctx.host
    python = facts.python
    if not ctx.options.load:
        return LoadCheck(ran=False, skipped_reason="--no-load")
    selection = predict_selection(facts)
    if python is None or selection is None or not selection.loaded_file or not python.bitsandbytes.location:
        return LoadCheck(ran=False, skipped_reason="no bitsandbytes library is selected")
    library = host.pathmod.join(python.bitsandbytes.location, selection.loaded_file)
    if not selection.exists:
        return LoadCheck(ran=False, library=library, skipped_reason="the selected library does not exist")
    preload = preload_plan(host, facts, _needed(host.read_bytes(library)))
    windows = facts.platform is not None and facts.platform.os == "windows"
    args = {
        "library": library,
        "preload": preload,
        "dll_directories": [python.torch.lib_dir] if windows and python.torch.lib_dir else [],
    }
    result = ctx.host.run_python(
        python.executable, load_script_for(args), timeout=LOAD_TIMEOUT_S, purpose="load", isolated=True
    )
    check = LoadCheck(ran=True, library=library, duration_s=result.duration_s)
    if result.timed_out:
        check.error = f"loading {library} did not finish within {LOAD_TIMEOUT_S:.0f}s"
        return check
    if result.error and not result.stdout:
        return LoadCheck(ran=False, library=library, skipped_reason=result.error)
    try:
        answer = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        check.error = f"the load subprocess died (exit {result.returncode}): {tail[:300]}"
        return check
    check.ok = bool(answer.get("ok"))
    check.error = answer.get("error")
    check.preloaded = list(answer.get("preloaded", []))
    check.preload_errors = dict(answer.get("preload_errors", {}))
    return check
