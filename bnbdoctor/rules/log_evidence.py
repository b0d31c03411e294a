"""What rules ask of log facts: which message families a log showed, and where.

Rules read facts only; for a log those include ``facts.log.matches``. These helpers keep the
signature-driven rules (``rules/workflow/``, ``rules/placement_logs/``) short and uniform: a finding
whose words do not depend on what else the log shows is declared as a :class:`LogFinding`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bnbdoctor.facts import Facts, LogMatch
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.knowledge.signatures import CONSEQUENCE, ROOT, SIGNATURES, SignatureId
from bnbdoctor.knowledge.versions import release_tuple

#: Families of the native-library load chain and of the GPU/driver chain whose presence explains
#: a consequence such as "compiled without GPU support".
LOADER_ROOTS = tuple(
    s.id for s in SIGNATURES.values() if s.role == ROOT and s.chain in ("loader", "driver", "gpu", "import")
)


def matches(facts: Facts, *signatures: SignatureId) -> list[LogMatch]:
    """The recorded lines of these signatures, in log order."""
    if facts.log is None:
        return []
    wanted = set(signatures)
    return [m for m in facts.log.matches if m.signature in wanted]


def seen(facts: Facts, *signatures: SignatureId) -> bool:
    if facts.log is None:
        return False
    wanted = set(signatures)
    return any(m.signature in wanted for m in facts.log.matches)


def first(facts: Facts, *signatures: SignatureId) -> LogMatch | None:
    found = matches(facts, *signatures)
    return found[0] if found else None


def line_evidence(facts: Facts, *signatures: SignatureId, limit: int = 3) -> list[Evidence]:
    """Evidence items quoting the first ``limit`` matching lines (distinct texts)."""
    out: list[Evidence] = []
    texts: set[str] = set()
    if facts.log is None:
        return out
    for index, match in enumerate(facts.log.matches):
        if match.signature in signatures and match.text not in texts:
            texts.add(match.text)
            out.append(Evidence(f"log line {match.line}", match.text, f"log.matches[{index}]"))
            if len(out) >= limit:
                break
    return out


@dataclass(frozen=True)
class LogFinding:
    """A finding a log rule reports when the log shows one of ``signatures``.

    Its evidence is the first ``limit`` lines of those families and of ``also_quoted`` (lines that say
    more about it without being it), so a rule names the families it fires on once. ``covers`` None: the
    rule's declared catalog entries. Words that depend on the log (a version, a kernel's file, a dtype)
    are ``{name}`` fields of the texts, filled by :meth:`hit`; a rule whose findings differ in more than
    words declares one LogFinding per finding."""

    signatures: tuple[SignatureId, ...]
    title: str
    explanation: str
    fix: str
    commands: tuple[str, ...] = ()
    covers: tuple[str, ...] | None = None
    also_quoted: tuple[SignatureId, ...] = ()
    limit: int = 3
    severity: Severity | None = None

    def hit(self, facts: Facts, /, **words: str) -> Hit | None:
        """The finding, or None when the log shows none of ``signatures``.

        ``words`` fill the texts' ``{name}`` fields; without words the texts are taken as written (so a
        text without fields may hold braces)."""
        if not seen(facts, *self.signatures):
            return None

        def fill(text: str) -> str:
            return text.format(**words) if words else text

        return Hit(
            title=fill(self.title),
            explanation=fill(self.explanation),
            evidence=line_evidence(facts, *self.signatures, *self.also_quoted, limit=self.limit),
            remediation=Remediation(fill(self.fix), [fill(command) for command in self.commands]),
            severity=self.severity,
            covers=None if self.covers is None else list(self.covers),
        )


def hits(facts: Facts, findings: Iterable[LogFinding]) -> list[Hit]:
    """The findings the log shows, in their order: a rule that reports several."""
    return [hit for finding in findings if (hit := finding.hit(facts)) is not None]


def roots_seen(facts: Facts, chains: tuple[str, ...] = ("loader", "driver", "gpu", "import")) -> list[str]:
    """Root-cause signatures of these chains that the log shows (their ids, in log order)."""
    if facts.log is None:
        return []
    out: list[str] = []
    for match in facts.log.matches:
        sig = SIGNATURES.get(match.signature)
        if sig and sig.role == ROOT and sig.chain in chains and match.signature not in out:
            out.append(match.signature)
    return out


def version(facts: Facts, package: str) -> str | None:
    """A package version the log shows (facts.log.versions), e.g. transformers."""
    if facts.log is None:
        return None
    return facts.log.versions.get(package)


def release(facts: Facts, package: str) -> tuple[int, ...] | None:
    return release_tuple(version(facts, package))


def is_windows(facts: Facts) -> bool:
    return bool(facts.platform and facts.platform.os == "windows")


def is_macos(facts: Facts) -> bool:
    return bool(facts.platform and facts.platform.os == "macos")


def is_wsl(facts: Facts) -> bool:
    return bool(facts.platform and facts.platform.wsl)


def legacy_loader(facts: Facts) -> bool:
    """The log shows the legacy CUDA setup of bitsandbytes <= 0.43.0."""
    bnb = facts.python.bitsandbytes if facts.python else None
    if bnb is not None and bnb.legacy_cuda_setup:
        return True
    return LEGACY_CUDA_SETUP.contains(bnb.version if bnb else None)


def consequence_of(facts: Facts) -> str | None:
    """The first root cause the log shows for the native-library chain, as a phrase, or None."""
    for sig_id in roots_seen(facts):
        return SIGNATURES[sig_id].summary
    return None


__all__ = [
    "CONSEQUENCE",
    "LOADER_ROOTS",
    "LogFinding",
    "consequence_of",
    "first",
    "hits",
    "is_macos",
    "is_windows",
    "is_wsl",
    "legacy_loader",
    "line_evidence",
    "matches",
    "release",
    "roots_seen",
    "seen",
    "version",
]
