"""One request in, one marked answer line out: the entry point the assembled script calls as ``main(request)``.

A request names a model and its scenarios (from_pretrained calls); a batch is several requests
answered with one import of the stack. Every failure becomes part of the answer (``error_kind``,
``fallback``), so bnbdoctor always gets a line to read.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING

from ...fit_protocol import ERROR_ENGINE_FAILED, MARKER, RAISE_SITE_GET_HF_QUANTIZER, SCRIPT_VERSION, VERDICT_FITS
from .budgets import explain_devices
from .common import EngineError, short
from .remedy_search import remedies
from .replica import Engine, scenario_result
from .sizes import balance_inputs, inventory

if TYPE_CHECKING:
    from .common import Json


def answer(request: Json) -> Json:
    """One request: a model and its scenarios; returns the JSON-ready answer."""
    started = time.perf_counter()
    out: Json = {"script_version": SCRIPT_VERSION, "ok": False, "versions": {}, "timings": {}}
    engine = Engine(request, out)
    try:
        engine.import_stack()
        engine.load_config()
        engine.import_rest()
        out["bnb_mode"] = engine.bnb_mode
        out["bnb_error"] = engine.bnb_error
        engine.load_class()
        results = []
        for i, scenario in enumerate(request.get("scenarios") or []):
            item: Json = {"id": scenario.get("id", str(i))}
            rec = engine.run_scenario(scenario, trace=bool(request.get("details")))
            item.update(scenario_result(rec))
            item["raise_site"] = rec.get("raise_site")
            item["free_memory"] = scenario.get("detected")
            if request.get("details") and rec.get("built") is not None:
                built = rec["built"]
                item["inventory"] = inventory(engine, built)
                item["balance"] = balance_inputs(engine, built)
                if rec.get("raise_site") != RAISE_SITE_GET_HF_QUANTIZER and "budget" in rec:
                    item["devices"] = explain_devices(engine, rec)
                else:
                    item["devices"] = []
            if request.get("remedies") and rec["verdict"] != VERDICT_FITS:
                item["remedies"] = remedies(engine, scenario, rec)
            results.append(item)
        out["results"] = results
        out["ok"] = True
    except EngineError as exc:
        out["error_kind"] = exc.kind
        out["error"] = str(exc)
        out["fallback"] = exc.fallback
    except Exception as exc:  # noqa: BLE001 - reported to the host, which falls back
        import traceback

        out["error_kind"] = ERROR_ENGINE_FAILED
        out["error"] = f"{type(exc).__name__}: {short(exc)}"
        out["traceback"] = traceback.format_exc()[-4000:]
        out["fallback"] = True
    out["timings"]["total"] = round(time.perf_counter() - started, 4)
    return out


def main(request: Json) -> None:
    """Answer ``request``, or each of ``request["batch"]`` (several models, one import of the stack),
    and print the answer on one marked line."""
    if request.get("batch"):
        out: Json = {
            "script_version": SCRIPT_VERSION,
            "ok": True,
            "batch": [answer(dict(sub, sys_path_first=request.get("sys_path_first"))) for sub in request["batch"]],
        }
    else:
        out = answer(request)
    try:
        import resource

        out["peak_rss_bytes"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except Exception:  # noqa: BLE001, S110 - no resource module (Windows): the figure is optional
        pass
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written: skip the interpreter's teardown (torch's takes about a second). This
    # process was started for this answer alone and holds no files open for writing.
    os._exit(0)
