"""The env probe: the allowlisted variables that are set (never anything else)."""

from __future__ import annotations

from bnbdoctor.environment import ALLOWED_ENV
from bnbdoctor.probes.base import ProbeContext


def gather_env(ctx: ProbeContext) -> dict[str, str]:
    values = {}
    for name in sorted(ALLOWED_ENV):
        value = ctx.host.getenv(name)
        if value is not None:
            values[name] = value
    return values
