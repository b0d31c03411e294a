"""The load probe: confirm the static prediction with the real dynamic loader.

The selected library is loaded with ctypes in a separate, time-limited process of the patient
interpreter, with the same environment, after preloading what torch would have loaded. A crash
or hang there cannot take bnbdoctor down. ``--no-load`` skips it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from bnbdoctor.facts import LoadCheck
from bnbdoctor.probes.base import ProbeContext

LOAD_TIMEOUT_S = 15.0
_PRELOAD_STEPS = ("loaded by torch before bitsandbytes", "C++ runtime already loaded in the conda env")


@lru_cache(maxsize=1)
def load_script() -> str:
    return Path(__file__).with_name("load_script.py").read_text(encoding="utf-8")


def gather_load(ctx: ProbeContext) -> LoadCheck:
    facts = ctx.facts
    native, python = facts.native, facts.python
    if not ctx.options.load:
        return LoadCheck(ran=False, skipped_reason="--no-load")
    if native is None or python is None or not native.library:
        return LoadCheck(ran=False, skipped_reason="no bitsandbytes library is selected")
    if not native.selection or not native.selection.exists:
        return LoadCheck(ran=False, library=native.library, skipped_reason="the selected library does not exist")
    preload = [d.resolved for d in native.dependencies if d.via in _PRELOAD_STEPS and d.resolved]
    windows = facts.platform is not None and facts.platform.os == "windows"
    args = {"library": native.library, "preload": preload,
            "dll_directories": [python.torch.lib_dir] if windows and python.torch.lib_dir else []}
    script = f"import sys; sys.argv[1:] = [{json.dumps(json.dumps(args))}]\n" + load_script()
    result = ctx.host.run_python(python.executable, script, timeout=LOAD_TIMEOUT_S, purpose="load", isolated=True)
    check = LoadCheck(ran=True, library=native.library, duration_s=result.duration_s)
    if result.timed_out:
        check.error = f"loading {native.library} did not finish within {LOAD_TIMEOUT_S:.0f}s"
        return check
    if result.error and not result.stdout:
        return LoadCheck(ran=False, library=native.library, skipped_reason=result.error)
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
