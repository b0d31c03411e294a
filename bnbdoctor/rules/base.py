"""Rules and findings: the vocabulary of a diagnosis.

A rule has a stable public id (``BNB101``), a readable name, a default severity and the ids of the
failure-catalog entries it diagnoses (``covers``). Its check reads facts only and returns
:class:`Hit` objects (or nothing); the engine stamps each hit with the rule's identity to make a
:class:`Finding`. Checks never print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bnbdoctor.findings import Check, Severity


@dataclass(frozen=True)
class Rule:
    """A registered rule. ``summary`` says, as a passed check, what was verified."""

    id: str
    name: str
    severity: Severity
    summary: str
    check: Check
    needs: tuple[str, ...] = ()  # Facts sections that must be present
    covers: tuple[str, ...] = ()
    references: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return f"docs/rules/{self.id}.md"


_REGISTRY: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    severity: Severity,
    summary: str,
    *,
    needs: tuple[str, ...] = (),
    covers: tuple[str, ...] = (),
    references: tuple[str, ...] = (),
) -> Callable[[Check], Check]:
    """Register a check function as a rule. Ids are public API: never reuse or renumber."""

    def register(check: Check) -> Check:
        if id in _REGISTRY:
            raise ValueError(f"rule id {id} registered twice")
        _REGISTRY[id] = Rule(id, name, severity, summary, check, needs, covers, references)
        return check

    return register


def registered_rules() -> list[Rule]:
    """Every rule, ordered by id."""
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]
