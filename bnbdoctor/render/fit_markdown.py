"""``bnbdoctor fit --markdown``: the fit section (verdict, request, budgets, device map, remedies),
then the shared Markdown report of the findings and the facts.
"""

from __future__ import annotations

from bnbdoctor.render import fit_lines as lines
from bnbdoctor.render.markdown import render_markdown
from bnbdoctor.report import Report


def fit_markdown(report: Report) -> str:
    """A Markdown section for the fit facts, to go before the shared findings/JSON Markdown."""
    fit = report.facts.fit
    if fit is None:
        return ""
    line, _ = lines.VERDICT_LINE.get(fit.verdict, (fit.verdict, ""))
    out = [f"## bnbdoctor fit: `{fit.model}`", "", f"**{line}**", ""]
    if fit.error_text:
        out += ["```text", f"ValueError: {fit.error_text.strip()}", "```", ""]
    out += [
        f"- Request: `{lines.request_line(fit)}`",
        f"- Engine: {lines.engine_line(fit)}",
        f"- Size: {lines.size_line(fit)}",
        "",
    ]
    if fit.devices:
        out += ["| " + " | ".join(lines.BUDGET_COLUMNS) + " |", "|---" * len(lines.BUDGET_COLUMNS) + "|"]
        out += [
            "| " + " | ".join(row) + " |" for row in lines.budget_rows(fit.devices, module=lambda name: f"`{name}`")
        ]
        out.append("")
    if fit.placement:
        out += ["<details><summary>Predicted device map</summary>", "", "```text"]
        out += [f"{name}: {device}" for name, device in lines.device_map_lines(fit.placement)]
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


class FitMarkdownRenderer:
    """The :class:`~bnbdoctor.render.Renderer` for ``bnbdoctor fit --markdown``: the fit section, then the
    shared Markdown report of the findings and the facts."""

    def render(self, report: Report, *, color: bool = False) -> str:
        return fit_markdown(report) + "\n" + render_markdown(report)
