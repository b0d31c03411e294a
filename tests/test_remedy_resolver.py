"""pip's own resolver on every install command bnbdoctor prints (issue 23, item 4).

tests/test_remedies.py checks each printed command against bnbdoctor's model of what pip would do
(``bnbdoctor/data/bnb_releases.json``, :mod:`bnbdoctor.remedy.installable`). These tests ask pip
itself. Every ``pip install`` call printed for every recorded machine (``platform_fixtures/``),
every kept log (``tests/data/real_logs``, ``tests/data/synthetic_logs``) and every rule case
(``tests/rule_cases``) is resolved by pip for the diagnosed machine's platform against PyPI, and
must resolve, to versions the command promised:

- every package the command names, at a version inside its specifier (a bitsandbytes inside
  ``"bitsandbytes>=0.45.1,<0.46"``);
- the machine's torch unchanged when the command does not install torch. pip sees that torch as
  installed, at its exact version (``2.5.1+cu121``, NVIDIA's ``2.2.0a0+81ea7a4``: PyPI has
  neither, so a constraint ``torch==<version>`` could only fail), and decides as it would on the
  machine: it keeps it when it fits what the command installs (pip's own rule, pre-releases
  included), and plans to replace it otherwise, under ``--force-reinstall`` too. A command that
  installs torch (an earlier step of the same fix, e.g. ``pip install "torch>=2.3,<3"``) leaves
  the torch it resolved to, or its pin, for the steps after it;
- under ``--no-deps`` (pip keeps any torch), what pip installs accepts the machine's torch, as
  ``pip check`` would judge it afterwards.

How pip is run (:func:`pip_argv`), and why:

- ``pip install --dry-run --report FILE --only-binary=:all: --platform ... --python-version X.Y
  --implementation cp --abi cpXY``, pip 26.3 (pinned; installed once into ``.pytest_cache``). pip
  23.2 downloads every wheel it resolved even with ``--dry-run`` (pypa/pip#12603; pypa/pip#13482
  made the dry run stop before the downloads, as 26.3 does): a torch resolution is then 3 GB of
  CUDA wheels. The PyPI this was written on serves no PEP 658 metadata files, so pip reads each
  wheel's METADATA through HTTP range requests (``--use-feature=fast-deps``): a full run downloads
  no wheel whole (672 metadata reads). What it does read (370-490 MB) is mostly the projects' index
  pages, served uncompressed there (pydantic-core's is 6.9 MB, regex's 4.0 MB, numpy's 1.9 MB): a
  transformers resolution reads ~20 MB, a torch one ~45 MB.
- Platform tags as pip on that machine accepts them: glibc G on Linux gives manylinux_2_G ...
  manylinux_2_17 (manylinux_2_5 on x86_64) with the legacy aliases manylinux2014/2010/1, which pip
  does not derive from the PEP 600 names (torch 2.5.1's wheels are manylinux1); linux_x86_64 is
  left out (PyPI refuses such wheels). macOS: :func:`packaging.tags.mac_platforms`. Windows:
  win_amd64 / win_arm64.
- Environment markers (``platform_system == "Linux"`` on torch's CUDA wheels, ``python_version <
  "3.11"``) are evaluated against the diagnosed machine: pip evaluates them against the interpreter
  running it whatever ``--platform`` says (pypa/pip#11664), so a small bootstrap (:data:`BOOT`)
  sets the marker environment of pip's vendored packaging before pip starts. pip runs with ``-S``
  and only pip and the machine's torch on its path: nothing of this venv looks installed.
- Only PyPI: pip's configuration files and PIP_* settings (this machine's find-links, extra
  indexes, its global torch cap) are not the diagnosed machine's, so ``PIP_CONFIG_FILE`` is the null
  device and the index is ``https://pypi.org/simple`` (``BNBDOCTOR_RESOLVER_INDEX_URL`` overrides it,
  e.g. for a PyPI mirror). Commands on another index (``--index-url
  https://download.pytorch.org/whl/cu121``, a Jetson index) cannot be resolved here: they are
  collected and skipped with one reason (tests/test_remedies.py checks their (torch pin, CUDA
  index) pairs against ``bnbdoctor/knowledge/published.py`` and ``torch_wheels.py``).
- What the facts do not say is assumed and named in each failure: glibc 2.35, x86_64, Python 3.11,
  Linux, macOS 14.0.

Each distinct (platform, installed torch, command) is resolved once per session, in parallel, for the
sources the session selected. The unit tests at the bottom (no network) check the argv built from real
machines' targets and the reading of reports and errors pip wrote (tests/data/resolver/).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, fixture_names
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.tags import mac_platforms
from packaging.utils import canonicalize_name
from packaging.version import Version

from bnbdoctor.doctor import diagnose
from bnbdoctor.explain import explain_file
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Finding
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.remedy.commands import PipCall, pip_calls
from bnbdoctor.remedy.target import Target, target_of
from bnbdoctor.ruledocs.cases import CASES, load_case, run_case
from bnbdoctor.ruledocs.cases import case_facts as facts_of_case

PIP_VERSION = "26.3"
PIP_HOME = ROOT / ".pytest_cache" / "bnbdoctor-resolver" / f"pip-{PIP_VERSION}"
INDEX_URL = os.environ.get("BNBDOCTOR_RESOLVER_INDEX_URL", "https://pypi.org/simple")
PYPI_PREFIXES = ("https://pypi.org/", "https://files.pythonhosted.org/")
DATA = ROOT / "tests" / "data" / "resolver"
#: pip runs at a time: they wait on the network mostly; the machines that run this have 2 cores.
WORKERS = 6

ASSUMED_GLIBC = Version("2.35")
ASSUMED_PYTHON = Version("3.11")
ASSUMED_MACOS = Version("14.0")
#: PEP 600 names and the legacy names of the same glibc (pip accepts both on a machine that has it).
LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
#: pip options that name where packages come from: a command with one is not resolved against PyPI here.
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
#: pip settings that only say how to reach an index (kept); every other PIP_* setting is dropped.
TRANSPORT = ("PIP_CERT", "PIP_CLIENT_CERT", "PIP_PROXY", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT", "PIP_RETRIES")

#: Runs pip with the diagnosed machine's marker environment (pypa/pip#11664): argv[1] is that
#: environment as JSON, argv[2] the folders to put first on sys.path (pip, the installed torch).
BOOT = """
import json, sys
environment = json.loads(sys.argv[1])
sys.path[:0] = json.loads(sys.argv[2])
from pip._vendor.packaging import markers
markers.default_environment = lambda: dict(environment)
from pip._internal.cli.main import main
sys.exit(main(sys.argv[3:]))
"""


# ------------------------------------------------------------------ the diagnosed machine, as pip sees it
@dataclass(frozen=True)
class Platform:
    """The options that make pip resolve for another machine, and what was assumed to fill them."""

    tags: tuple[str, ...]
    python: Version  # major.minor
    markers: tuple[tuple[str, str], ...]  # the marker environment, sorted
    assumed: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        nodot = f"{self.python.major}{self.python.minor}"
        platforms = [arg for tag in self.tags for arg in ("--platform", tag)]
        # CPython before 3.8 tags its ABI with pymalloc's "m" (torch 1.13.1's cp37-cp37m wheels): both are offered.
        abis = ["--abi", f"cp{nodot}m"] if self.python < Version("3.8") else []
        return [
            "--only-binary=:all:",
            *platforms,
            *("--python-version", f"{self.python.major}.{self.python.minor}"),
            *("--implementation", "cp", "--abi", f"cp{nodot}"),
            *abis,
        ]

    @property
    def label(self) -> str:
        guessed = f"; assumed: {', '.join(self.assumed)}" if self.assumed else ""
        return f"{self.tags[0]}, cp{self.python.major}{self.python.minor}{guessed}"

    def marker_environment(self) -> dict[str, str]:
        return dict(self.markers)


def manylinux_tags(glibc: Version, arch: str) -> list[str]:
    """Newest first, as pip on a glibc-G machine orders them (packaging's _manylinux.platform_tags)."""
    oldest = 5 if arch in ("x86_64", "i686") else 17
    tags = []
    for minor in range(glibc.minor, oldest - 1, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        legacy = LEGACY_MANYLINUX.get(minor)
        if legacy and (minor == 17 or arch in ("x86_64", "i686")):
            tags.append(f"{legacy}_{arch}")
    return tags


def platform_for(target: Target) -> Platform:
    assumed: list[str] = []
    os_name = target.os
    if os_name not in ("linux", "macos", "windows"):
        os_name = "linux"
        assumed.append("Linux")
    arch = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get((target.arch or "").lower(), target.arch)
    if arch not in ("x86_64", "aarch64"):
        arch = "x86_64"
        assumed.append("x86_64")
    python = target.python
    if python is None:
        python = ASSUMED_PYTHON
        assumed.append(f"Python {ASSUMED_PYTHON}")
    python = Version(f"{python.major}.{python.minor}")
    full = target.python if target.python is not None and len(target.python.release) >= 3 else python
    full_text = ".".join(str(n) for n in (*full.release, 0, 0)[:3])
    if os_name == "linux":
        glibc = target.glibc
        if glibc is None:
            glibc = ASSUMED_GLIBC
            assumed.append(f"glibc {ASSUMED_GLIBC}")
        tags = manylinux_tags(glibc, arch)
        system, sys_platform, machine, os_kind = "Linux", "linux", arch, "posix"
    elif os_name == "macos":
        macos = target.macos
        if macos is None:
            macos = ASSUMED_MACOS
            assumed.append(f"macOS {ASSUMED_MACOS}")
        machine = "arm64" if arch == "aarch64" else "x86_64"
        tags = list(mac_platforms((macos.major, macos.minor), machine))
        system, sys_platform, os_kind = "Darwin", "darwin", "posix"
    else:
        tags = ["win_arm64" if arch == "aarch64" else "win_amd64"]
        system, sys_platform, os_kind = "Windows", "win32", "nt"
        machine = "ARM64" if arch == "aarch64" else "AMD64"
    markers = {
        "implementation_name": "cpython",
        "implementation_version": full_text,
        "os_name": os_kind,
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": system,
        "platform_version": "",
        "python_full_version": full_text,
        "python_version": f"{python.major}.{python.minor}",
        "sys_platform": sys_platform,
    }
    return Platform(tuple(tags), python, tuple(sorted(markers.items())), tuple(assumed))


def boot(platform: Platform, paths: list[str]) -> list[str]:
    """The interpreter running pip through :data:`BOOT`: no site-packages, only ``paths`` importable."""
    return [sys.executable, "-S", "-c", BOOT, json.dumps(platform.marker_environment()), json.dumps(paths)]


def pip_argv(platform: Platform, report: Path, tokens: Iterable[str]) -> list[str]:
    """pip's arguments (after ``python -m pip``) for the printed call's own options and requirements. uv's
    ``uv pip install --python <interpreter>`` names the environment; pip resolves for the platform instead."""
    tokens = list(tokens)
    if "--python" in tokens:
        at = tokens.index("--python")
        del tokens[at : at + 2]
    return [
        "install",
        "--dry-run",
        "--no-cache-dir",
        "--use-feature=fast-deps",
        "--report",
        str(report),
        "--index-url",
        INDEX_URL,
        *platform.argv(),
        *tokens,
    ]


def other_index(call: PipCall) -> str | None:
    """The index or link the call installs from when it is not PyPI (None: PyPI)."""
    for option, value in itertools.pairwise(call.tokens):
        if option in INDEX_OPTIONS and not value.startswith(PYPI_PREFIXES):
            return value
    for token in call.tokens:
        option, _, value = token.partition("=")
        if option in INDEX_OPTIONS and value and not value.startswith(PYPI_PREFIXES):
            return value
    return None


# ------------------------------------------------------------------ what pip answered
@dataclass(frozen=True)
class Planned:
    """One distribution in pip's installation report."""

    name: str  # canonical
    version: str
    requested: bool  # named on the command line (else pulled in as a dependency)
    requires: tuple[str, ...] = field(default=(), compare=False)  # its Requires-Dist, as in the report


def read_report(data: dict[str, Any]) -> dict[str, Planned]:
    """pip's ``--report`` (format version 1): what it would install, by canonical name."""
    if str(data.get("version")) != "1":
        raise ValueError(f"installation report version {data.get('version')!r}, expected 1")
    planned: dict[str, Planned] = {}
    for item in data["install"]:
        name = canonicalize_name(item["metadata"]["name"])
        requires = tuple(item["metadata"].get("requires_dist") or ())
        planned[name] = Planned(name, item["metadata"]["version"], bool(item.get("requested")), requires)
    return planned


def pip_answer(stderr: str) -> str:
    """The line of pip's stderr that says why (a conflict's causes on one line)."""
    lines = [line.rstrip() for line in stderr.splitlines()]
    if "The conflict is caused by:" in lines:
        start = lines.index("The conflict is caused by:") + 1
        causes = []
        for line in lines[start:]:
            if not line.strip() or not line.startswith(" "):
                break
            causes.append(line.strip())
        return "conflict: " + "; ".join(causes)
    meaningful = [
        line
        for line in lines
        if line.strip()
        and "lazily downloaded wheels" not in line
        and not line.startswith("ERROR: ResolutionImpossible")
    ]
    errors = [line for line in meaningful if line.startswith("ERROR:")]
    return (errors or meaningful or ["(pip said nothing)"])[-1]


@dataclass(frozen=True)
class Job:
    """One resolution: pip's input, deduplicated across machines that print the same command."""

    platform: Platform
    torch: str | None  # the torch installed on the machine before the command (None: none or unknown)
    tokens: tuple[str, ...]  # the printed call's options and requirements


@dataclass
class Resolution:
    ok: bool
    planned: dict[str, Planned]
    answer: str  # pip's stderr, as :func:`pip_answer` reads it ("" when it resolved)
    seconds: float


# ------------------------------------------------------------------ running pip
def pip_environment() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in TRANSPORT}
    environ.pop("PYTHONPATH", None)
    environ.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return environ


def ensure_pip() -> Path:
    """pip PIP_VERSION in .pytest_cache (once): the venv's pip may download every wheel it resolves."""
    marker = PIP_HOME / ".bnbdoctor-ok"
    if marker.is_file():
        return PIP_HOME
    shutil.rmtree(PIP_HOME, ignore_errors=True)
    index = ["--index-url", INDEX_URL, f"pip=={PIP_VERSION}"]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(PIP_HOME), *index],
        capture_output=True,
        text=True,
        timeout=300,
        env=pip_environment(),
    )
    if proc.returncode != 0:
        pytest.fail(f"cannot install pip {PIP_VERSION} from {INDEX_URL}: {pip_answer(proc.stderr)}")
    marker.write_text(PIP_VERSION)
    return PIP_HOME


class Resolver:
    """Runs each distinct job once, WORKERS at a time; results are kept for the session."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.pip_home = ensure_pip()
        self.environ = pip_environment()
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="pip")
        self._jobs: dict[Job, Future[Resolution]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def resolve(self, job: Job) -> Resolution:
        with self._lock:
            future = self._jobs.get(job)
            if future is None:
                future = self._jobs[job] = self._pool.submit(self._run, job, len(self._jobs))
        return future.result()

    def _installed(self, torch: str | None) -> list[str]:
        """A folder in which pip finds the machine's torch installed (name and version, as pip reads them)."""
        if torch is None:
            return []
        site = self.workdir / f"installed-torch-{torch}"
        info = site / f"torch-{torch}.dist-info"
        with self._lock:
            if not (info / "METADATA").is_file():
                info.mkdir(parents=True, exist_ok=True)
                (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {torch}\n")
        return [str(site)]

    def _run(self, job: Job, number: int) -> Resolution:
        report = self.workdir / f"report-{number}.json"
        paths = [str(self.pip_home), *self._installed(job.torch)]
        started = time.monotonic()
        proc = subprocess.run(
            [*boot(job.platform, paths), *pip_argv(job.platform, report, job.tokens)],
            capture_output=True,
            text=True,
            timeout=300,
            env=self.environ,
            cwd=self.workdir,
        )
        seconds = time.monotonic() - started
        if proc.returncode != 0 or not report.is_file():
            return Resolution(False, {}, pip_answer(proc.stderr + proc.stdout), seconds)
        return Resolution(True, read_report(json.loads(report.read_text(encoding="utf-8"))), "", seconds)


# ------------------------------------------------------------------ the printed commands, step by step
@dataclass
class Step:
    """One ``pip install`` call of a printed command, and the torch the machine has before it."""

    source: str
    rule_id: str
    command: str
    call: PipCall
    platform: Platform
    torch: str | None = None
    job: Job | None = None
    index: str | None = None  # another index: not resolved here
    problems: list[str] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.source} {self.rule_id}: `{self.command}`"


def _torch_pin(req: Requirement) -> str | None:
    pins = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    return pins[0] if pins else None


def judge(step: Step, result: Resolution) -> list[str]:
    """What pip's plan breaks of what the command promised (empty: nothing)."""
    if not result.ok:
        return [f"pip cannot resolve it ({step.platform.label}): {result.answer}"]
    problems = []
    packages = step.call.packages()
    environment = step.platform.marker_environment()
    for name, req in packages.items():
        key = canonicalize_name(name)
        if req.marker is not None and not req.marker.evaluate(environment):
            continue
        planned = result.planned.get(key)
        if planned is None:
            if key == "torch" and step.torch is not None and req.specifier.contains(step.torch, prereleases=True):
                continue  # the installed torch fits: pip keeps it
            problems.append(f"pip would not install {name} ({step.platform.label})")
        elif not req.specifier.contains(planned.version, prereleases=True):
            problems.append(f"pip would install {name} {planned.version}, outside {req.specifier}")
    replaced = result.planned.get("torch")
    if "torch" not in packages and step.torch is not None and replaced is not None:
        problems.append(
            f"pip would replace the installed torch {step.torch} with torch {replaced.version} from PyPI"
            f" ({step.platform.label})"
        )
    if "--no-deps" in step.call.tokens and step.torch is not None:
        problems += _torch_left_behind(step, result, environment)
    return problems


def _torch_left_behind(step: Step, result: Resolution, environment: dict[str, str]) -> list[str]:
    """Under --no-deps pip keeps any torch: what it installs must still accept that torch (``pip check``)."""
    problems = []
    for planned in result.planned.values():
        for text in planned.requires:
            req = Requirement(text)
            if canonicalize_name(req.name) != "torch" or (
                req.marker is not None and not req.marker.evaluate({**environment, "extra": ""})
            ):
                continue
            if not req.specifier.contains(step.torch or "", prereleases=True):
                problems.append(
                    f"{planned.name} {planned.version} requires torch{req.specifier}; --no-deps keeps"
                    f" torch {step.torch}, which pip check would then report"
                )
    return problems


def walk(source: str, findings: Iterable[Finding], facts: Facts) -> Iterator[list[Step]]:
    """Each finding's install calls, in order (a fix's steps: install torch, then bitsandbytes)."""
    platform = platform_for(target_of(facts))
    for finding in findings:
        steps = [
            Step(source, finding.rule_id, command, call, platform)
            for command in finding.remediation.commands
            for call in pip_calls(command)
            if call.subcommand == "install"
        ]
        if steps:
            yield steps


def run_chain(steps: list[Step], torch: str | None, resolver: Resolver) -> None:
    """Resolve the steps in order, each on the torch the steps before it leave."""
    for step in steps:
        step.torch = torch
        torch_req = step.call.packages().get("torch")
        if step.index is not None:
            if torch_req is not None:
                torch = _torch_pin(torch_req)  # that index's build of the pin; unpinned: unknown
            continue
        step.job = Job(step.platform, torch, tuple(step.call.tokens))
        result = resolver.resolve(step.job)
        step.problems = judge(step, result)
        if "torch" in result.planned:
            torch = result.planned["torch"].version


# ------------------------------------------------------------------ the sources
LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.txt")) + sorted(
    (ROOT / "tests" / "data" / "synthetic_logs").glob("*.txt")
)
CASE_FILES = sorted(CASES.glob("BNB*/*.json"))


def fixture_source(name: str) -> str:
    return f"fixture {name}"


def log_source(path: Path) -> str:
    return f"log {path.relative_to(ROOT)}"


def case_source(path: Path) -> str:
    return f"case {path.relative_to(ROOT)}"


def diagnosed(source: str) -> tuple[list[Finding], Facts]:
    kind, _, what = source.partition(" ")
    if kind == "fixture":
        report = diagnose(FixtureHost.named(what))
        return report.findings, report.facts
    if kind == "log":
        report = explain_file(str(ROOT / what))
        return report.findings, report.facts
    case = load_case(ROOT / what)
    return run_case(case).findings, facts_of_case(case)


class Resolved:
    """Every source's steps (all walked: cheap); those of the selected sources resolved, in parallel."""

    def __init__(self, resolver: Resolver, sources: list[str], selected: set[str]) -> None:
        self.steps: dict[str, list[Step]] = {}
        chains: list[tuple[list[Step], str | None]] = []
        for source in sources:
            findings, facts = diagnosed(source)
            torch = target_of(facts).torch
            self.steps[source] = []
            for chain in walk(source, findings, facts):
                self.steps[source] += chain
                for step in chain:
                    step.index = other_index(step.call)
                if source in selected:
                    chains.append((chain, torch))
        with ThreadPoolExecutor(max_workers=32, thread_name_prefix="chain") as pool:
            for done in [pool.submit(run_chain, chain, torch, resolver) for chain, torch in chains]:
                done.result()

    def problems(self, source: str) -> list[str]:
        return [f"{step.where()}: {p}" for step in self.steps[source] for p in step.problems]

    def elsewhere(self) -> list[Step]:
        return [step for steps in self.steps.values() for step in steps if step.index is not None]


SOURCES = (
    [fixture_source(n) for n in fixture_names()] + [log_source(p) for p in LOGS] + [case_source(p) for p in CASE_FILES]
)


def _selected_sources(session: pytest.Session) -> set[str]:
    """The sources of this module's tests that the session runs (-k, a node id, -m)."""
    here = Path(__file__).resolve()
    selected = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and Path(item.path).resolve() == here:
            source = callspec.params.get("source")
            if isinstance(source, str):
                selected.add(source)
    return selected


@pytest.fixture(scope="module")
def resolved(request: pytest.FixtureRequest) -> Iterator[Resolved]:
    sources = _selected_sources(request.session)
    with tempfile.TemporaryDirectory(prefix="bnbdoctor-resolver-") as workdir:
        resolver = Resolver(Path(workdir))
        try:
            yield Resolved(resolver, SOURCES, sources)
        finally:
            resolver.close()


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("source", [fixture_source(n) for n in fixture_names()], ids=lambda s: s.split(" ", 1)[1])
def test_every_install_command_of_a_recorded_machine_resolves(resolved: Resolved, source: str) -> None:
    problems = resolved.problems(source)
    assert not problems, "\n".join(problems)


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("source", [log_source(p) for p in LOGS], ids=lambda s: Path(s).stem)
def test_every_install_command_explain_prints_resolves(resolved: Resolved, source: str) -> None:
    problems = resolved.problems(source)
    assert not problems, "\n".join(problems)


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    "source", [case_source(p) for p in CASE_FILES], ids=lambda s: f"{Path(s).parent.name}/{Path(s).stem}"
)
def test_every_install_command_of_a_rule_case_resolves(resolved: Resolved, source: str) -> None:
    problems = resolved.problems(source)
    assert not problems, "\n".join(problems)


@pytest.mark.network
@pytest.mark.slow
def test_commands_on_another_index_are_checked_elsewhere(resolved: Resolved) -> None:
    elsewhere = resolved.elsewhere()
    if not elsewhere:
        return
    indexes = sorted({step.index for step in elsewhere if step.index})
    commands = sorted({step.command.split(" -m pip ", 1)[-1] for step in elsewhere})
    pytest.skip(
        f"{len(elsewhere)} printed install calls ({len(commands)} distinct) install from another index "
        f"({', '.join(indexes)}): only PyPI is resolved here. The (torch pin, CUDA index) pairs of the "
        "download.pytorch.org ones are checked by tests/test_remedies.py against bnbdoctor's tables of "
        "PyTorch's wheels (knowledge/published.py, knowledge/torch_wheels.py)"
    )


# ------------------------------------------------------------------ the pieces, without the network
def _target(name: str) -> Target:
    return target_of(diagnose(FixtureHost.named(name)).facts)


def _printed(source: str, rule_id: str, index: int = 0) -> tuple[str, PipCall]:
    findings, _ = diagnosed(source)
    (finding,) = [f for f in findings if f.rule_id == rule_id]
    command = [c for c in finding.remediation.commands if pip_calls(c)][index]
    (call,) = pip_calls(command)
    return command, call


def _report(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def test_a_glibc_217_machine_gets_the_manylinux_tags_of_glibc_217() -> None:
    platform = platform_for(_target("centos7-bnb042-torch-cu124"))
    assert platform.tags[:2] == ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
    assert "manylinux2010_x86_64" in platform.tags and platform.tags[-2:] == (
        "manylinux_2_5_x86_64",
        "manylinux1_x86_64",
    )
    assert not any(tag.startswith(("manylinux_2_24", "linux_")) for tag in platform.tags)
    assert platform.python == Version("3.8") and platform.assumed == ()
    environment = platform.marker_environment()
    assert environment["python_full_version"] == "3.8.14" and environment["platform_system"] == "Linux"


def test_an_aarch64_machine_gets_no_legacy_tags_below_manylinux2014() -> None:
    platform = platform_for(_target("jetson-orin-aarch64"))
    assert platform.tags[0] == "manylinux_2_35_aarch64" and platform.tags[-2:] == (
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
    )
    assert not any("x86_64" in tag or "manylinux1" in tag or "manylinux2010" in tag for tag in platform.tags)
    assert platform.marker_environment()["platform_machine"] == "aarch64"


def test_a_mac_resolves_for_its_macos_and_arm64_with_darwin_markers() -> None:
    platform = platform_for(_target("macos-bnb042"))
    assert platform.tags[0] == "macosx_14_0_arm64" and "macosx_11_0_arm64" in platform.tags
    assert not any("x86_64" in tag for tag in platform.tags)
    # The environment pip reported evaluating markers in (tests/data/resolver, written through BOOT) is this one.
    assert _report("macos-bnb049-torch222")["environment"] == platform.marker_environment()


def test_windows_resolves_for_win_amd64_with_windows_markers() -> None:
    platform = platform_for(_target("windows-bnb041"))
    assert platform.tags == ("win_amd64",)
    environment = platform.marker_environment()
    assert (environment["os_name"], environment["sys_platform"], environment["platform_machine"]) == (
        "nt",
        "win32",
        "AMD64",
    )


def test_what_a_log_does_not_show_is_assumed_and_said() -> None:
    _, facts = diagnosed(log_source(ROOT / "tests/data/synthetic_logs/accelerate_4bit_device_map_imbalance.txt"))
    target = target_of(facts)
    assert (target.arch, target.glibc, target.python) == (None, None, Version("3.11"))
    platform = platform_for(target)
    assert platform.assumed == ("x86_64", "glibc 2.35") and platform.tags[0] == "manylinux_2_35_x86_64"
    assert platform.label == "manylinux_2_35_x86_64, cp311; assumed: x86_64, glibc 2.35"


def test_the_argv_is_the_printed_call_for_the_machine() -> None:
    source = fixture_source("ngc-2401-torch-prerelease-bnb0461")
    command, call = _printed(source, "BNB206")
    assert command == '/usr/bin/python -m pip install "bitsandbytes<0.46"'
    platform = platform_for(target_of(diagnosed(source)[1]))
    argv = pip_argv(platform, Path("report.json"), call.tokens)
    assert argv[:2] == ["install", "--dry-run"] and argv[-1] == "bitsandbytes<0.46"
    pairs = set(itertools.pairwise(argv))
    assert {("--report", "report.json"), ("--index-url", INDEX_URL), ("--python-version", "3.10")} <= pairs
    assert {("--implementation", "cp"), ("--abi", "cp310")} <= pairs and "--only-binary=:all:" in argv
    assert [value for option, value in itertools.pairwise(argv) if option == "--platform"] == list(platform.tags)


def test_a_command_on_the_pytorch_index_is_not_resolved_here() -> None:
    source = fixture_source("rtx4090-torch-cpu")
    _, torch_call = _printed(source, "BNB202", 0)
    _, bnb_call = _printed(source, "BNB202", 1)
    assert other_index(torch_call) == "https://download.pytorch.org/whl/cu124"
    assert other_index(bnb_call) is None


def test_a_report_where_pip_keeps_nvidias_prerelease_torch() -> None:
    # NVIDIA's container torch 2.2.0a0+81ea7a4, installed: bitsandbytes<0.46 (torch>=2.0,<3) keeps it.
    source = fixture_source("ngc-2401-torch-prerelease-bnb0461")
    command, call = _printed(source, "BNB206")
    planned = read_report(_report("ngc-2401-bnb-below-046"))
    assert planned["bitsandbytes"] == Planned("bitsandbytes", "0.45.5", requested=True)
    assert planned["numpy"].requested is False and "torch" not in planned
    platform = platform_for(target_of(diagnosed(source)[1]))
    step = Step(source, "BNB206", command, call, platform, torch="2.2.0a0+81ea7a4")
    assert judge(step, Resolution(True, planned, "", 0.0)) == []


def test_a_report_where_pip_would_replace_the_installed_torch() -> None:
    # The Mac's second step on its own: bitsandbytes>=0.49 needs a newer torch than 2.2.2, so pip replaces it
    # (the fix installs "torch>=2.3,<3" first, and the chain resolves this step on the torch that leaves).
    source = fixture_source("macos-bnb042")
    command, call = _printed(source, "BNB204", 1)
    assert command.endswith('-m pip install -U "bitsandbytes>=0.49.0"')
    planned = read_report(_report("macos-bnb049-torch222"))
    assert planned["torch"] == Planned("torch", "2.15.0", requested=False)
    platform = platform_for(target_of(diagnosed(source)[1]))
    step = Step(source, "BNB204", command, call, platform, torch="2.2.2")
    assert judge(step, Resolution(True, planned, "", 0.0)) == [
        "pip would replace the installed torch 2.2.2 with torch 2.15.0 from PyPI (macosx_14_0_arm64, cp311)"
    ]
    installs_torch = Step(source, "BNB204", command, pip_calls('pip install "torch>=2.3,<3"')[0], platform, "2.2.2")
    assert judge(installs_torch, Resolution(True, planned, "", 0.0)) == []
    outside = Step(source, "BNB204", command, pip_calls('pip install "bitsandbytes<0.50"')[0], platform, "2.2.2")
    assert (
        judge(outside, Resolution(True, planned, "", 0.0))[0] == "pip would install bitsandbytes 0.50.2, outside <0.50"
    )


def test_no_deps_keeps_any_torch_so_what_it_installs_must_accept_it() -> None:
    # The same step with --no-deps (pip's real report: bitsandbytes alone): torch 2.2.2 stays, below 0.50.2's >=2.4.
    source = fixture_source("macos-bnb042")
    platform = platform_for(target_of(diagnosed(source)[1]))
    planned = read_report(_report("macos-no-deps-bnb049-torch222"))
    assert list(planned) == ["bitsandbytes"] and "torch<3,>=2.4" in planned["bitsandbytes"].requires
    command = 'pip install --no-deps -U "bitsandbytes>=0.49.0"'
    (call,) = pip_calls(command)
    kept = Resolution(True, planned, "", 0.0)
    assert judge(Step(source, "BNB204", command, call, platform, torch="2.2.2"), kept) == [
        "bitsandbytes 0.50.2 requires torch<3,>=2.4; --no-deps keeps torch 2.2.2, which pip check would then report"
    ]
    assert judge(Step(source, "BNB204", command, call, platform, torch="2.5.1+cu121"), kept) == []


def test_pips_answer_is_the_line_that_says_why() -> None:
    conflict = (DATA / "a100-bnb046-torch212.stdout.txt").read_text() + (
        DATA / "a100-bnb046-torch212.stderr.txt"
    ).read_text()
    assert pip_answer(conflict) == (
        "conflict: The user requested torch==2.1.2; bitsandbytes 0.46.0 depends on torch<3 and >=2.2"
    )
    no_release = (DATA / "centos7-bnb-043.stderr.txt").read_text()
    assert pip_answer(no_release) == "ERROR: No matching distribution found for bitsandbytes>=0.43"
    source = fixture_source("centos7-bnb042-torch-cu124")
    platform = platform_for(target_of(diagnosed(source)[1]))
    step = Step(
        source,
        "BNB205",
        "pip install -U bitsandbytes>=0.43",
        pip_calls("pip install -U bitsandbytes>=0.43")[0],
        platform,
    )
    assert judge(step, Resolution(False, {}, pip_answer(no_release), 0.0)) == [
        (
            "pip cannot resolve it (manylinux_2_17_x86_64, cp38): "
            "ERROR: No matching distribution found for bitsandbytes>=0.43"
        )
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("machine", "needed"), [("macos-bnb042", True), ("a100-healthy", False)])
def test_the_bootstrap_makes_pip_evaluate_markers_for_the_diagnosed_machine(machine: str, needed: bool) -> None:
    # The venv's own pip, offline: a requirement only a Mac needs is looked for on the Mac, ignored on Linux.
    import pip

    platform = platform_for(_target(machine))
    paths = [str(Path(pip.__file__).resolve().parents[1])]
    requirement = "bnbdoctor-no-such-package; sys_platform == 'darwin'"
    assert Marker(requirement.split("; ")[1]).evaluate(platform.marker_environment()) is needed
    proc = subprocess.run(
        [*boot(platform, paths), "install", "--dry-run", "--no-index", "--quiet", requirement],
        capture_output=True,
        text=True,
        timeout=120,
        env=pip_environment(),
    )
    if needed:
        assert proc.returncode == 1 and "bnbdoctor-no-such-package" in pip_answer(proc.stderr)
    else:
        assert proc.returncode == 0, proc.stderr
