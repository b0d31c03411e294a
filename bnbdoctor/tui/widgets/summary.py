"""SummaryBar: the verdict in one line ("2 errors, 1 warning, 21 checks passed, 8 skipped")."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from bnbdoctor.report import Report


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_text(report: Report, show_timings: bool = True) -> Content:
    """The summary line of a report, coloured by what matters."""
    s = report.summary
    parts: list[str | tuple[str, str]] = []
    if s.errors:
        parts.append((f"✖ {_plural(s.errors, 'error')}", "$text-error bold"))
    else:
        parts.append(("✔ 0 errors", "$text-success bold"))
    parts += [", ", (_plural(s.warnings, "warning"), "$text-warning bold" if s.warnings else "")]
    if s.info:
        parts.append(f", {s.info} info")
    parts.append((f", {_plural(s.passed, 'check')} passed", "$text-success"))
    if s.skipped:
        parts.append((f", {s.skipped} skipped", "$text-muted"))
    failed = [run for run in report.facts.probes if not run.ok and not run.skipped]
    if failed:
        parts.append(
            (
                f"  ! {_plural(len(failed), 'probe')} failed: {', '.join(run.name for run in failed)}",
                "$text-warning bold",
            )
        )
    if show_timings and "total" in report.timings:
        parts.append((f"  ({report.timings['total']:.2f} s)", "$text-muted"))
    return Content.assemble(*parts)


class SummaryBar(Static):
    """One line under the header: the last report's verdict, or what is running."""

    def show_report(self, report: Report, show_timings: bool = True) -> None:
        self.set_class(report.summary.errors > 0, "-errors")
        self.set_class(report.summary.errors == 0, "-ok")
        self.update(summary_text(report, show_timings))

    def show_message(self, message: str, style: str = "") -> None:
        self.set_class(False, "-errors")
        self.set_class(False, "-ok")
        self.update(Content.styled(message, style) if style else Content(message))
