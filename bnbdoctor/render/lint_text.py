"""Text for ``bnbdoctor lint``: one block per finding, headed ``file:line:col``, like a compiler's."""

from __future__ import annotations

from bnbdoctor.report import Report

#: ANSI styles of the severity word (colour only on a terminal: ``color=True``).
STYLES = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;36m"}
RESET = "\x1b[0m"


class LintTextRenderer:
    """Findings first (location, severity, rule, title; then why and the fix as code), then the files that
    could not be parsed, then a summary that counts the files linted and those not linted."""

    def render(self, report: Report, *, color: bool) -> str:
        lines: list[str] = []
        for finding in report.findings:
            where = finding.evidence[0].label if finding.evidence else "?"
            severity = finding.severity.value
            shown = f"{STYLES[severity]}{severity}{RESET}" if color else severity
            lines.append(f"{where}: {shown} {finding.rule_id} {finding.title}")
            if finding.evidence and finding.evidence[0].value:
                lines.append(f"    {finding.evidence[0].value}")
            lines.append(f"  why: {finding.explanation}")
            if finding.remediation.text:
                lines.append("  fix: " + finding.remediation.text.replace("\n", "\n  "))
            lines.append(f"  docs: {finding.doc}")
            lines.append("")
        lint = report.facts.lint
        for file, reason in sorted((lint.unparsed if lint else {}).items()):
            lines.append(f"{file}: not linted: {reason}")
        counts = {s: sum(1 for f in report.findings if f.severity.value == s) for s in ("error", "warning", "info")}
        unparsed = len(lint.unparsed) if lint else 0
        linted = (len(lint.files) if lint else 0) - unparsed
        lines.append(
            f"bnbdoctor lint: {linted} file{'s' if linted != 1 else ''}"
            + (f", {unparsed} NOT linted (could not be parsed)" if unparsed else "")
            + f", {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
        )
        return "\n".join(lines) + "\n"
