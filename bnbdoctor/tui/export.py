"""Export formats for the app's export action: a name, a file suffix and an output format each.

The text is rendered by the same dispatch as ``--json``/``--markdown`` (:func:`bnbdoctor.render.renderer_for`,
the doctor's layout) and written whole or not at all (:func:`bnbdoctor.contract.write_file`). A format
whose renderer is not in this build is simply not offered, so adding a format is one line here.
The fleet app writes the fleet report as ``bnbdoctor fleet --text/--json/--markdown`` would
(:data:`FLEET_EXPORT_FORMATS`, :func:`export_fleet`), through :func:`bnbdoctor.render.fleet.render_fleet`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bnbdoctor.contract import write_file
from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.render import OutputFormat, ReportKind, renderer_for
from bnbdoctor.report import Report


class ExportError(Exception):
    """The report could not be written; the message is one line for the user."""


@dataclass(frozen=True)
class ExportFormat:
    """One entry of the export menu: its name, the default file's suffix, and what is rendered."""

    name: str
    suffix: str
    output: OutputFormat

    @property
    def available(self) -> bool:
        """Whether this build has the renderer (a format left out of a build is not offered)."""
        try:
            renderer_for(self.output, ReportKind.DOCTOR)
        except ImportError:
            return False
        return True

    def render(self, report: Report) -> str:
        return renderer_for(self.output, ReportKind.DOCTOR).render(report, color=False)


#: Every format the app can write, in menu order.
EXPORT_FORMATS: dict[str, ExportFormat] = {
    fmt.name: fmt
    for fmt in (
        ExportFormat("json", ".json", OutputFormat.JSON),
        ExportFormat("markdown", ".md", OutputFormat.MARKDOWN),
    )
}


@dataclass(frozen=True)
class ExportRequest:
    """What the export dialog asks for."""

    path: Path
    format: str


def available_formats() -> list[str]:
    """The formats whose renderer is installed, in menu order."""
    return [name for name, fmt in EXPORT_FORMATS.items() if fmt.available]


def format_for_path(path: str | Path) -> str | None:
    """The format a file name's suffix implies (``report.md`` -> ``markdown``), if any."""
    suffix = Path(path).suffix.lower()
    return next((name for name, fmt in EXPORT_FORMATS.items() if fmt.suffix == suffix), None)


def default_export_path(report: Report, fmt: str, directory: str | Path = ".") -> Path:
    """``bnbdoctor-<what was examined>.<suffix>`` in ``directory``."""
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", str(report.source.get("label", "") or "report")).strip("-.")
    return Path(directory) / f"bnbdoctor-{label or 'report'}{EXPORT_FORMATS[fmt].suffix}"


def render_export(report: Report, fmt: str) -> str:
    """The report in format ``fmt`` (a key of :data:`EXPORT_FORMATS`)."""
    try:
        chosen = EXPORT_FORMATS[fmt]
    except KeyError:
        raise ExportError(f"unknown export format {fmt!r} (known: {', '.join(EXPORT_FORMATS)})") from None
    if not chosen.available:
        raise ExportError(f"the {fmt} format is not available in this build")
    return chosen.render(report)


def export_report(report: Report, path: str | Path, fmt: str | None = None) -> Path:
    """Write the report to ``path`` in ``fmt`` (default: from the suffix, else JSON); returns the path."""
    target = Path(path).expanduser()
    chosen = fmt or format_for_path(target) or "json"
    text = render_export(report, chosen)
    try:
        write_file(target, text)
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


#: The fleet app's formats, in menu order: a file suffix and what ``bnbdoctor fleet`` renders.
FLEET_EXPORT_FORMATS: dict[str, tuple[str, OutputFormat]] = {
    "text": (".txt", OutputFormat.TEXT),
    "json": (".json", OutputFormat.JSON),
    "markdown": (".md", OutputFormat.MARKDOWN),
}


def fleet_suffixes() -> dict[str, str]:
    """Each fleet format's file suffix (the export dialog changes the file name with the format)."""
    return {name: suffix for name, (suffix, _) in FLEET_EXPORT_FORMATS.items()}


def export_fleet(report: FleetReport, path: str | Path, fmt: str | None = None) -> Path:
    """Write the fleet report to ``path`` in ``fmt`` (default: from the suffix, else text); returns the path."""
    from bnbdoctor.render.fleet import render_fleet

    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    chosen = fmt or next((name for name, (s, _) in FLEET_EXPORT_FORMATS.items() if s == suffix), "text")
    if chosen not in FLEET_EXPORT_FORMATS:
        raise ExportError(f"unknown export format {chosen!r} (known: {', '.join(FLEET_EXPORT_FORMATS)})")
    try:
        write_file(target, render_fleet(report, FLEET_EXPORT_FORMATS[chosen][1]))
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


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
