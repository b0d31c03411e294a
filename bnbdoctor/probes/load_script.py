"""Runs inside the patient interpreter (``python -B -I -S``): load bitsandbytes' library for real.

It first loads, globally, what torch would already have loaded in a real process (the paths come
in ARGS), then the selected library, and prints the loader's verdict as JSON. Stdlib only; the
library's constructors run, but no bitsandbytes or torch Python code does. Keep it compatible
with Python 3.6 (tests/test_patient_scripts.py runs it there).
"""

import ctypes
import json
import os
import sys
import time

ARGS = json.loads(sys.argv[1] if len(sys.argv) > 1 else "{}")


def main():
    out = {"preloaded": [], "preload_errors": {}, "ok": False, "error": None}
    for folder in ARGS.get("dll_directories", []):
        if hasattr(os, "add_dll_directory") and os.path.isdir(folder):
            try:
                os.add_dll_directory(folder)
            except OSError:
                pass
    for path in ARGS.get("preload", []):
        try:
            ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
            out["preloaded"].append(path)
        except OSError as exc:
            out["preload_errors"][path] = str(exc)
    started = time.perf_counter()
    try:
        ctypes.CDLL(ARGS["library"])
        out["ok"] = True
    except OSError as exc:
        out["error"] = str(exc)
    out["duration_s"] = time.perf_counter() - started
    sys.stdout.write(json.dumps(out))


main()
