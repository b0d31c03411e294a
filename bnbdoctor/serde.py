"""Dataclasses to JSON-ready dicts and back, without a dependency.

Facts and findings are plain dataclasses. Reports must round-trip (``--from REPORT.json``), so
``from_dict`` rebuilds nested dataclasses from type hints, ignores keys it does not know (a newer
report read by an older bnbdoctor) and fills missing keys with defaults (an older report).
Text leaves and enters only as Unicode that can be written out: a lone surrogate (a file name
decoded with ``surrogateescape``, a ``\\udce9`` escape in a saved report) becomes U+FFFD, so no
renderer of a round-tripped report fails writing it.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")
_SURROGATE = re.compile("[\ud800-\udfff]")


class DecodeError(ValueError):
    """Data that does not fit the expected shape; the message names the field."""


def writable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (unchanged, and fast, for real text)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def to_jsonable(value: Any) -> Any:
    """Turn dataclasses, enums, tuples and dicts into JSON-ready values (text made :func:`writable`)."""
    if isinstance(value, str):
        return writable(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, dict):
        return {writable(str(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


@cache
def field_names(cls: type) -> frozenset[str]:
    """Every dataclass field name reachable from ``cls`` through its type hints: the keys that are
    the layout of a document, as opposed to keys that are data (package names, paths)."""
    names: set[str] = set()
    seen: set[Any] = set()
    pending: list[Any] = [cls]
    while pending:
        tp = pending.pop()
        if tp in seen:
            continue
        seen.add(tp)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            for name, hint in _hints(tp).items():
                names.add(name)
                pending.append(hint)
        pending.extend(get_args(tp))
    return frozenset(names)


def from_dict(cls: type[T], data: Any, where: str = "") -> T:
    """Build ``cls`` (a dataclass) from JSON data, checking types as it goes."""
    return typing.cast(T, _decode(cls, data, where or cls.__name__))


def _decode(tp: Any, data: Any, where: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return data
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, data, where)
            except DecodeError as exc:
                errors.append(str(exc))
        raise DecodeError(errors[0] if errors else f"{where}: unexpected null")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _decode(hints[f.name], data[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DecodeError(f"{where}: missing field '{f.name}'")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(data)
        except ValueError:
            raise DecodeError(f"{where}: {data!r} is not one of {[m.value for m in tp]}") from None
    if origin in (list, tuple):
        if not isinstance(data, list):
            raise DecodeError(f"{where}: expected a list, got {type(data).__name__}")
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(data):
                raise DecodeError(f"{where}: expected {len(args)} items, got {len(data)}")
            return tuple(_decode(a, d, f"{where}[{i}]") for i, (a, d) in enumerate(zip(args, data, strict=True)))
        item = args[0] if args else Any
        items = [_decode(item, d, f"{where}[{i}]") for i, d in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: expected an object, got {type(data).__name__}")
        _, value_tp = get_args(tp) or (str, Any)
        return {writable(str(k)): _decode(value_tp, v, f"{where}.{writable(str(k))[:60]}") for k, v in data.items()}
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise DecodeError(f"{where}: expected a number, got {type(data).__name__}")
        return float(data)
    if tp in (str, int, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise DecodeError(f"{where}: expected {tp.__name__}, got {type(data).__name__}")
        return writable(data) if tp is str else data
    raise DecodeError(f"{where}: cannot decode type {tp!r}")
