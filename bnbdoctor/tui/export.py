"""The apps' export action: which formats each app writes, the file a format goes to, and writing it.

Which formats an app offers, in which order (the first is the default), and each one's file suffix are the
one table's (:func:`bnbdoctor.render.formats.app_exports`): the doctor's app writes JSON and Markdown, the
fleet app text, JSON and Markdown. The text is rendered by the same dispatch as ``--json``/``--markdown``
(:func:`bnbdoctor.render.render`: the doctor's layout, or the fleet report as ``bnbdoctor fleet`` writes it)
and written whole or not at all (:func:`bnbdoctor.contract.write_file`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bnbdoctor.contract import write_file
from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.render import OutputFormat, ReportKind, render
from bnbdoctor.render.formats import app_exports
from bnbdoctor.report import Report


class ExportError(Exception):
    """The report could not be written; the message is one line for the user."""


@dataclass(frozen=True)
class ExportRequest:
    """What the export dialog asks for."""

    path: Path
    format: OutputFormat


def format_for_path(path: str | Path, kind: ReportKind) -> OutputFormat | None:
    """The format a file name's suffix implies among those ``kind``'s app writes (``report.md`` -> Markdown)."""
    suffix = Path(path).suffix.lower()
    return next((fmt for fmt, known in app_exports(kind).items() if known == suffix), None)


def default_export_path(report: Report, fmt: OutputFormat, directory: str | Path = ".") -> Path:
    """``bnbdoctor-<what was examined>.<suffix>`` in ``directory``."""
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", str(report.source.get("label", "") or "report")).strip("-.")
    return Path(directory) / f"bnbdoctor-{label or 'report'}{app_exports(ReportKind.DOCTOR)[fmt]}"


def _export(path: str | Path, fmt: OutputFormat | None, kind: ReportKind, text: Callable[[OutputFormat], str]) -> Path:
    """Write ``text(format)`` to ``path``: ``fmt``, else the format its suffix implies, else the app's first."""
    target = Path(path).expanduser()
    formats = app_exports(kind)
    chosen = fmt or format_for_path(target, kind) or next(iter(formats))
    if chosen not in formats:
        known = ", ".join(known.value for known in formats)
        raise ExportError(f"the app does not export {chosen.value} (it writes {known})")
    rendered = text(chosen)
    try:
        write_file(target, rendered)
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def export_report(report: Report, path: str | Path, fmt: OutputFormat | None = None) -> Path:
    """Write the report to ``path`` in ``fmt`` (default: from the suffix, else JSON); returns the path."""
    return _export(path, fmt, ReportKind.DOCTOR, lambda chosen: render(report, chosen, ReportKind.DOCTOR))


def export_fleet(report: FleetReport, path: str | Path, fmt: OutputFormat | None = None) -> Path:
    """Write the fleet report to ``path`` in ``fmt`` (default: from the suffix, else text); returns the path."""
    return _export(path, fmt, ReportKind.FLEET, lambda chosen: render(report, chosen, ReportKind.FLEET))


def export_and_say(
    notify: Callable[..., object], export_dir: Path, path: str | Path, write: Callable[[Path], Path], what: str
) -> Path | None:
    """``write`` the report to ``path`` (relative to ``export_dir``, ``~`` expanded) and say so through the
    app's ``notify``: where it went, or the one-line reason it could not be written (then None)."""
    target = Path(path).expanduser()
    if not target.is_absolute():
        target = export_dir / target
    try:
        written = write(target)
    except ExportError as exc:
        notify(str(exc), title="Export failed", severity="error", timeout=8, markup=False)
        return None
    notify(f"{what} written to {written}", title="Exported", markup=False)
    return written
