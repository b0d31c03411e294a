"""The rule set that whole-document tests run, pinned.

A golden file or an app snapshot shows every check a machine passes and counts them ("33 checks
passed"), so it depends on which rules exist. The tests that compare whole documents run the rules
pinned here instead of all of them: adding a rule changes no golden and no snapshot (the extension test,
tests/test_extension.py, checks that). To show a new rule in them, add its id here and regenerate them
(``BNBDOCTOR_UPDATE_GOLDEN=1``, ``--snapshot-update``) in the same change.
"""

from __future__ import annotations

from bnbdoctor.rules import get_rule
from bnbdoctor.rules.base import Rule

#: Every rule that existed when the goldens were last regenerated.
# fmt: off
PINNED_RULES = (
    "BNB001", "BNB002", "BNB101", "BNB102", "BNB103", "BNB104", "BNB105", "BNB106", "BNB107", "BNB108",
    "BNB120", "BNB201", "BNB202", "BNB203", "BNB204", "BNB205", "BNB206", "BNB207", "BNB208", "BNB209",
    "BNB210", "BNB213", "BNB214", "BNB215", "BNB216", "BNB301", "BNB302", "BNB303", "BNB304", "BNB305",
    "BNB306", "BNB307", "BNB308", "BNB309", "BNB310", "BNB311", "BNB312", "BNB313", "BNB314", "BNB315",
    "BNB316", "BNB317", "BNB401", "BNB402", "BNB403", "BNB404", "BNB405", "BNB406", "BNB407", "BNB408",
    "BNB450", "BNB451", "BNB452", "BNB501", "BNB502", "BNB503", "BNB504", "BNB505", "BNB506", "BNB507",
    "BNB508", "BNB509", "BNB510", "BNB511", "BNB512", "BNB513", "BNB514", "BNB515", "BNB516", "BNB517",
    "BNB518", "BNB519", "BNB520", "BNB521", "BNB522", "BNB530", "BNB531", "BNB532", "BNB533", "BNB534",
    "BNB535", "BNB536", "BNB537", "BNB538", "BNB539", "BNB540", "BNB549", "BNB601", "BNB602", "BNB603",
    "BNB604", "BNB605", "BNB606", "BNB607",
)
# fmt: on


def pinned_rules(ids: tuple[str, ...] = PINNED_RULES) -> list[Rule]:
    """The pinned rules (a pinned id with no rule is an error: a rule was removed or renumbered)."""
    rules = [get_rule(rule_id) for rule_id in ids]
    missing = [rule_id for rule_id, rule in zip(ids, rules, strict=True) if rule is None]
    assert not missing, f"pinned rules that do not exist: {missing}"
    return [rule for rule in rules if rule is not None]
