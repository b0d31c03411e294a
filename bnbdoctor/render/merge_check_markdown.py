"""``bnbdoctor merge-check --markdown``: the measurement as Markdown to paste into a GitHub issue.

The verdict, the settings, one table row per way of merging (kept, unmoved), one per adapted layer,
the script for the right workflow in a fenced block, and the memory lines. The CLI redacts the
measurement first (:func:`bnbdoctor.merge_check.cli.redacted`: the home folder becomes ``~``, user
and host names go). The body stays within :data:`bnbdoctor.render.markdown.MAX_BODY` the way the
doctor's does: when every layer does not fit, the table keeps the layers that keep least, and says so.
"""

from __future__ import annotations

from bnbdoctor.merge_check_result import WAYS, LayerResult, MergeCheck
from bnbdoctor.render.markdown import MAX_BODY, code, plain
from bnbdoctor.render.merge_check_words import WAY_TITLES, short_module, verdict, workflow_script
from bnbdoctor.units import human

#: The per-way table's short names, in :data:`WAYS` order.
WAY_NAMES = {
    "4bit": "4bit",
    "16bit": "16bit",
    "dequantized": "dequantized",
    "16bit_then_quantize": "16bit-then-quantized",
}
#: Between a weight's dimensions (a multiplication sign): 2048 by 8192 is shown ``2048\u00d78192``.
TIMES = "\u00d7"
_LEGEND = (
    "_Kept: the share of the trained update the merge keeps. Unmoved: the share of the adapted weights "
    "the merge left exactly where they were._"
)
_LAYER_HEADER = (
    "| Layer | Shape | Update / weight | " + " | ".join(f"{WAY_NAMES[way]} kept" for way in WAYS) + " |",
    "|---|---|---:|" + "---:|" * len(WAYS),
)


def _pct(share: float | None) -> str:
    return "?" if share is None else f"{share * 100:.1f} %"


def _fence(text: str, language: str) -> list[str]:
    """A fenced block that no run of backticks inside ``text`` can close."""
    fence = "```"
    while fence in text:
        fence += "`"
    return [fence + language, text, fence]


def _head(check: MergeCheck) -> list[str]:
    settings = (
        f"{check.quant_type}, blocksize {check.blocksize}, double quant {'on' if check.double_quant else 'off'}; "
        f"rank {check.rank}, alpha {'?' if check.alpha is None else f'{check.alpha:g}'}"
        + (", rslora" if check.use_rslora else "")
        + (", DoRA" if check.use_dora else "")
    )
    lines = [f"## bnbdoctor merge-check: {code(check.adapter)}", "", f"**{plain(verdict(check))}**", ""]
    lines += [f"- Base: {code(check.base)} ({code(check.base_dir)})", f"- Quantization: {plain(settings)}"]
    if check.versions:
        lines.append("- Measured with " + ", ".join(f"{name} {code(v)}" for name, v in sorted(check.versions.items())))
    lines.append("")
    if check.error:
        return lines
    lines += ["| Way of merging | Kept | Unmoved |", "|---|---:|---:|"]
    for way in WAYS:
        result = check.overall.get(way)
        if result is not None:
            title = f"{code(WAY_NAMES[way])}: {plain(WAY_TITLES[way])}"
            lines.append(f"| {title} | {_pct(result.kept)} | {_pct(result.unmoved)} |")
    lines += ["", _LEGEND, ""]
    return lines


def _layer_row(layer: LayerResult) -> str:
    shape = TIMES.join(str(n) for n in layer.shape) or "?"
    if layer.error:
        return f"| {code(short_module(layer.module))} | {shape} | {plain(layer.error)} |" + " |" * len(WAYS)
    kept = " | ".join(_pct(layer.ways[way].kept if way in layer.ways else None) for way in WAYS)
    return f"| {code(short_module(layer.module))} | {shape} | {_pct(layer.delta_rel)} | {kept} |"


def _tail(check: MergeCheck) -> list[str]:
    needs = human(check.merge_peak_bytes)
    lines = [
        "### The merge that keeps the update",
        "",
        "Into the 16-bit base, saved, then quantized once when it is loaded:",
        "",
        *_fence(workflow_script(check), "python"),
        "",
        f"The 16-bit merge needs about {needs} of memory (the base's tensors, by their safetensors headers).",
    ]
    if check.engine_peak_rss_bytes:
        lines.append(
            f"Measured one layer at a time; peak memory of the measurement {human(check.engine_peak_rss_bytes)}."
        )
    return [*lines, ""]


def _layers(check: MergeCheck, room: int) -> list[str]:
    """The per-layer table (modules as the model names them) within ``room`` characters: every layer in model
    order when they fit, else the
    layers the 4-bit merge keeps least of (a failed one first), with a line saying how many are shown."""
    if not check.layers:
        return []
    rows = [_layer_row(layer) for layer in check.layers]
    heading = [f"### Per layer ({len(check.layers)} adapted layers)", ""]
    fixed = sum(len(line) + 1 for line in (*heading, *_LAYER_HEADER)) + 1
    if fixed + sum(len(row) + 1 for row in rows) <= room:
        return [*heading, *_LAYER_HEADER, *rows, ""]

    def kept(index: int) -> float:
        layer = check.layers[index]
        share = layer.ways["4bit"].kept if "4bit" in layer.ways else None
        return -1.0 if share is None else share  # a layer that failed first

    note_room = 200
    chosen: list[str] = []
    used = fixed + note_room
    for index in sorted(range(len(rows)), key=kept):
        if used + len(rows[index]) + 1 > room:
            break
        chosen.append(rows[index])
        used += len(rows[index]) + 1
    note = (
        f"_{len(chosen)} of {len(rows)} layers shown, least kept by the 4-bit merge first, to fit an issue: "
        "every layer is in `bnbdoctor merge-check ADAPTER --json`._"
    )
    return [*heading, note, "", *_LAYER_HEADER, *chosen, ""]


def render_markdown(check: MergeCheck) -> str:
    """The measurement as Markdown, within :data:`MAX_BODY` characters (the per-layer table is cut to fit)."""
    head = _head(check)
    if check.error:
        return "\n".join(head) + "\n"
    tail = _tail(check)
    room = MAX_BODY - sum(len(line) + 1 for line in (*head, *tail))
    return "\n".join([*head, *_layers(check, room), *tail])
