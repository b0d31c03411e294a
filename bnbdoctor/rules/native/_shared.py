"""What the native rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

import re

from bnbdoctor.derive import predict_without_override, selection_input
from bnbdoctor.facts import AbiNeed, Facts, NativeFacts, ResolvedDependency
from bnbdoctor.findings import Evidence, Hit, Remediation
from bnbdoctor.knowledge.loader import NEAREST_BUILD
from bnbdoctor.knowledge.ranges import full
from bnbdoctor.knowledge.selection import LibrarySelection, override_reaching
from bnbdoctor.rules.common import bnb_of, ev


def _native(facts: Facts) -> NativeFacts:
    native = facts.native
    assert native is not None
    return native


def _library_name(native: NativeFacts) -> str:
    return native.selection.loaded_file if native.selection and native.selection.loaded_file else "the library"


def _missing_evidence(missing: list[ResolvedDependency]) -> list[Evidence]:
    """One row per library the loader cannot find, with where else bnbdoctor saw it."""
    return [
        ev(
            d.name,
            f"not found; elsewhere: {', '.join(d.elsewhere) or 'nowhere bnbdoctor looked'}",
            "native.dependencies",
        )
        for d in missing
    ]


def _loader_evidence(facts: Facts) -> list[Evidence]:
    load = facts.load
    if load is not None and load.ran and load.ok is False and load.error:
        return [ev("the real loader said", load.error, "load.error")]
    return []


def _folder(path: str) -> str:
    return re.split(r"[\\/][^\\/]*$", path)[0]


#: The upgrade to the first release that picks the nearest build of the same major by itself. Commands are
#: written plainly: bnbdoctor.remedy narrows the specifier to what installs here, or drops the command.
_UPGRADE_TO_NEAREST = (f'pip install -U "bitsandbytes>={full(NEAREST_BUILD.first_text)}"',)


def _shipped_tag(backend: str, name: str) -> str | None:
    """The version tag of a shipped library of ``backend`` (``libbitsandbytes_cuda121.so`` -> "121"), or None."""
    match = re.match(rf"libbitsandbytes_{backend}(\d+)(?:_nocublaslt)?\.(so|dll|dylib)$", name)
    return match.group(1) if match else None


def _shipped_versions(facts: Facts, backend: str) -> list[str]:
    bnb = bnb_of(facts)
    found: list[str] = []
    for name in bnb.native_libraries if bnb else []:
        tag = _shipped_tag(backend, name)
        if tag is not None and tag not in found:
            found.append(tag)
    return sorted(found, key=int)


def _unresolved(native: NativeFacts, kinds: tuple[str, ...]) -> list[ResolvedDependency]:
    return [d for d in native.dependencies if d.kind in kinds and d.resolved is None]


def _not_found_hit(
    facts: Facts,
    missing: list[ResolvedDependency],
    explanation: str,
    remediation: Remediation,
    *,
    searched: tuple[Evidence, ...] = (),
    covers: list[str] | None = None,
) -> Hit:
    """The finding of a rule whose libraries the loader's search does not find (BNB303 CUDA, BNB310 ROCm,
    BNB316 system runtimes): one title, and as evidence each missing library with where else bnbdoctor saw
    it (after ``searched``, the search itself) and what the real loader said."""
    return Hit(
        title=f"{_library_name(_native(facts))} needs {', '.join(d.name for d in missing)}, which the loader cannot find",
        explanation=explanation,
        evidence=[*searched, *_missing_evidence(missing), *_loader_evidence(facts)],
        remediation=remediation,
        covers=covers,
    )


def _library_path_export(folders: list[str]) -> str:
    """The command that adds the folders holding missing libraries to the loader's search."""
    return f"export LD_LIBRARY_PATH={':'.join(folders)}:$LD_LIBRARY_PATH"


#: Symbol-version namespaces the ABI rules report (BNB306: GCC runtimes, BNB307: glibc).
RUNTIME_NAMESPACES = ("CXXABI", "GLIBCXX", "GCC", "GOMP", "OMP", "GOACC")


GLIBC_NAMESPACES = ("GLIBC",)


def format_problem(native: NativeFacts, os_name: str, arch: str) -> str | None:
    """Why the selected file cannot be loaded on this platform at all, or None."""
    if native.error:
        return native.error
    expected = {"linux": "ELF", "windows": "PE", "macos": "Mach-O"}.get(os_name)
    if expected and native.format and native.format != expected:
        article = "an" if native.format[0] in "AEIOU" else "a"
        return f"{article} {native.format} file, not {expected}"
    if native.format == "ELF" and native.machine:
        wanted = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64", "ppc64le": "EM_PPC64"}.get(arch)
        if wanted and wanted != native.machine:
            return f"built for {native.machine}, this machine is {arch}"
    return None


def static_problem(facts: Facts) -> bool:
    """True when a static finding already explains a failed load (so BNB314 stays quiet)."""
    native = _native(facts)
    platform = facts.platform
    if platform and format_problem(native, platform.os, platform.arch):
        return True
    missing_dep = any(d.resolved is None and d.kind != "system" for d in native.dependencies)
    reported = RUNTIME_NAMESPACES + GLIBC_NAMESPACES
    return missing_dep or any(m.split("_")[0] in reported for a in native.abi for m in a.missing)


def underlying_gap(facts: Facts) -> LibrarySelection | None:
    """With an override in force: what the release would pick without it, when that fails too."""
    under = predict_without_override(facts)
    if under is None or under.backend == "cpu" or under.outcome in ("loads", "cpu_library", "override_error"):
        return None
    return under


def _reachable_same_major(
    facts: Facts, backend: str, major: int, wanted: tuple[int, int] | None
) -> tuple[str, str] | None:
    """The override (variable, value) that makes this release load a shipped build of torch's major,
    preferring the newest one not above torch's version; None when no value reaches one."""
    inputs, bnb = selection_input(facts), bnb_of(facts)
    if inputs is None or bnb is None:
        return None
    found: list[tuple[tuple[int, int], tuple[str, str]]] = []
    for name in bnb.native_libraries:
        tag = _shipped_tag(backend, name)
        if tag is None or _tag_major(backend, tag) != major:
            continue
        reached = override_reaching(inputs, name)
        if reached is not None:
            found.append((_tag_version(backend, tag), reached))
    found.sort()
    lower = [f for f in found if f[0] <= (wanted or (0, 0))]
    pick = (lower or found)[-1] if found else None
    return pick[1] if pick else None


def _tag_version(backend: str, tag: str) -> tuple[int, int]:
    """ "121" -> (12, 1) for CUDA, "714" -> (7, 14) for ROCm (how 0.50 reads file names)."""
    cut = 1 if backend == "rocm" else (2 if len(tag) >= 3 else 1)
    return int(tag[:cut]), int(tag[cut:] or 0)


def _tag_major(backend: str, tag: str) -> int:
    return _tag_version(backend, tag)[0]


def _abi_hits(facts: Facts, namespaces: tuple[str, ...]) -> list[tuple[str, list[str], AbiNeed]]:
    native = _native(facts)
    out = []
    for need in native.abi:
        missing = [m for m in need.missing if m.split("_")[0] in namespaces]
        if missing:
            out.append((need.library, missing, need))
    return out


_DEVICE_STUB = re.compile(r"undefined symbol:\s*(?P<symbol>_Z(?P<length>\d+)__device_stub__\w+)")


_STUB_PREFIX = "__device_stub__"


def missing_device_stub(facts: Facts) -> tuple[str, str] | None:
    """``(symbol, kernel)`` when the real loader refused a bitsandbytes GPU library for lacking one of its own
    kernel launch stubs (``_Z..__device_stub__k...``), else None."""
    load = facts.load
    if load is None or not load.ran or load.ok is not False or not load.error:
        return None
    match = _DEVICE_STUB.search(load.error)
    if match is None:
        return None
    symbol = match.group("symbol")
    name = symbol[2 + len(match.group("length")) :][: int(match.group("length"))]  # the mangled name's length prefix
    return symbol, name[len(_STUB_PREFIX) :] or name
