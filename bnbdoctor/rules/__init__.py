"""Rules: facts in, findings out.

``RULE_MODULES`` is the whole rule set, registered in this explicit order (ids are public API, one
page each in docs/rules/). The modules load on first use, so importing the vocabulary
(``bnbdoctor.rules.base``) stays cheap and can overlap with the probes.
"""

from __future__ import annotations

import importlib

from bnbdoctor.findings import Finding, Severity
from bnbdoctor.rules.base import Rule, registered_rules
from bnbdoctor.rules.engine import Diagnosis, run_rules

RULE_MODULES = (
    "bnbdoctor.rules.examination",
    "bnbdoctor.rules.driver",
    "bnbdoctor.rules.gpu",
    "bnbdoctor.rules.platform",
    "bnbdoctor.rules.packages",
    "bnbdoctor.rules.backend",
    "bnbdoctor.rules.releases",
    "bnbdoctor.rules.native",
    "bnbdoctor.rules.placement",
    "bnbdoctor.rules.workflow",
    "bnbdoctor.rules.placement_logs",
    "bnbdoctor.rules.workflow_logs",
    "bnbdoctor.rules.lint_code",
)

__all__ = ["Diagnosis", "Finding", "Rule", "Severity", "all_rules", "get_rule", "run_rules"]


def all_rules() -> list[Rule]:
    """Every registered rule, ordered by id."""
    for module in RULE_MODULES:
        importlib.import_module(module)
    return registered_rules()


def select_rules(ids: list[str]) -> list[Rule]:
    """The rules named by ``--rule`` values (ids or names, comma-separated allowed).

    Raises KeyError naming the first unknown one."""
    chosen = []
    for value in ids:
        for part in value.split(","):
            found = get_rule(part)
            if found is None:
                raise KeyError(f"unknown rule {part!r} (see bnbdoctor --list-rules)")
            chosen.append(found)
    return chosen


def get_rule(rule_id: str) -> Rule | None:
    """A rule by id (``BNB101``) or by name (``no-usable-nvidia-gpu``)."""
    wanted = rule_id.strip()
    return next((r for r in all_rules() if r.id == wanted.upper() or r.name == wanted.lower()), None)
