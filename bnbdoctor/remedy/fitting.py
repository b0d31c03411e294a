"""Fit every command of a diagnosis to the machine it is printed for (see the package docstring).

One pass over the findings in report order (the root causes first):

1. a pinned torch on a PyTorch CUDA index becomes a (torch, CUDA) pair that was published;
2. each bitsandbytes requirement is narrowed to the releases that install here and keep the
   installed torch (unless the same finding installs another torch); the report agrees on one
   specifier: a finding whose releases are disjoint from an earlier finding's says so instead of
   printing a second, conflicting install; a requirement that nothing satisfies becomes what to
   change first (torch, Python, the OS) with the command where there is one;
3. pip runs as the examined interpreter (``<python> -m pip``);
4. a command for a tool the machine lacks is not offered (``nvidia-smi`` without a driver, a
   conda command outside conda unless the finding creates the env, POSIX shell lines on Windows
   become PowerShell or are left out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet

from bnbdoctor.derive import vendor_torch_version
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Finding, Severity
from bnbdoctor.knowledge.cuda import TORCH_CPU_INDEX_URL
from bnbdoctor.knowledge.published import (
    Published,
    published_releases,
    torch_for_cuda,
    torch_published_for,
)
from bnbdoctor.remedy.channels import channel_fix, sentence
from bnbdoctor.remedy.commands import PipCall, Segment, index_cuda, parse, programs, render, torch_index
from bnbdoctor.remedy.installable import Blocked, blocked, describe, installable
from bnbdoctor.remedy.target import Target, target_of

if TYPE_CHECKING:
    from packaging.requirements import Requirement

BNB = "bitsandbytes"
#: Programs that exist only in a POSIX shell (left out on Windows unless translated).
POSIX_ONLY = frozenset(
    {"ldconfig", "uname", "cat", "ls", "grep", "strings", "readelf", "ldd", "source", "nm", "objdump", "[", "which"}
)


@dataclass
class _Command:
    finding: Finding
    text: str
    segments: list[Segment]
    keep: bool = True


@dataclass
class _Plan:
    target: Target
    agreed: list[Published] | None = None  # the releases every bnb install of the report allows
    agreed_by: str | None = None  # the rule id that narrowed it first
    bnb_calls: list[PipCall] = field(default_factory=list)


def fit_remedies(findings: Iterable[Finding], facts: Facts) -> None:
    """Rewrite the findings' commands in place so that each one works on this machine."""
    findings = list(findings)
    plan = _Plan(target_of(facts))
    fitted: list[tuple[Finding, list[_Command]]] = []
    for finding in findings:
        commands = [_Command(finding, text, parse(text)) for text in finding.remediation.commands]
        torch_pin = _fit_torch(commands, plan.target)
        kept: list[_Command] = []
        for command in commands:
            before = _fit_bnb(command, plan, torch_pin)
            kept.extend(_Command(finding, text, parse(text)) for text in before)
            if command.keep:
                kept.append(command)
        fitted.append((finding, kept))
    final = _agreed_spec(plan)
    for call in plan.bnb_calls:
        for req in call.requirements.values():
            if _name(req) == BNB and final is not None:
                req.specifier = SpecifierSet(final)
    _one_specifier_each([c for _, kept in fitted for c in kept])
    for finding, fitted_commands in fitted:
        kept = _for_owners(fitted_commands, facts)
        _reinstall_alone(kept)
        if finding.severity is not Severity.ERROR:
            kept = _no_installs(finding, kept)
        finding.remediation.commands = _finish(kept, plan.target)


def _for_owners(commands: list[_Command], facts: Facts) -> list[_Command]:
    """Each pip call of a component conda, a vendor or a source build owns, rewritten for that channel or
    left out, with the reason in the finding's fix (:mod:`bnbdoctor.remedy.channels`)."""
    kept: list[_Command] = []
    for command in commands:
        calls = [s for s in command.segments if isinstance(s, PipCall) and s.subcommand == "install"]
        fix = channel_fix(calls[0], facts) if len(calls) == 1 else None
        if fix is None:
            kept.append(command)
            continue
        _note(command.finding, fix.note)
        if fix.lines is None:
            kept.append(command)
        elif len(command.segments) == 1:  # the whole line is the pip call: the owner's command replaces it
            kept.extend(_Command(command.finding, line, parse(line)) for line in fix.lines)
    return kept


def _reinstall_alone(commands: list[_Command]) -> None:
    """``pip install --force-reinstall bitsandbytes`` reinstalls every dependency too, torch at the newest release
    bitsandbytes accepts (pip's resolver, tests/test_remedy_resolver.py): it gets ``--no-deps``, so that only
    bitsandbytes is reinstalled and the torch the command was narrowed to keep stays."""
    for command in commands:
        for call in (s for s in command.segments if isinstance(s, PipCall) and s.subcommand == "install"):
            names = set(call.packages())
            forced = "--force-reinstall" in call.tokens and "--no-deps" not in call.tokens
            if forced and BNB in names and "torch" not in names:
                _insert_option(call, call.tokens.index("--force-reinstall") + 1, "--no-deps")


def _insert_option(call: PipCall, at: int, option: str) -> None:
    """Put ``option`` into the call's tokens at ``at``, keeping the parsed requirements at their tokens."""
    call.tokens.insert(at, option)
    call.requirements = {(i + 1 if i >= at else i): req for i, req in call.requirements.items()}


def _no_installs(finding: Finding, commands: list[_Command]) -> list[_Command]:
    """A warning or a note never prints an install: nothing fails yet, and a healthy machine stays as it is.
    The fix's words still say what to install, for whoever decides to."""
    kept = [c for c in commands if not any(_changes_packages(s) for s in c.segments)]
    if len(kept) < len(commands):
        _note(finding, "(No install command is printed for a warning: nothing fails yet.)")
    return kept


def _changes_packages(segment: Segment) -> bool:
    if isinstance(segment, PipCall):
        return segment.subcommand in ("install", "uninstall")
    return bool(re.match(r"\s*(conda|mamba|micromamba)\s+(install|remove|update|create)\b", segment))


def _one_specifier_each(commands: list[_Command]) -> None:
    """One specifier per package per report (besides bitsandbytes, agreed above, and torch, whose pins
    follow its index): a package asked for as ``transformers`` here and ``transformers>=5.18.0`` there
    is printed with both constraints everywhere."""
    wanted: dict[str, list[tuple[PipCall, int]]] = {}
    for command in commands:
        for call in (s for s in command.segments if isinstance(s, PipCall) and s.subcommand == "install"):
            for index, req in call.requirements.items():
                if _name(req) not in (BNB, "torch"):
                    wanted.setdefault(_name(req), []).append((call, index))
    for places in wanted.values():
        specs = {str(call.requirements[i].specifier) for call, i in places}
        if len(specs) < 2:
            continue
        combined = SpecifierSet(",".join(s for s in sorted(specs) if s))
        for call, index in places:
            call.requirements[index].specifier = combined


def _name(req: Requirement) -> str:
    return req.name.lower().replace("_", "-")


def _cuda_of_index(call: PipCall) -> str | None:
    return index_cuda(torch_index(call))


def _fit_torch(commands: list[_Command], target: Target) -> str | None:
    """Published pins on PyTorch's CUDA indexes; returns the torch this finding installs ("" unpinned)."""
    installs: str | None = None
    for command in commands:
        for call in (s for s in command.segments if isinstance(s, PipCall) and s.subcommand == "install"):
            for req in call.requirements.values():
                if _name(req) != "torch":
                    continue
                installs = installs or ""
                _cpu_build_without_a_driver(command, call, target)
                pinned = [s.version for s in req.specifier if s.operator == "=="]
                cuda = _cuda_of_index(call)
                if pinned and cuda and torch_published_for(pinned[0], cuda) is not True:
                    known = torch_published_for(pinned[0], cuda) is False
                    other = torch_for_cuda(cuda, near=pinned[0]) if known else None
                    req.specifier = SpecifierSet(f"=={other}") if other else SpecifierSet()
                    pinned = [other] if other else []
                if pinned:
                    installs = pinned[0]
    return installs


#: Options that choose where pip looks: a command that names one has chosen its torch build already.
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f")


def _cpu_build_without_a_driver(command: _Command, call: PipCall, target: Target) -> None:
    """On Linux, PyPI's torch is the CUDA build (several GB of nvidia-* wheels). Where no NVIDIA driver answers,
    a torch install from PyPI gets PyTorch's CPU index instead, and the fix says why and what an AMD or Intel GPU
    needs instead; one that names an index is left as its rule chose it."""
    if target.os != "linux" or target.nvidia_driver is not False:
        return
    if any(token.split("=")[0] in _INDEX_OPTIONS for token in call.tokens):
        return
    call.tokens += ["--index-url", TORCH_CPU_INDEX_URL]
    _note(
        command.finding,
        "(No NVIDIA driver answers here, so torch comes from PyTorch's CPU index: PyPI's Linux torch is the CUDA "
        "build. For an AMD or Intel GPU, choose the ROCm or XPU build on pytorch.org instead.)",
    )


def _fit_bnb(command: _Command, plan: _Plan, torch_pin: str | None) -> list[str]:
    """Narrow the command's bitsandbytes requirement; returns commands to run before it (a torch change)."""
    target = plan.target
    if torch_pin is not None:  # the finding installs a torch of its own: judge against that one
        target = replace(target, torch=torch_pin or None)
    before: list[str] = []
    for call in (s for s in command.segments if isinstance(s, PipCall) and s.subcommand == "install"):
        for req in [r for r in call.requirements.values() if _name(r) == BNB]:
            spec = req.specifier if str(req.specifier) else None
            ok = installable(target, spec)
            if not ok:
                obstacle = blocked(target, spec) or Blocked(f"no {BNB}{spec or ''} release installs here", "platform")
                fix = _change_first(obstacle, target, spec)
                if fix is None:
                    command.keep = False
                    _note(command.finding, f"{sentence(obstacle.reason)}.")
                    return before
                torch_spec, torch_command = fix
                vendor = vendor_torch_version(target.torch)
                _note(
                    command.finding,
                    f"{sentence(obstacle.reason)}. Upgrade torch first (torch{torch_spec}), then bitsandbytes"
                    + (
                        f"; this torch ({target.torch}) is a vendor build, so a newer image or vendor release "
                        "is the better way to a newer torch."
                        if vendor
                        else "."
                    ),
                )
                before.append(torch_command)
                target = replace(target, torch=None)
                ok = installable(target, spec)
            newer = [r for r in installable(target, spec, keep_torch=False) if r.parsed > ok[-1].parsed]
            if newer and target.torch:
                _note(
                    command.finding,
                    f"The command keeps your torch {target.torch}: releases after {ok[-1].version} require a newer "
                    "torch, and pip would replace it to install them.",
                )
            if plan.agreed is None:
                plan.agreed, plan.agreed_by = ok, command.finding.rule_id
            else:
                both = [r for r in plan.agreed if r in ok]
                if not both:
                    command.keep = False
                    _note(
                        command.finding,
                        f"(Its bitsandbytes install, {BNB}{req.specifier}, is left out: it conflicts with the one "
                        f"{plan.agreed_by} gives above.)",
                    )
                    return before
                plan.agreed = both
            plan.bnb_calls.append(call)
    return before


def _change_first(obstacle: Blocked, target: Target, spec: SpecifierSet | None) -> tuple[str, str] | None:
    """(torch specifier, command) when the obstacle is the installed torch and a newer one is published."""
    if obstacle.change != "torch":
        return None
    needing = installable(replace(target, torch=None), spec)
    if not needing or not needing[0].requires_torch:
        return None
    torch_spec = needing[0].requires_torch
    minimum = torch_spec.split(",")[0].removeprefix(">=")
    return torch_spec, f'pip install "torch{torch_spec}"' + _index_option(target, minimum)


def _index_option(target: Target, minimum: str) -> str:
    """The PyTorch index of the installed torch's CUDA when it publishes a torch that new, else none
    (PyPI's default build)."""
    cuda = target.torch_cuda
    if not cuda or torch_for_cuda(cuda, at_least=minimum) is None:
        return ""
    digits = cuda.replace(".", "")
    return f" --index-url https://download.pytorch.org/whl/cu{digits}"


def _agreed_spec(plan: _Plan) -> str | None:
    if not plan.agreed:
        return None
    newest_here = installable(plan.target) or list(published_releases())
    upper_open = plan.agreed[-1] == newest_here[-1] and plan.agreed[-1] == published_releases()[-1]
    return describe(plan.agreed, upper_open)


def _note(finding: Finding, text: str) -> None:
    if text not in finding.remediation.text:
        finding.remediation.text = f"{finding.remediation.text.rstrip()} {text}".strip()


def _finish(commands: list[_Command], target: Target) -> list[str]:
    """Render each command for this machine; leave out those for tools it lacks."""
    kept: list[str] = []
    creates_conda_env = any(re.match(r"conda (create|activate)\b", c.text) for c in commands)
    for command in commands:
        text, segments = command.text, command.segments
        tools = programs(text)
        if target.nvidia_driver is False and "nvidia-smi" in tools:
            continue
        if target.conda is False and not creates_conda_env and ("conda" in tools or "$CONDA_PREFIX" in text):
            continue
        line = render(segments, target.pip, target.pip_options)
        if target.windows:
            translated = _powershell(line)
            if translated is None:
                continue
            line = translated
        if line not in kept:
            kept.append(line)
    return kept


def _powershell(line: str) -> str | None:
    """A POSIX shell line as PowerShell, or None when it has no PowerShell form."""
    export = re.fullmatch(r"export ([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
    if export:
        name, value = export.groups()
        value = re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", r"$env:\1", value.strip("\"'"))
        return f'$env:{name} = "{value}"'
    unset = re.fullmatch(r"unset ([A-Za-z_][A-Za-z0-9_]*)", line)
    if unset:
        return f"Remove-Item Env:{unset.group(1)}"
    if re.fullmatch(r"echo \$[A-Za-z_][A-Za-z0-9_]*", line):
        return line.replace("$", "$env:", 1)
    if any(tool in POSIX_ONLY for tool in programs(line)):
        return None
    return line
