"""Every rule over odd but well-typed facts (issue 25 item 16): no check raises.

A report read back (``--from``, fleet, the MCP server) or a recorded machine a user supplies can hold any value
its type allows: an empty file name, a version ``"12.x"``, an empty GPU list, a negative size. Each recorded
machine's facts are changed one field at a time to each odd value of that field's type (None where it may be
None, odd strings, 0 / -1 / huge numbers, empty and repeated lists, empty mappings), and every rule runs on the
result through the doctor's pipeline. A check that raises is a bnbdoctor bug, which the report states as an
error (:func:`bnbdoctor.rules.engine.crashed`); here it fails the test, naming the rule, the field and the value.

The fast suite changes four machines of different kinds; the slow test changes every recorded one (about
60,000 variants, minutes).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from conftest import fixture_names

import bnbdoctor.facts as facts_module
from bnbdoctor.doctor import diagnose
from bnbdoctor.facts import Facts
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.rules import all_rules
from bnbdoctor.rules.engine import DOCTOR, crashed, run_rules

ODD_TEXTS = ("", " ", "abc", "1.2.3.4.5", "0", "-1", "12.x", "None", "\x00", "ééé", "999.999", "cu", "+")


def _odd_values(kind: Any, current: Any) -> list[Any]:
    """The odd values a field of type ``kind`` (holding ``current``) may be given."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        values: list[Any] = [None] if type(None) in args else []
        for arg in args:
            if arg is not type(None):
                values += _odd_values(arg, current)
        return values
    simple: dict[Any, list[Any]] = {
        str: list(ODD_TEXTS),
        bool: [True, False],
        int: [0, -1, 10**12],
        float: [0.0, -1.0, float("inf")],
    }
    if kind in simple:
        return simple[kind]
    if origin is list:
        return [[], current * 3] if current else [[]]
    if origin is dict:
        return [{}]
    return []


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(facts_module))


def _fields(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(path, type) of every field of the facts, into dataclasses and the first two items of lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            kind = _hints(type(value)).get(field.name)
            if kind is not None:
                yield (*path, field.name), kind
            yield from _fields(getattr(value, field.name), (*path, field.name))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from _fields(item, (*path, index))


def _get(value: Any, step: str | int) -> Any:
    return value[step] if isinstance(step, int) else getattr(value, step)


def _variants(facts: Facts) -> Iterator[tuple[str, Any, Facts]]:
    for path, kind in list(_fields(facts)):
        owner = facts
        for step in path[:-1]:
            owner = _get(owner, step)
        for odd in _odd_values(kind, _get(owner, path[-1])):
            changed = copy.deepcopy(facts)
            target = changed
            for step in path[:-1]:
                target = _get(target, step)
            setattr(target, str(path[-1]), copy.deepcopy(odd))
            yield ".".join(map(str, path)), odd, changed


def _crashes(name: str) -> list[str]:
    rules = all_rules()
    out: list[str] = []
    for field, odd, facts in _variants(diagnose(FixtureHost.named(name)).facts):
        for finding in crashed(run_rules(facts, rules, DOCTOR)):
            out.append(f"{finding.rule_id} on {name} with {field} = {odd!r}: {finding.evidence[0].value}")
    return out


@pytest.mark.parametrize(
    "name", ["a100-healthy", "windows-bnb041", "rocm714-bnb0492-strix-halo", "bnb-overlaid-stale-files"]
)
def test_no_rule_raises_on_odd_facts(name: str) -> None:
    assert _crashes(name) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", fixture_names())
def test_no_rule_raises_on_odd_facts_of_any_recorded_machine(name: str) -> None:
    assert _crashes(name) == []


def test_the_fuzz_reaches_what_it_claims() -> None:
    """Not vacuous: the variants change nested fields (a GPU's compute capability, the library selection) and
    a check made to raise is caught by name."""
    facts = diagnose(FixtureHost.named("a100-healthy")).facts
    fields = {field for field, _odd, _facts in _variants(facts)}
    assert {"gpu.devices.0.compute_capability", "native.selection.expected_file", "python.torch.version"} <= fields
    broken = copy.deepcopy(facts)
    assert broken.gpu is not None
    broken.gpu.devices = None  # type: ignore[assignment]  # not well typed: only to see a crash reported
    assert crashed(run_rules(broken, all_rules(), DOCTOR))
