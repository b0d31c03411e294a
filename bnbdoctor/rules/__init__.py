"""Rules: facts in, findings out. Each module below registers its rules on import; this explicit
list is the whole rule set (ids are public API, see docs/rules/)."""

from __future__ import annotations

from bnbdoctor.rules import driver, gpu, packages, platform  # noqa: F401 - registration
from bnbdoctor.rules.base import Finding, Rule, Severity, registered_rules
from bnbdoctor.rules.engine import Diagnosis, run_rules

__all__ = ["Diagnosis", "Finding", "Rule", "Severity", "all_rules", "get_rule", "run_rules"]


def all_rules() -> list[Rule]:
    return registered_rules()


def get_rule(rule_id: str) -> Rule | None:
    wanted = rule_id.strip().upper()
    return next((r for r in registered_rules() if r.id == wanted or r.name == rule_id.strip().lower()), None)
