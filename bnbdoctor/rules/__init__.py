"""Rules: facts in, findings out, one rule per file.

A rule lives in ``bnbdoctor/rules/<family>/bnbNNN_<name>.py`` (the ``@rule`` declaration, the
docstring that is its page, its check); helpers shared inside a family live in that family's
``_shared.py``. A rule's id and name are its file's name (:func:`~bnbdoctor.rules.base.rule_identity`).
:func:`all_rules` finds the rules by walking the package: there is no list to keep, and a file that
declares no rule is an error at discovery (:class:`RuleLayoutError`), one that declares two when it
loads, never a silently missing rule. The modules load on
first use, so importing the vocabulary (``bnbdoctor.rules.base``) stays cheap and can overlap with
the probes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache

from bnbdoctor.findings import Finding, Severity
from bnbdoctor.rules.base import RULE_FILE, Rule, registered, registered_rules, rule_identity
from bnbdoctor.rules.engine import Diagnosis, mode_sections, run_rules

__all__ = [
    "Diagnosis",
    "Finding",
    "Rule",
    "Severity",
    "all_rules",
    "get_rule",
    "mode_sections",
    "rules_for",
    "run_rules",
]


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
    """Each rule module declared a rule, and no rule is declared elsewhere (a rule takes its id and name
    from its file, and a second rule in one file is refused as it registers)."""
    declared = {rule.module for rule in rules}
    for module_name in modules:
        if module_name not in declared:
            raise RuleLayoutError(
                f"{module_name}: declares no rule; a rule file declares one rule, "
                f"{rule_identity(module_name)[0]} named after the file"
            )
    strays = sorted({rule.module for rule in rules} - set(modules))
    for module_name in strays:
        names = ", ".join(r.id for r in rules if r.module == module_name)
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


def rules_for(present: Iterable[str]) -> list[Rule]:
    """The rules a diagnosis whose facts hold the mode sections ``present`` (``log``, ``fit``, ``lint``,
    ``probes``: :data:`~bnbdoctor.rules.engine.MODE_SECTIONS`) can run, ordered by id: the same findings,
    passed and skipped checks as :func:`all_rules` gives it (a rule that needs an absent mode section is not part
    of a diagnosis), without importing the others. The doctor on a machine imports no log rule this way, half of
    them all. Which modules need which section is ``mode_index.MODE_NEEDS``, generated from the rules."""
    from bnbdoctor.rules.mode_index import MODE_NEEDS

    have = set(present)
    modules = [m for m in rule_modules() if set(MODE_NEEDS.get(m, ())) <= have]
    for module_name in modules:
        importlib.import_module(module_name)
    wanted = set(modules)
    return [rule for rule in registered_rules() if rule.module in wanted]


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
