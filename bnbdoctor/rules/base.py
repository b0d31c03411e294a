"""Rules: one declaration per rule, holding everything about it.

A rule has a stable public id (``BNB101``) and a readable name, both given by its file's name
(``bnb101_no_usable_nvidia_gpu.py``: said once, so they cannot disagree), a default severity and the
ids of the failure-catalog entries it diagnoses (``covers``). Its check reads facts only and returns
:class:`~bnbdoctor.findings.Hit` objects (or nothing); the engine stamps each hit with the rule's
identity to make a :class:`~bnbdoctor.findings.Finding`. Checks never print.

Everything else bnbdoctor knows about a rule is declared here too, with the check, so that adding
a rule touches its module and its case folder (``tests/rule_cases/<ID>/``) and nothing else:

- ``confirm``: what to run on the machine to confirm a finding drawn from a log;
- ``stands_in_for``: for a rule that reads a log, the machine rules that judge the same failure
  from a machine's facts (``bnbdoctor explain`` keeps the machine rule's finding when both fire);
- ``log_gate``: for a machine rule that concludes from an *absence* (torch missing, no compiled
  library), what a log must show before the conclusion may stand on a log's partial facts;
- ``only_alone``: for a log rule that reports what no other rule names (BNB549, an error no message
  family names), its finding stands only when no other rule's error finding does;
- ``unless_reported``: for a log rule that restates a failure a message family of the log states
  (BNB550: torch, bitsandbytes or transformers saying what is wrong), each finding stands only when
  no other finding reports that failure (see :mod:`bnbdoctor.rules.log_judgement`);
- ``requires`` / ``refutes``: named premises (:data:`PREMISES`). An error finding of a rule that
  ``refutes`` a premise is a root cause: the engine mutes the findings of every rule that
  ``requires`` it (they are listed under the root as "also seen, follows from this") and reports
  such a rule that found nothing as "not checked", never as passed;
- the documentation prose: the check's docstring ("What it detects", "Why it matters", "How to
  fix"); ``python -m bnbdoctor.ruledocs`` builds ``docs/rules/`` from declarations, docstrings and
  the output of running each rule on its example case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Check, Severity
from bnbdoctor.knowledge.signatures import SignatureId

#: Named premises: what some rules take for granted and another rule's error finding refutes. Each
#: value says, as a sentence that holds when the premise does, what the premise is. Names are
#: declared here once, so that a rule's ``requires``/``refutes`` cannot name one that does not exist.
PREMISES: dict[str, str] = {
    "gpus-have-kernels": "bitsandbytes builds kernels for every visible GPU",
    "torch-runs-on-gpus": "the installed torch has kernels for every visible GPU",
    "library-readable": "the selected bitsandbytes library is a readable binary for this machine's platform",
    "release-supports-platform": "the installed bitsandbytes release supports this OS and architecture",
    "driver-exposed": "the NVIDIA driver's libraries are where the loader looks for them",
    "torch-matches-gpu": "torch is a build for the GPU this machine has, not a CPU-only build beside it",
    "one-install": "the bitsandbytes package folder holds the files of one installed release",
    "users-env-examined": "bnbdoctor examined the environment the user runs, not its own empty one",
    "override-fits-torch": "no BNB_CUDA_VERSION / BNB_ROCM_VERSION override makes bitsandbytes load a file other than "
    "one for torch's runtime",
}


@dataclass(frozen=True)
class LogGate:
    """When a machine rule's finding may stand on facts read from a log.

    It stands when the log shows one of ``signatures`` (message families, see
    :mod:`bnbdoctor.knowledge.signatures`) or when ``shows(facts)`` holds; otherwise ``bnbdoctor
    explain`` lists the rule as "not checked" with ``why``.
    """

    why: str
    signatures: tuple[SignatureId, ...] = ()
    shows: Callable[[Facts], bool] | None = None

    def admits(self, facts: Facts, seen: set[str]) -> bool:
        return bool(set(self.signatures) & seen) or bool(self.shows and self.shows(facts))


@dataclass(frozen=True)
class Rule:
    """A registered rule. ``summary`` says, as a passed check, what was verified."""

    id: str
    name: str
    severity: Severity
    summary: str
    check: Check
    needs: tuple[str, ...] = ()  # Facts sections that must be present
    covers: tuple[str, ...] = ()  # every catalog id some finding of this rule may name
    references: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    stands_in_for: tuple[str, ...] = ()
    log_gate: LogGate | None = None
    requires: tuple[str, ...] = ()  # premises (PREMISES) the check takes for granted
    refutes: tuple[str, ...] = ()  # premises an error finding of this rule shows to be false
    only_alone: bool = False  # a finding that stands only when no other rule's error finding does
    unless_reported: bool = False  # each finding restates a family: it stands when no other finding reports it
    module: str = ""  # the rule file that declares it (``bnbdoctor.rules.<family>.bnbNNN_<name>``)

    @property
    def doc(self) -> str:
        """What a finding's ``docs`` line shows: the command that prints this rule's page, in any install
        (:mod:`bnbdoctor.rule_page`), never a path that exists only in a checkout."""
        return f"bnbdoctor rule {self.id}"

    @property
    def reads_log(self) -> bool:
        """A log-side rule: it reads ``facts.log`` and only runs under ``bnbdoctor explain``."""
        return "log" in self.needs

    @property
    def machine_checkable(self) -> bool:
        """``bnbdoctor --rule ID`` on the machine can confirm this rule's findings."""
        return not self.reads_log and "fit" not in self.needs and "lint" not in self.needs


_REGISTRY: dict[str, Rule] = {}

#: A rule file's name: its id in lower case, then its name with underscores (``bnb301_bnb_binary_missing...``).
RULE_FILE = re.compile(r"^bnb(\d{3})_([a-z0-9_]+)$")


def rule_identity(module: str) -> tuple[str, str]:
    """The id and name of the rule that ``module`` declares, which its file name gives:
    ``bnbdoctor.rules.native.bnb303_cuda_library_not_found`` declares BNB303 ``cuda-library-not-found``.

    Raises ValueError for a module that is not a ``bnbNNN_<name>.py`` rule file."""
    match = RULE_FILE.match(module.rsplit(".", 1)[-1])
    if match is None:
        raise ValueError(
            f"{module}: a rule is declared in its own bnbNNN_<name>.py file under bnbdoctor/rules/<family>/"
        )
    return f"BNB{match.group(1)}", match.group(2).replace("_", "-")


def rule(
    severity: Severity,
    summary: str,
    *,
    needs: tuple[str, ...] = (),
    covers: tuple[str, ...] = (),
    references: tuple[str, ...] = (),
    confirm: tuple[str, ...] = (),
    stands_in_for: tuple[str, ...] = (),
    log_gate: LogGate | None = None,
    requires: tuple[str, ...] = (),
    refutes: tuple[str, ...] = (),
    only_alone: bool = False,
    unless_reported: bool = False,
) -> Callable[[Check], Check]:
    """Register a check function as the rule its file declares (:func:`rule_identity`). Ids are public API:
    never reuse or renumber."""

    def register(check: Check) -> Check:
        id, name = rule_identity(check.__module__)
        if id in _REGISTRY:
            raise ValueError(f"rule id {id} registered twice")
        if stands_in_for and "log" not in needs:
            raise ValueError(f"{id}: only a rule that reads a log can stand in for machine rules")
        if log_gate is not None and "log" in needs:
            raise ValueError(f"{id}: a log gate is for machine rules read from a log's facts")
        unknown = sorted(set(requires + refutes) - set(PREMISES))
        if unknown:
            raise ValueError(f"{id}: unknown premise {', '.join(unknown)} (declare it in PREMISES)")
        if set(requires) & set(refutes):
            raise ValueError(f"{id}: a rule cannot require a premise it refutes")
        _REGISTRY[id] = Rule(
            id,
            name,
            severity,
            summary,
            check,
            needs,
            covers,
            references,
            confirm,
            stands_in_for,
            log_gate,
            requires,
            refutes,
            only_alone,
            unless_reported,
            check.__module__,
        )
        return check

    return register


def registered_rules() -> list[Rule]:
    """Every rule, ordered by id."""
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]


def registered(rule_id: str) -> Rule | None:
    """The rule with this id, if its module is loaded."""
    return _REGISTRY.get(rule_id)
