"""What the lint_code rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

from bnbdoctor.facts import Facts, LintSite
from bnbdoctor.findings import Evidence

TRANSFORMERS_BNB = "https://huggingface.co/docs/transformers/quantization/bitsandbytes"


def _sites(facts: Facts, kind: str) -> list[LintSite]:
    return [site for site in (facts.lint.sites if facts.lint else []) if site.kind == kind]


def _evidence(site: LintSite) -> list[Evidence]:
    return [Evidence(site.where, site.code, f"lint.sites[{site.kind}]")]


def _installed(facts: Facts, name: str) -> str | None:
    python = facts.python
    if python is None:
        return None
    if name == "bitsandbytes":
        return python.bitsandbytes.version if python.bitsandbytes.installed else None
    return python.packages.get(name)


def _code(*lines: str) -> str:
    return "\n".join(f"    {line}" for line in lines)
