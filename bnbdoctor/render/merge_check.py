"""Text and JSON documents for ``bnbdoctor merge-check`` (a :class:`~bnbdoctor.merge_check_result.MergeCheck`).

JSON: the measurement as :func:`bnbdoctor.serde.to_jsonable` writes it, plus ``verdict``,
``merge_peak_bytes`` and ``workflow_script``. Text: the verdict, one line per way of merging, the
layers that keep least, the script for the right workflow and the memory it needs.
"""

from __future__ import annotations

import json
import math
from typing import Any

from bnbdoctor.merge_check_result import WAYS, MergeCheck
from bnbdoctor.render.merge_check_words import WAY_TITLES, verdict, workflow_script
from bnbdoctor.serde import to_jsonable
from bnbdoctor.units import human

#: How many layers the text shows (least kept first, by the 4-bit merge).
WORST_LAYERS = 5


def to_document(check: MergeCheck) -> dict[str, Any]:
    data: dict[str, Any] = {"tool": "bnbdoctor", "kind": "merge-check"}
    data.update(to_jsonable(check))
    data["verdict"] = verdict(check)
    data["merge_peak_bytes"] = check.merge_peak_bytes
    data["workflow_script"] = workflow_script(check)
    return data


def _finite(value: Any) -> Any:
    """``value`` with each NaN or infinity (an engine's answer on odd weights) as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def render_json(check: MergeCheck) -> str:
    """Strict JSON: a bare ``NaN`` (which ``jq`` and ``JSON.parse`` refuse) is never written."""
    return json.dumps(_finite(to_document(check)), indent=2, sort_keys=False, allow_nan=False) + "\n"


def _pct(share: float | None) -> str:
    return "   ?" if share is None else f"{share * 100:5.1f} %"


def render_text(check: MergeCheck) -> str:
    lines = [f"bnbdoctor merge-check {check.adapter}", f"  base: {check.base} ({check.base_dir})"]
    settings = f"{check.quant_type}, blocksize {check.blocksize}, double quant {'on' if check.double_quant else 'off'}"
    lines.append(
        f"  quantization: {settings}; rank {check.rank}, alpha {check.alpha}"
        + (", rslora" if check.use_rslora else "")
        + (", DoRA" if check.use_dora else "")
    )
    lines += ["", verdict(check), ""]
    if check.error:
        return "\n".join(lines) + "\n"
    lines.append(f"  {'way of merging':<84} kept   unmoved")
    for way in WAYS:
        result = check.overall.get(way)
        if result is not None:
            lines.append(f"  {WAY_TITLES[way]:<82} {_pct(result.kept)} {_pct(result.unmoved)}")
    measured = [layer for layer in check.layers if layer.ways]
    worst = sorted(measured, key=lambda layer: layer.ways["4bit"].kept or 0.0)[:WORST_LAYERS]
    if worst:
        lines += ["", f"  {len(measured)} layers measured; least kept by the 4-bit merge:"]
        for layer in worst:
            lines.append(
                f"    {layer.module}: kept {_pct(layer.ways['4bit'].kept)}, "
                f"update {_pct(layer.delta_rel)} of the weight"
            )
    failed = [layer for layer in check.layers if layer.error]
    for layer in failed:
        lines.append(f"    {layer.module}: {layer.error}")
    needs = human(check.merge_peak_bytes)
    lines += ["", f"  the 16-bit merge needs about {needs} of memory (the base's tensors, by its headers):"]
    lines.append("")
    lines += ["    " + line for line in workflow_script(check).splitlines()]
    if check.engine_peak_rss_bytes:
        peak = human(check.engine_peak_rss_bytes)
        lines += ["", f"  measured one layer at a time; peak memory of the measurement {peak}"]
    return "\n".join(lines) + "\n"
