"""The argument parser every bnbdoctor command uses (the doctor, ``explain``, ``fit``).

A usage error is one line on stderr and exit 2, as the command-line contract asks
(:mod:`bnbdoctor.contract`), never argparse's usage block; and it says what was probably meant:
the closest option for a misspelt one (``--jsno`` -> ``--json``), the closest choice for a
misspelt value, and the closest command for a misspelt word where the parser knows commands
(``bnbdoctor exlpain`` -> ``bnbdoctor explain``). The suggestions use :mod:`difflib`, as
Python 3.14's own ``suggest_on_error`` does. :func:`options_from` turns the parsed arguments into
the options dataclass a command hands its engine.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, NoReturn, TypeVar

from bnbdoctor.contract import note
from bnbdoctor.report import ExitCode

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Options = TypeVar("_Options", bound="DataclassInstance")

_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (?P<args>.*)$")
_INVALID_CHOICE = re.compile(r"^argument (?P<option>[^:]+): invalid choice: '(?P<value>[^']*)'")


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``word`` in spelling, if one is near enough."""
    import difflib  # only when there is an error to answer: start-up stays as it was

    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line with a "did you mean".

    ``commands`` are the words that may stand first on the command line (the doctor's
    subcommands); a stray word is then suggested the closest of them."""

    def __init__(self, *args: object, commands: Sequence[str] = (), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.commands = tuple(commands)

    def error(self, message: str) -> NoReturn:
        hint = self.suggestion(message)
        note(f"error: {message}{f' (did you mean {hint}?)' if hint else ''} (see {self.prog} --help)")
        raise SystemExit(int(ExitCode.FAILURE))

    def option_strings(self) -> list[str]:
        """Every long option this parser accepts (hidden ones left out)."""
        return [
            option
            for action in self._actions
            if action.help is not argparse.SUPPRESS
            for option in action.option_strings
            if option.startswith("--")
        ]

    def suggestion(self, message: str) -> str | None:
        """What the user probably meant, for argparse's error ``message``, or None."""
        unrecognized = _UNRECOGNIZED.match(message)
        if unrecognized:
            for word in unrecognized.group("args").split():
                hint = self.suggest_word(word)
                if hint:
                    return hint
            return None
        invalid = _INVALID_CHOICE.match(message)
        if invalid:
            option = invalid.group("option").split("/")[-1]
            for action in self._actions:
                named = option in action.option_strings or option in (action.metavar, action.dest)
                if named and action.choices:
                    hint = closest(invalid.group("value"), [str(c) for c in action.choices])
                    return f"'{hint}'" if hint else None
        return None

    def suggest_word(self, word: str) -> str | None:
        """The option or command closest to one unrecognized word."""
        if word.startswith("--"):
            name, _, value = word.partition("=")
            hint = closest(name, self.option_strings())
            return f"{hint}{'=' + value if value else ''}" if hint else None
        if word.startswith("-") or not self.commands:
            return None
        hint = closest(word, self.commands)
        return f"`{self.prog} {hint}`" if hint else None


def options_from(cls: type[_Options], args: argparse.Namespace, **computed: object) -> _Options:
    """A command's options dataclass from its parsed arguments: each field takes the argument of the same
    name, unless ``computed`` gives it (a flag spelt otherwise, or a value converted on the way); a field
    with neither keeps its default. The commands that hand a dataclass to their engine (fit, merge-check)
    thus name each flag once, in the parser."""
    given = {f.name: getattr(args, f.name) for f in fields(cls) if f.init and hasattr(args, f.name)}
    return cls(**{**given, **computed})
