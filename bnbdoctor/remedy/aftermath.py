"""The machine as a fix leaves it: the facts after a report's commands have run.

A fix is a claim; the rules are how bnbdoctor tells a well machine from a broken one, so the claim is
checked by running them again on the facts the commands would leave (``bnbdoctor.rules.verify``). This
module only replays the commands onto a copy of the facts, command by command, in report order:

- ``pip install`` of bitsandbytes: the release pip picks here (the newest in the specifier that installs
  on this platform and keeps the torch, as :mod:`bnbdoctor.remedy.installable` decides), with the files its
  wheel ships for this platform (:mod:`bnbdoctor.knowledge.shipped`) and a clean install record;
- ``pip install`` of torch: that version with the CUDA of the index it names;
- ``pip install`` of another patient (transformers, accelerate, ...): the lowest version the specifier
  allows (what the rules' minimums are compared with), or the installed one when it already satisfies it;
- ``pip uninstall``: gone; ``export``/``unset`` (and PowerShell's ``$env:X = ...``): the environment;
- commands that only read (``nvidia-smi``, ``ldd``, ``python -m bitsandbytes``, ...): nothing.

What a command changes that the facts cannot say (a driver update, a conda env, a rebuild) is listed as
not replayed, and the facts the replay cannot know any more (the real loader's verdict, the new
library's ELF needs, the new torch's kernels) are dropped, so that the rules on them are skipped rather
than answered from the machine as it was.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass, field, replace

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from bnbdoctor.derive import predict_selection, visible_indices
from bnbdoctor.facts import BnbFacts, Facts, NativeFacts, SelectedLibrary, TorchArchFacts, TorchFacts
from bnbdoctor.knowledge.published import TORCH_PYPI_LINUX_CUDA, torch_for_cuda, torch_newest
from bnbdoctor.knowledge.releases import legacy_cuda_setup
from bnbdoctor.knowledge.shipped import shipped_libraries
from bnbdoctor.knowledge.transformers import LAST_OF_MAJOR
from bnbdoctor.remedy.commands import PipCall, index_cuda, parse, torch_index
from bnbdoctor.remedy.installable import installable
from bnbdoctor.remedy.target import target_of

#: Programs whose commands only look: replaying them changes nothing.
READ_ONLY = frozenset(
    {
        "nvidia-smi", "ldd", "ldconfig", "grep", "ls", "cat", "echo", "dmesg", "uname", "rocminfo", "readelf",
        "objdump", "nm", "strings", "which", "where", "bnbdoctor", "lspci", "clinfo", "sycl-ls", "xpu-smi",
        "nvcc", "Get-ChildItem",
    }
)  # fmt: skip
#: pip subcommands that only look.
_PIP_READ_ONLY = frozenset({"show", "list", "freeze", "index", "debug", "check", "--version", "-V"})
_POWERSHELL_SET = re.compile(r"\$env:([A-Za-z_][A-Za-z0-9_]*)\s*=\s*[\"']?([^\"']*)[\"']?$")
_POWERSHELL_UNSET = re.compile(r"Remove-Item\s+Env:([A-Za-z_][A-Za-z0-9_]*)$")
_EXPORT = re.compile(r"export ([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_UNSET = re.compile(r"unset ([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass
class Aftermath:
    """The facts after the commands, what was replayed, and what could not be."""

    facts: Facts
    replayed: list[str] = field(default_factory=list)  # commands whose effect is in ``facts``
    looked: list[str] = field(default_factory=list)  # commands that only read (``nvidia-smi``): no effect
    not_replayed: dict[str, str] = field(default_factory=dict)  # command -> what it does that is not modelled
    unknown: list[str] = field(default_factory=list)  # what the facts no longer know ("the real loader's verdict")


def facts_after(facts: Facts, commands: list[str]) -> Aftermath:
    """Replay ``commands`` (a report's, in order) on a copy of ``facts``; ``facts`` is never changed."""
    after = Aftermath(copy.deepcopy(facts))
    for command in commands:
        if only_looks(command):
            after.looked.append(command)
            continue
        reason = _replay(after, command)
        if reason is None:
            after.replayed.append(command)
        else:
            after.not_replayed[command] = reason
    return after


def only_looks(command: str) -> bool:
    """Whether every part of the line only reads the machine (a diagnostic step, not a fix)."""
    for segment in parse(command):
        if isinstance(segment, PipCall):
            if segment.subcommand not in _PIP_READ_ONLY:
                return False
            continue
        words = segment.split()
        if not words or re.fullmatch(r"(&&|\|\||;|\|)", segment.strip()):
            continue
        program = words[0].rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
        if program == "conda":
            if words[1:2] not in (["list"], ["info"], ["search"]):
                return False
        elif program not in READ_ONLY and not _python_looks(program, words):
            return False
    return True


def _python_looks(program: str, words: list[str]) -> bool:
    return bool(re.fullmatch(r"(python[\d.]*|py)(\.exe)?", program, re.IGNORECASE)) and (
        words[1:2] == ["-c"] or words[1:3] in (["-m", "bitsandbytes"], ["-m", "torch.utils.collect_env"])
    )


def _replay(after: Aftermath, command: str) -> str | None:
    """Apply one command line; None when its whole effect is modelled, else what is not."""
    text = command.strip()
    for pattern, apply in ((_POWERSHELL_SET, _set_env), (_POWERSHELL_UNSET, _unset_env)):
        match = pattern.fullmatch(text)
        if match:
            apply(after, *match.groups())
            return None
    for segment in parse(command):
        if isinstance(segment, PipCall):
            reason = _replay_pip(after, segment)
        elif re.fullmatch(r"\s+(&&|\|\||;|\|)\s+", segment) or not segment.strip():
            continue
        else:
            reason = _replay_shell(after, segment.strip())
        if reason is not None:
            return reason
    return None


def _replay_shell(after: Aftermath, segment: str) -> str | None:
    export = _EXPORT.fullmatch(segment)
    if export:
        _set_env(after, export.group(1), export.group(2).strip().strip("\"'"))
        return None
    unset = _UNSET.fullmatch(segment)
    if unset:
        _unset_env(after, unset.group(1))
        return None
    words = segment.split()
    program = words[0].rsplit("/", 1)[-1].rsplit("\\", 1)[-1] if words else ""
    if program == "conda" and words[1:2] == ["install"]:
        return _conda_install(after, words[2:])
    if program == "conda" and len(words) > 1 and words[1] not in ("list", "info", "env", "search"):
        return f"`{' '.join(words[:2])}` changes a conda env, which bnbdoctor does not replay"
    if program in READ_ONLY or _python_looks(program, words):
        return None
    return f"`{program}` changes the machine in a way bnbdoctor does not replay"


def _conda_install(after: Aftermath, words: list[str]) -> str | None:
    """``conda install -c conda-forge "bitsandbytes>=X"``: replayed as the release pip would pick (conda-forge
    packages PyPI's releases); any other package conda installs is not replayed."""
    from packaging.requirements import InvalidRequirement, Requirement

    specs = [w.strip("\"'") for w in words if not w.startswith("-") and w not in ("conda-forge", "nvidia", "pytorch")]
    for text in specs:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            return f"`conda install {text}` is not replayed"
        if req.name != "bitsandbytes":
            return f"`conda install {req.name}` changes a conda env in a way bnbdoctor does not replay"
        reason = _install_bnb(after, req.specifier, no_deps=False)
        if reason:
            return reason
        python = after.facts.python
        if python is not None:
            python.bitsandbytes.installer = "conda"
            python.conda_packages["bitsandbytes"] = python.bitsandbytes.version or ""
    return None


def _set_env(after: Aftermath, name: str, value: str) -> None:
    after.facts.env[name] = value
    _environment_changed(after, name)


def _unset_env(after: Aftermath, name: str) -> None:
    after.facts.env.pop(name, None)
    _environment_changed(after, name)


def _environment_changed(after: Aftermath, name: str) -> None:
    gpu = after.facts.gpu
    if name == "CUDA_VISIBLE_DEVICES" and gpu is not None and isinstance(gpu.devices, list):
        mask = after.facts.env.get(name)
        gpu.cuda_visible_devices = mask
        shown = visible_indices([(d.index, d.uuid) for d in gpu.devices], mask)
        for device in gpu.devices:
            device.visible = device.index in shown
    _forget_runtime(after)


def _replay_pip(after: Aftermath, call: PipCall) -> str | None:
    if call.subcommand in _PIP_READ_ONLY:
        return None
    python = after.facts.python
    if python is None:
        return "pip runs in an interpreter the facts do not describe"
    if call.subcommand == "uninstall":
        for token in (t for t in call.tokens if not t.startswith("-")):
            _uninstall(after, token.lower().replace("_", "-"))
        return None
    if call.subcommand != "install":
        return f"`pip {call.subcommand}` is not replayed"
    if any(t in ("-r", "--requirement", "-e", "--editable") for t in call.tokens) or (
        not call.requirements and any(not t.startswith("-") for t in call.tokens)
    ):
        return "a pip install from a file, a path or a checkout is not replayed"
    packages = call.packages()
    if "torch" in packages:
        reason = _install_torch(after, call, packages["torch"].specifier)
        if reason:
            return reason
    for name, req in packages.items():
        if name == "torch":
            continue
        reason = (
            _install_bnb(after, req.specifier, no_deps="--no-deps" in call.tokens)
            if name == "bitsandbytes"
            else _install_other(after, name, req.specifier)
        )
        if reason:
            return reason
    return None


def _uninstall(after: Aftermath, name: str) -> None:
    python = after.facts.python
    if python is None:
        return
    if name == "bitsandbytes":
        python.bitsandbytes = BnbFacts(installed=False)
        after.facts.native = None
        _forget_runtime(after)
    elif name == "torch":
        python.torch = TorchFacts(installed=False)
        after.facts.torch_arch = None
        _forget_runtime(after)
    elif name in python.packages:
        python.packages[name] = None


def _install_bnb(after: Aftermath, spec: SpecifierSet, *, no_deps: bool) -> str | None:
    facts = after.facts
    python, platform = facts.python, facts.platform
    if python is None:
        return "pip runs in an interpreter the facts do not describe"
    # pip's view: it knows platforms, Python and torch, not GPU kernels (a release without them installs, and
    # the re-diagnosis says what then fails)
    target = replace(target_of(facts), gpu_majors=())
    choices = installable(target, spec if str(spec) else None, keep_torch=not no_deps)
    if not choices:
        return f"no bitsandbytes{spec} release installs here, so pip would fail"
    release = choices[-1]  # pip takes the newest that fits
    shipped = shipped_libraries(release.version, platform.os if platform else None, target.arch)
    if shipped is None:
        return f"the files bitsandbytes {release.version}'s wheel ships for this platform are not recorded"
    old = python.bitsandbytes
    site = python.site_packages[0] if python.site_packages else None
    location = old.location if old.installed and old.location else (f"{site}/bitsandbytes" if site else None)
    python.bitsandbytes = BnbFacts(
        installed=True,
        version=release.version,
        location=location,
        has_metadata=True,
        requires_python=release.requires_python,
        requires_torch=release.requires_torch,
        native_libraries=list(shipped),
        legacy_cuda_setup=legacy_cuda_setup(release.version),
        wheel_tag=None,
        dist_format="wheel",
        installer="pip",
    )
    _forget_runtime(after, rebuilt=True)
    return None


def _install_torch(after: Aftermath, call: PipCall, spec: SpecifierSet) -> str | None:
    """torch as pip installs it: a pin, or the newest published release the specifier and the index allow;
    the CUDA of the index (PyPI's own Linux default for its release, a CPU build elsewhere)."""
    facts = after.facts
    python = facts.python
    if python is None:
        return "pip runs in an interpreter the facts do not describe"
    index = torch_index(call)
    if index is None and any(t.startswith(("--index-url", "-i", "--extra-index-url")) for t in call.tokens):
        return "a torch from another vendor's index is not replayed"
    cuda = index_cuda(index)
    pins = [s.version for s in spec if s.operator == "=="]
    if pins:
        version: str | None = pins[0]
    elif cuda:
        lows = [s.version for s in spec if s.operator in (">=", ">")]
        version = torch_for_cuda(cuda, at_least=lows[0] if lows else None)
    else:
        version = torch_newest(str(spec) or ">=0")
    if version is None:
        return f"no torch{spec} release is known{f' for CUDA {cuda}' if cuda else ''}"
    linux = facts.platform is not None and facts.platform.os == "linux"
    if index is None and linux:
        minor = ".".join(version.split("+")[0].split(".")[:2])
        cuda = TORCH_PYPI_LINUX_CUDA.get(minor)
        if cuda is None:
            return f"which CUDA PyPI's torch {version} is built for is not recorded"
        label = None
    else:
        label = index
    python.torch = TorchFacts(
        installed=True,
        version=version if "+" in version or label is None else f"{version}+{label}",
        cuda=cuda,
        hip=index[4:] if index and index.startswith("rocm") else None,
        location=python.torch.location,
        installer="pip",
    )
    facts.torch_arch = TorchArchFacts(error="the new torch is not installed yet: its kernels are read from the table")
    _note(after, "the new torch's own CUDA libraries")
    _forget_runtime(after)
    return None


def _install_other(after: Aftermath, name: str, spec: SpecifierSet) -> str | None:
    python = after.facts.python
    if python is None:
        return "pip runs in an interpreter the facts do not describe"
    key = name.replace("-", "_") if name.replace("-", "_") in python.packages else name
    installed = python.packages.get(key)
    if installed and _version(installed) is not None and spec.contains(installed, prereleases=True):
        return None  # pip keeps what already satisfies it
    lows = [s.version for s in spec if s.operator in (">=", "==", "~=")]
    if not lows and name == "transformers":
        lows = [v for v in LAST_OF_MAJOR.values() if spec.contains(v)]
    if not lows:
        return f"which {name} release pip picks is not replayed"
    python.packages[key] = max(lows, key=lambda v: _version(v) or Version("0"))
    return None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _forget_runtime(after: Aftermath, *, rebuilt: bool = False) -> None:
    """Drop what was measured on the machine as it was and now depends on what changed: the real loader's
    verdict and the library's ELF needs. The library choice is predicted again from the new facts."""
    facts = after.facts
    if facts.load is not None:
        facts.load = None
        _note(after, "the real loader's verdict")
    facts.probes = [p for p in facts.probes if p.name not in ("load", "native")]
    selection = predict_selection(facts)
    bnb = facts.python.bitsandbytes if facts.python else None
    if bnb is None or not bnb.installed:
        facts.native = None
        return
    if facts.native is None and not rebuilt:
        return  # the facts never had the library chain: nothing to predict it from
    if facts.native is not None and facts.native.library:
        _note(after, "the new library's ELF needs")
    facts.native = NativeFacts(
        selection=SelectedLibrary(**asdict(selection)) if selection is not None else None,
        package_dir=bnb.location,
    )


def _note(after: Aftermath, what: str) -> None:
    if what not in after.unknown:
        after.unknown.append(what)
