"""What a probe is, and the context it runs in."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bnbdoctor.facts import Facts
from bnbdoctor.hosts.base import Host


@cache
def own_script(name: str) -> str:
    """A stdlib-only script shipped beside the probes, sent to the patient interpreter
    (bnbdoctor's own file, not the machine's: read directly, not through a host)."""
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as handle:
        return handle.read()


class ProbeError(RuntimeError):
    """A probe could not produce its facts; the message becomes a ``ProbeRun.error``."""


@dataclass
class ProbeOptions:
    """User choices that change what probes look at."""

    python: str | None = None  # --python PATH
    load: bool = True  # False with --no-load: skip the real dlopen subprocess


@dataclass
class ProbeContext:
    """Handed to every probe: the host to ask, the options, and the facts gathered so far."""

    host: Host
    options: ProbeOptions = field(default_factory=ProbeOptions)
    facts: Facts = field(default_factory=Facts)


@dataclass(frozen=True)
class Probe:
    """A named fact gatherer. ``section`` is the :class:`Facts` attribute it fills."""

    name: str
    section: str
    gather: Callable[[ProbeContext], Any]
    requires: tuple[str, ...] = ()  # probes whose facts this one reads
    timeout_s: float = 15.0
