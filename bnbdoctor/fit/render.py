"""Text and Markdown for a ``bnbdoctor fit`` report: verdict, sizes, budgets, device map, remedies, findings.

The findings are printed with the shared text renderer's finding layout; the fit section before
them is specific to the placement (the doctor's report has no device map).
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bnbdoctor.facts import FitDevice, FitFacts
from bnbdoctor.fit.snippets import device_map_lines, human
from bnbdoctor.report import Report

VERDICT_LINE = {
    "fits": ("✔ fits: every module is placed on a GPU", "bold green"),
    "raises": ("✖ raises ValueError: modules are dispatched on the CPU or the disk", "bold red"),
    "all_cpu": ("▲ no error, but the whole model is placed on the CPU", "bold yellow"),
    "fp32_offload": ("▲ no error: modules are offloaded to the CPU (llm_int8_enable_fp32_cpu_offload)",
                     "bold yellow"),
    "likely_fits": ("✔ probably fits (approximate: no device map computed)", "green"),
    "likely_raises": ("✖ probably raises ValueError (approximate: no device map computed)", "red"),
    "unknown": ("? unknown: the model's sizes could not be read", "yellow"),
}
_MAX_MAP_ROWS = 40


def _device_label(device: str) -> str:
    return f"GPU {device}" if device.isdigit() else device


def request_line(fit: FitFacts) -> str:
    quant = "8-bit" if fit.quant == "8bit" else f"4-bit {fit.quant_type or ''}".strip()
    if fit.double_quant:
        quant += " + double quant"
    parts = [quant, f'device_map="{fit.device_map}"']
    if fit.max_memory is not None:
        shown = ", ".join(f"{k}: {human(v)}" for k, v in fit.max_memory.items())
        parts.append(f"max_memory={{{shown}}}")
    elif fit.free_memory is not None:
        gpus = [human(v) for k, v in sorted(fit.free_memory.items()) if k.isdigit()]
        source = "simulated" if fit.memory_source == "--gpus" else "detected"
        parts.append(f"max_memory=None ({source} free GPU memory: {', '.join(gpus)}"
                     + (f"; cpu {human(fit.free_memory['cpu'])}" if "cpu" in fit.free_memory else "") + ")")
    if fit.fp32_offload:
        parts.append("llm_int8_enable_fp32_cpu_offload=True")
    if fit.skip_modules:
        parts.append(f"llm_int8_skip_modules={fit.skip_modules}")
    return ", ".join(parts)


def engine_line(fit: FitFacts) -> str:
    v = fit.versions
    names = ", ".join(f"{k} {v[k]}" for k in ("transformers", "accelerate", "bitsandbytes", "torch") if v.get(k))
    kinds = {"transformers": "transformers' own placement",
             "transformers+standin": "transformers' own placement, bitsandbytes stand-in",
             "approximate": "APPROXIMATE"}
    kind = kinds.get(fit.engine, fit.engine)
    seconds = fit.timings.get("total")
    return f"{kind}: {names or 'no packages'}" + (f" · {seconds:.1f} s" if seconds else "")


def size_line(fit: FitFacts) -> str:
    if fit.model_bytes is None:
        return "unknown"
    kinds = ", ".join(f"{k} {human(v)}" for k, v in sorted(fit.unquantized_by_kind.items(), key=lambda kv: -kv[1])
                      if v >= (fit.unquantized_bytes or 0) * 0.01)
    return (f"{human(fit.model_bytes)} = quantized Linear {human(fit.quantized_bytes)} + unquantized "
            f"{human(fit.unquantized_bytes)}" + (f" ({kinds})" if kinds else ""))


def _budget_table(devices: list[FitDevice]) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for name in ("device", "given", "balanced cap", "x0.9", "reserved", "used", "why the packer moved on"):
        table.add_column(name, no_wrap=name != "why the packer moved on", overflow="fold")
    for d in devices:
        why = ""
        if d.skipped_at:
            why = (f"{d.skipped_at} ({human(d.skipped_atom_bytes)}) > {human(d.remaining_bytes)} left")
        table.add_row(_device_label(d.device), human(d.given_bytes) if d.given_bytes is not None else "-",
                      human(d.balanced_cap_bytes) if d.balanced_cap_bytes is not None else "-",
                      human(d.budget_bytes) if d.budget_bytes is not None else "-",
                      human(d.reserved_bytes) if d.reserved_bytes else "-", human(d.used_bytes), why)
    return table


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, min_width=9)
    grid.add_column(overflow="fold")
    return grid


def render_fit_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """The fit report as text (``width`` None: the terminal's, 100 when not a terminal)."""
    from bnbdoctor.render.text import _print_finding

    fit = report.facts.fit
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width or (None if color else 100),
                      highlight=False, emoji=False)
    console.print(Text(f"bnbdoctor fit {report.tool_version}", style="bold"))
    if fit is None:
        console.print("no fit facts in this report")
        return buffer.getvalue()
    head = _grid()
    head.add_row("Model", f"{fit.model} ({fit.model_class or fit.architecture}, {fit.model_type}, "
                          f"{fit.dtype or 'dtype auto'})")
    head.add_row("Request", request_line(fit))
    head.add_row("Engine", engine_line(fit))
    head.add_row("Python", f"{fit.python} (chosen by {fit.python_selected_by})")
    console.print(head)
    console.print()
    line, style = VERDICT_LINE.get(fit.verdict, (fit.verdict, "bold"))
    console.print(Text(line, style=style))
    if fit.error_text:
        console.print(Text(f"  ValueError: {fit.error_text.strip()}", style="red"), soft_wrap=False)
    console.print()
    sizes = _grid()
    sizes.add_row("Size", size_line(fit))
    if fit.quant_state_bytes:
        sizes.add_row("Not counted", f"quantization state {human(fit.quant_state_bytes)}, CUDA context, activations, "
                                     "KV cache")
    if fit.biggest_leaf_bytes:
        sizes.add_row("Largest", f"leaf {fit.biggest_leaf} {human(fit.biggest_leaf_bytes)}; no-split block "
                                 f"{fit.biggest_no_split} {human(fit.biggest_no_split_bytes)}")
    console.print(sizes)
    console.print()
    if fit.devices:
        console.print(Text("Budgets and use", style="bold"))
        console.print(_budget_table(fit.devices))
        console.print()
    if fit.placement:
        console.print(Text("Predicted device map (collapsed)", style="bold"))
        rows = device_map_lines(fit.placement)
        grid = _grid()
        for name, device in rows[:_MAX_MAP_ROWS]:
            grid.add_row(f"  {name}", device)
        if len(rows) > _MAX_MAP_ROWS:
            grid.add_row("  ...", f"{len(rows) - _MAX_MAP_ROWS} more entries (see --json)")
        console.print(grid)
        console.print()
    if fit.largest_unquantized:
        console.print(Text("Largest unquantized tensors", style="bold"))
        grid = _grid()
        floor = max(1 << 20, int((fit.unquantized_bytes or 0) * 0.01))
        shown = [t for t in fit.largest_unquantized if t.bytes >= floor][:5] or fit.largest_unquantized[:1]
        for t in shown:
            grid.add_row(f"  {t.kind}", f"{t.name} {tuple(t.shape)} {t.dtype} {human(t.bytes)}")
        console.print(grid)
        console.print()
    passing = [r for r in fit.remedies if r.status == "passes"]
    if passing:
        console.print(Text("Remedies that pass (each simulated with the same engine)", style="bold"))
        for number, remedy in enumerate(passing, 1):
            console.print(Text(f"  {number}. {remedy.title}", style="green"))
            if remedy.detail:
                console.print(Text(f"     {remedy.detail}", style="dim"))
            for code_line in remedy.code.splitlines():
                console.print(Text(f"       {code_line}"), soft_wrap=True)
        console.print()
    unverified = [r for r in fit.remedies if r.status == "unverified"]
    for remedy in unverified:
        console.print(Text(f"  ? {remedy.title}: {remedy.detail}", style="yellow"))
        console.print()
    for note in fit.notes:
        console.print(Text(f"note: {note}", style="dim"))
    if fit.notes:
        console.print()
    for finding in report.findings:
        _print_finding(console, finding)
    console.print(Text(f"Summary: {report.summary.line()}", style="bold"))
    text = buffer.getvalue()
    if not color:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def fit_markdown(report: Report) -> str:
    """A Markdown section for the fit facts, to go before the shared findings/JSON Markdown."""
    fit = report.facts.fit
    if fit is None:
        return ""
    line, _ = VERDICT_LINE.get(fit.verdict, (fit.verdict, ""))
    out = [f"## bnbdoctor fit: `{fit.model}`", "", f"**{line}**", ""]
    if fit.error_text:
        out += ["```text", f"ValueError: {fit.error_text.strip()}", "```", ""]
    out += [f"- Request: `{request_line(fit)}`", f"- Engine: {engine_line(fit)}", f"- Size: {size_line(fit)}", ""]
    if fit.devices:
        out += ["| device | given | balanced cap | x0.9 | reserved | used | why the packer moved on |",
                "|---|---|---|---|---|---|---|"]
        for d in fit.devices:
            why = f"`{d.skipped_at}` ({human(d.skipped_atom_bytes)}) > {human(d.remaining_bytes)} left" \
                if d.skipped_at else ""
            out.append(f"| {_device_label(d.device)} | {human(d.given_bytes) if d.given_bytes is not None else '-'} | "
                       f"{human(d.balanced_cap_bytes) if d.balanced_cap_bytes is not None else '-'} | "
                       f"{human(d.budget_bytes) if d.budget_bytes is not None else '-'} | "
                       f"{human(d.reserved_bytes) if d.reserved_bytes else '-'} | {human(d.used_bytes)} | {why} |")
        out.append("")
    if fit.placement:
        out += ["<details><summary>Predicted device map</summary>", "", "```text"]
        out += [f"{name}: {device}" for name, device in device_map_lines(fit.placement)]
        out += ["```", "", "</details>", ""]
    passing = [r for r in fit.remedies if r.status == "passes"]
    if passing:
        out += ["### Remedies that pass (simulated)", ""]
        for number, remedy in enumerate(passing, 1):
            out += [f"{number}. **{remedy.title}**. {remedy.detail}"]
            if remedy.code:
                out += ["", "   ```python"] + [f"   {c}" for c in remedy.code.splitlines()] + ["   ```"]
        out.append("")
    for remedy in fit.remedies:
        if remedy.status == "unverified":
            out += [f"- {remedy.title}: {remedy.detail}", ""]
    return "\n".join(out) + "\n"
