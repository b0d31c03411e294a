"""The interactive app (``bnbdoctor`` on a terminal, or ``--tui``): the only package that imports
Textual. :func:`run` is what the CLI calls, :func:`run_fleet` what ``bnbdoctor fleet --tui`` calls;
the headless paths never import this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bnbdoctor.facts import Facts
    from bnbdoctor.hosts.base import Host
    from bnbdoctor.probes import ProbeOptions
    from bnbdoctor.report import Report
    from bnbdoctor.rules.base import Rule


def run(
    host: Host | None,
    options: ProbeOptions | None = None,
    rules: list[Rule] | None = None,
    report: Report | None = None,
    *,
    facts: Facts | None = None,
    strict: bool = False,
    redact: bool = True,
) -> int:
    """Run the app until the user quits; returns the exit code of the last report shown
    (:class:`bnbdoctor.report.ExitCode`: OK when there is none, FAILURE when bnbdoctor failed).
    After the app, its verdict and the first fix command are printed (:mod:`~bnbdoctor.tui.farewell`).

    With ``host``, the app probes it at start and on each re-run. With ``report`` (or ``facts``)
    and no host, it shows them without probing, and a re-run re-applies the rules only.
    """
    from bnbdoctor.probes import ProbeOptions
    from bnbdoctor.report import ExitCode
    from bnbdoctor.tui.app import DoctorApp
    from bnbdoctor.tui.session import Session

    session = Session(
        host=host,
        options=options or ProbeOptions(),
        rules=rules,
        facts=facts,
        report=report,
        strict=strict,
        redact=redact,
    )
    app = DoctorApp(session)
    app.run()
    if app.return_code not in (None, 0):  # the app itself crashed (Textual printed the traceback)
        return int(ExitCode.FAILURE)
    import sys

    from bnbdoctor.tui.farewell import farewell_lines

    # The answer stays on the terminal, which the app has restored as it was.
    sys.stdout.write("\n".join(farewell_lines(app.report, session.label, app.failed)) + "\n")
    return int(app.exit_code)


def run_fleet(
    paths: list[str], *, label: str = "", pseudonymize: bool = False, strict: bool = False, nagios: bool = False
) -> int:
    """The fleet app on the resolved report ``paths`` until the user quits; returns ``bnbdoctor fleet``'s
    exit code for what it read (FAILURE when the user quit before, or the app crashed). After the app,
    the fleet's headline and its groups with findings are printed."""
    import sys

    from bnbdoctor.report import ExitCode
    from bnbdoctor.tui.fleet_app import FleetApp
    from bnbdoctor.tui.fleet_session import FleetSession, farewell_lines

    app = FleetApp(FleetSession(tuple(paths), pseudonymize=pseudonymize, strict=strict, nagios=nagios, name=label))
    app.run()
    if app.return_code not in (None, 0):  # the app itself crashed (Textual printed the traceback)
        return int(ExitCode.FAILURE)
    sys.stdout.write("\n".join(farewell_lines(app.report, app.failed)) + "\n")
    return app.exit_code


__all__ = ["run", "run_fleet"]
