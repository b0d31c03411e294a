"""Rules: facts in, findings out, one rule per file.

A rule lives in ``bnbdoctor/rules/<family>/bnbNNN_<name>.py`` (the ``@rule`` declaration, the
docstring that is its page, its check); helpers shared inside a family live in that family's
``_shared.py``. :func:`all_rules` finds them by walking the package: there is no list to keep, and a
file that declares no rule, more than one, or one whose id and name are not its file name is an
error at discovery (:class:`RuleLayoutError`), never a silently missing rule. The modules load on
first use, so importing the vocabulary (``bnbdoctor.rules.base``) stays cheap and can overlap with
the probes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from bnbdoctor.findings import Finding, Severity
from bnbdoctor.rules.base import Rule, registered, registered_rules
from bnbdoctor.rules.engine import Diagnosis, run_rules

__all__ = ["Diagnosis", "Finding", "Rule", "Severity", "all_rules", "get_rule", "run_rules"]

#: A rule's file name: its id in lower case, then its name with underscores (``bnb301_bnb_binary_missing...``).
RULE_FILE = re.compile(r"^bnb(\d{3})_([a-z0-9_]+)$")


class RuleLayoutError(RuntimeError):
    """A module under ``bnbdoctor/rules/<family>/`` that breaks the one-rule-per-file layout."""


def rule_modules() -> list[str]:
    """Every rule module's dotted name, family by family, in file-name (so id) order."""
    found: list[str] = []
    for family in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not family.ispkg:
            continue
        package = importlib.import_module(f"{__name__}.{family.name}")
        for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if module.name.startswith("_"):
                continue
            if module.ispkg or not RULE_FILE.match(module.name):
                raise RuleLayoutError(
                    f"{package.__name__}.{module.name}: a rule family holds bnbNNN_<name>.py rule files and "
                    "_-prefixed helpers only"
                )
            found.append(f"{package.__name__}.{module.name}")
    return found


def _check_layout(modules: list[str], rules: list[Rule]) -> None:
    """Each rule module declared exactly the rule its file name says, and no rule is declared elsewhere."""
    by_module: dict[str, list[Rule]] = {}
    for rule in rules:
        by_module.setdefault(rule.module, []).append(rule)
    for module_name in modules:
        match = RULE_FILE.match(module_name.rsplit(".", 1)[1])
        assert match is not None  # rule_modules() lists matching names only
        expected = (f"BNB{match.group(1)}", match.group(2))
        declared = by_module.pop(module_name, [])
        if [(r.id, r.name.replace("-", "_")) for r in declared] != [expected]:
            names = ", ".join(f"{r.id} {r.name}" for r in declared) or "no rule"
            raise RuleLayoutError(
                f"{module_name}: declares {names}; a rule file declares one rule, {expected[0]} named after the file"
            )
    for module_name, strays in sorted(by_module.items()):
        names = ", ".join(r.id for r in strays)
        raise RuleLayoutError(f"{module_name}: declares {names} outside a bnbNNN_<name>.py rule file")


@cache
def _discover() -> tuple[Rule, ...]:
    modules = rule_modules()
    for module_name in modules:
        importlib.import_module(module_name)
    rules = registered_rules()
    _check_layout(modules, rules)
    return tuple(rules)


def all_rules() -> list[Rule]:
    """Every rule, ordered by id."""
    return list(_discover())


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
    _discover()
    return registered(wanted.upper()) or next((r for r in all_rules() if r.name == wanted.lower()), None)
