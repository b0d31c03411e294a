"""Odd but well-typed facts, for fuzzing every rule (``tests/test_rule_fuzz.py``, ``bench/fuzz_inputs.py facts``).

A report read back (``--from``, fleet, the MCP server) or a recorded machine a user supplies can hold any value
its type allows. These helpers change facts one field (or a few) at a time to the odd values of that field's
declared type: None where it may be None, odd strings (empty, a version "12.x", NUL), 0 / -1 / huge numbers,
empty and repeated lists, empty mappings. The types are read from the dataclasses of :mod:`bnbdoctor.facts`.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import types
import typing
from collections.abc import Iterator
from functools import cache
from typing import Any

import bnbdoctor.facts as facts_module
from bnbdoctor.facts import Facts

ODD_TEXTS = ("", " ", "abc", "1.2.3.4.5", "0", "-1", "12.x", "None", "\x00", "ééé", "999.999", "cu", "+")

Path = tuple[str | int, ...]


def odd_values(kind: Any, current: Any) -> list[Any]:
    """The odd values a field of type ``kind`` (holding ``current``) may be given."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        values: list[Any] = [None] if type(None) in args else []
        for arg in args:
            if arg is not type(None):
                values += odd_values(arg, current)
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


def fields(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, type) of every field of the facts, into dataclasses and the first two items of lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            kind = _hints(type(value)).get(field.name)
            if kind is not None:
                yield (*path, field.name), kind
            yield from fields(getattr(value, field.name), (*path, field.name))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from fields(item, (*path, index))


def _get(value: Any, step: str | int) -> Any:
    return value[step] if isinstance(step, int) else getattr(value, step)


def _owner(facts: Any, path: Path) -> Any:
    for step in path[:-1]:
        facts = _get(facts, step)
    return facts


def changed(facts: Facts, path: Path, value: Any) -> Facts:
    """A copy of ``facts`` with the field at ``path`` set to ``value``."""
    copied = copy.deepcopy(facts)
    setattr(_owner(copied, path), str(path[-1]), copy.deepcopy(value))
    return copied


def variants(facts: Facts) -> Iterator[tuple[str, Any, Facts]]:
    """Every one-field variant: (the field's dotted path, its odd value, the changed facts)."""
    for path, kind in list(fields(facts)):
        for odd in odd_values(kind, _get(_owner(facts, path), path[-1])):
            yield ".".join(map(str, path)), odd, changed(facts, path, odd)


def random_variant(rng: random.Random, facts: Facts, most: int = 3) -> tuple[list[str], Facts]:
    """Up to ``most`` fields changed at once, each to one of its odd values: (what changed, the facts)."""
    out, said = copy.deepcopy(facts), []
    for _ in range(rng.randint(1, most)):
        candidates = [(path, kind) for path, kind in fields(out) if odd_values(kind, None)]
        if not candidates:
            break
        path, kind = rng.choice(candidates)
        odd = rng.choice(odd_values(kind, _get(_owner(out, path), path[-1])))
        setattr(_owner(out, path), str(path[-1]), copy.deepcopy(odd))
        said.append(f"{'.'.join(map(str, path))}={odd!r}"[:120])
    return said, out
