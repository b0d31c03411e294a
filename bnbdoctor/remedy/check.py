"""The remedy check: does every printed command fit the machine it is printed for?

Independent of :mod:`bnbdoctor.remedy.fitting` in what it trusts: it reads the final command lines
of a diagnosis, as a person would copy them, and checks them against the machine's constraints
and the published releases. The tests run it over every finding of every recorded machine, every
kept log and every rule case; a problem is a bug in a rule or in the fitting pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from packaging.specifiers import SpecifierSet

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Finding
from bnbdoctor.knowledge.published import cuda_indexes, torch_published_for
from bnbdoctor.remedy.commands import PipCall, index_cuda, parse, programs, torch_index
from bnbdoctor.remedy.fitting import POSIX_ONLY
from bnbdoctor.remedy.installable import installable
from bnbdoctor.remedy.target import Target, target_of

_KNOWN_INDEXES = cuda_indexes()


def remedy_problems(findings: Iterable[Finding], facts: Facts) -> list[str]:
    """Every way a finding's commands do not fit this machine, as ``"RULE: `command`: problem"``."""
    target = target_of(facts)
    problems: list[str] = []
    bnb_specs: dict[str, str] = {}
    for finding in findings:
        commands = finding.remediation.commands
        installs_torch = None
        for command in commands:
            for call in _installs(command):
                torch_req = call.packages().get("torch")
                if torch_req is not None:
                    pins = [s.version for s in torch_req.specifier if s.operator == "=="]
                    installs_torch = pins[0] if pins else ""
        creates_env = any(re.match(r"conda (create|activate)\b", c) for c in commands)
        for command in commands:
            problems.extend(
                f"{finding.rule_id}: `{command}`: {p}"
                for p in _command_problems(command, target, installs_torch, creates_env, bnb_specs, finding.rule_id)
            )
    return problems


def _installs(command: str) -> list[PipCall]:
    return [s for s in parse(command) if isinstance(s, PipCall) and s.subcommand == "install"]


def _command_problems(
    command: str,
    target: Target,
    installs_torch: str | None,
    creates_env: bool,
    bnb_specs: dict[str, str],
    rule_id: str,
) -> list[str]:
    problems: list[str] = []
    tools = programs(command)
    for segment in parse(command):
        if isinstance(segment, PipCall) and not segment.raw.strip().startswith(target.pip):
            problems.append(f"pip is not run as the examined interpreter ({target.pip})")
    if target.nvidia_driver is False and "nvidia-smi" in tools:
        problems.append("nvidia-smi on a machine without an NVIDIA driver")
    if target.conda is not True and not creates_env:
        if "$CONDA_PREFIX" in command:
            problems.append("$CONDA_PREFIX outside a conda env")
        if "conda" in tools and target.conda is False:
            problems.append("a conda command outside a conda env, with no env created")
    if target.windows:
        for tool in tools:
            if tool in POSIX_ONLY or tool in ("export", "unset"):
                problems.append(f"`{tool}` is a POSIX shell command on Windows")
    for call in _installs(command):
        problems.extend(_pip_problems(call, target, installs_torch, bnb_specs, rule_id))
    return problems


def _pip_problems(
    call: PipCall, target: Target, installs_torch: str | None, bnb_specs: dict[str, str], rule_id: str
) -> list[str]:
    problems: list[str] = []
    index = torch_index(call)
    cuda = index_cuda(index)
    if cuda and cuda not in _KNOWN_INDEXES:
        problems.append(f"PyTorch publishes no {index} index")
    packages = call.packages()
    torch_req = packages.get("torch")
    if torch_req is not None and cuda:
        for spec in torch_req.specifier:
            if spec.operator == "==" and torch_published_for(spec.version, cuda) is not True:
                problems.append(f"torch {spec.version} was not published for CUDA {cuda} (or is not known to be)")
    for name, req in packages.items():
        if name == "torch":
            continue  # its pins follow the index of each command
        seen = bnb_specs.setdefault(name, str(req.specifier))
        if SpecifierSet(seen) != req.specifier:
            problems.append(f"a second {name} specifier in one report ({seen!r} and {str(req.specifier)!r})")
    bnb = packages.get("bitsandbytes")
    if bnb is not None:
        spec_text = str(bnb.specifier)
        judged = target if installs_torch is None else replace(target, torch=installs_torch or None)
        if not installable(judged, bnb.specifier if spec_text else None):
            problems.append(f"no bitsandbytes{spec_text} release installs here (keeping torch {judged.torch})")
    return problems
