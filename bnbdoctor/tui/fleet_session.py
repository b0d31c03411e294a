"""FleetSession: which reports the fleet app reads, and what its exit code is, without any Textual.

``bnbdoctor fleet PATH... --tui`` resolves its paths first (a mistyped path is one line and exit 2,
before any app), then hands them over as a session. :meth:`FleetSession.read` blocks while it
streams the reports through :func:`bnbdoctor.fleet.aggregate.aggregate`, so the app calls it from a
thread worker; it reports how many it has read (at most every ``progress_s``) and stops between two
reports when the caller gives up. :meth:`FleetSession.exit_code` is the fleet command's own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bnbdoctor.fleet.aggregate import aggregate
from bnbdoctor.fleet.inputs import Item, iter_paths
from bnbdoctor.fleet.status import exit_code, nagios_state
from bnbdoctor.fleet_report import FleetReport
from bnbdoctor.render.fleet import headline
from bnbdoctor.report import ExitCode


class ReadCancelled(Exception):
    """The caller gave up (the app is quitting) between two reports."""


@dataclass(frozen=True)
class FleetSession:
    """Resolved report paths (:func:`bnbdoctor.fleet.inputs.resolve_paths`) and the command's options."""

    paths: tuple[str, ...]
    pseudonymize: bool = False
    strict: bool = False  # --strict: warnings count as errors in the exit code
    nagios: bool = False  # --nagios: the exit code is the plugin's state
    progress_s: float = 0.1
    #: What is read, as the user named it (the command line's paths); default: the files, or how many.
    name: str = ""

    @property
    def label(self) -> str:
        """The app's subtitle: :attr:`name`, else the one file, else how many."""
        if self.name:
            return self.name
        return self.paths[0] if len(self.paths) == 1 else f"{len(self.paths)} report files"

    def read(
        self, progress: Callable[[int], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> FleetReport:
        """The fleet report; raises :class:`ReadCancelled` when ``cancelled()`` turns true."""

        def items() -> Iterator[Item]:
            last = time.monotonic()
            for count, item in enumerate(iter_paths(list(self.paths)), start=1):
                if cancelled is not None and cancelled():
                    raise ReadCancelled
                now = time.monotonic()
                if progress is not None and now - last >= self.progress_s:
                    progress(count)
                    last = now
                yield item

        return aggregate(items(), pseudonymize=self.pseudonymize)

    def exit_code(self, report: FleetReport | None) -> int:
        """The fleet command's exit code for ``report``; FAILURE (2) when there is none (quit while reading)."""
        if report is None:
            return int(ExitCode.FAILURE)
        return int(nagios_state(report)) if self.nagios else int(exit_code(report, self.strict))


def farewell_lines(report: FleetReport | None, failed: str | None = None) -> list[str]:
    """What the app leaves on the terminal: the headline and each group with findings (five at most)."""
    if report is None:
        return [f"bnbdoctor fleet failed: {failed}" if failed else "bnbdoctor fleet: quit before the groups were ready"]
    lines = [f"bnbdoctor fleet: {headline(report)}"]
    flagged = [(number, g) for number, g in enumerate(report.groups, start=1) if g.findings]
    for number, group in flagged[:5]:
        ids = " ".join(f.rule_id for f in group.findings)
        lines.append(f"  group {number}: {group.count} node{'' if group.count == 1 else 's'}, {group.status}: {ids}")
    if len(flagged) > 5:
        lines.append(f"  … and {len(flagged) - 5} more groups with findings in the app.")
    return lines
