"""Resolve a native library's dependencies the way the dynamic loader will, through a host.

Linux (ld.so(8)): a SONAME already loaded in the process wins (bitsandbytes is loaded after torch,
which has loaded its own CUDA libraries and C++ runtime); then DT_RPATH (only when there is no
DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the default directories.

Windows (ctypes' LoadLibraryExW with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | DLL_LOAD_DIR): DLLs
already loaded by torch, the DLL's own folder, the application folder, System32, folders torch
adds with os.add_dll_directory; PATH is not searched (listed as a candidate only, to explain).

Every place a dependency exists is recorded, not just the winner, so duplicates and "the right
file is over there" can be reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bnbdoctor.facts import LibraryCandidate, ResolvedDependency
from bnbdoctor.hosts.base import Host
from bnbdoctor.native.ldcache import LdCache, lookup, paths_where

_CUDA = re.compile(r"^(lib)?(cudart|cublas|cublasLt|cusparse|nvJitLink|cuda|nvrtc)(64)?[._-]", re.IGNORECASE)
_ROCM = re.compile(r"^(lib)?(hip|amdhip|roc|hsa|MIOpen)", re.IGNORECASE)
_CXX = re.compile(r"^(libstdc\+\+|libgcc_s|libgomp|msvcp|vcruntime|concrt|vcomp)", re.IGNORECASE)
_ONEAPI = re.compile(
    r"^(lib)?(sycl|svml|imf|intlc|irng|ur_loader|ur_adapter|umf|tbb|mkl|OpenCL|ze_loader)", re.IGNORECASE
)
_LIBC = re.compile(r"^(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*)\.so", re.IGNORECASE)
_WINDOWS_SYSTEM = {
    "kernel32.dll",
    "user32.dll",
    "advapi32.dll",
    "ntdll.dll",
    "ws2_32.dll",
    "shell32.dll",
    "ole32.dll",
    "oleaut32.dll",
    "bcrypt.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "version.dll",
    "setupapi.dll",
    "dbghelp.dll",
    "psapi.dll",
    "shlwapi.dll",
}
_VERSION_IN_NAME = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")


def dependency_kind(name: str) -> str:
    lowered = name.lower()
    if lowered.startswith(("api-ms-win-", "ext-ms-")) or lowered in _WINDOWS_SYSTEM:
        return "system"
    if _CUDA.match(name):
        return "cuda"
    if _ROCM.match(name):
        return "rocm"
    if _CXX.match(name):
        return "cxx_runtime"
    if _ONEAPI.match(name):
        return "oneapi"
    if _LIBC.match(name):
        return "libc"
    return "other"


def version_from_name(path: str | None) -> str | None:
    """libcudart.so.12.1.105 -> "12.1.105"; cudart64_12.dll -> "12"."""
    if not path:
        return None
    base = re.split(r"[\\/]", path)[-1]
    match = _VERSION_IN_NAME.search(base) or re.search(r"64_(\d+)\.dll$", base, re.IGNORECASE)
    return match.group(1) if match else None


@dataclass
class SearchStep:
    """One step of the loader's search: a label and the folders (or a fixed name->path map)."""

    via: str
    folders: list[str] = field(default_factory=list)
    known: dict[str, str] = field(default_factory=dict)  # soname -> path (already loaded)
    only_names: tuple[str, ...] = ()  # restrict the step to these SONAMEs


def expand_origin(entries: tuple[str, ...] | list[str], origin: str) -> list[str]:
    """$ORIGIN / ${ORIGIN} expanded against the folder of the object that carries the path."""
    out = []
    for entry in entries:
        if entry:
            out.append(entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
    return out


def linux_search(
    *,
    library_dir: str,
    rpath: list[str],
    runpath: list[str],
    ld_library_path: str | None,
    preloaded: dict[str, str],
    runtime_dirs: list[str],
    default_dirs: list[str],
) -> list[SearchStep]:
    """The search steps for a library in ``library_dir``, in ld.so's order."""
    steps = [SearchStep("loaded by torch before bitsandbytes", known=dict(preloaded))]
    if runtime_dirs:
        steps.append(
            SearchStep(
                "C++ runtime already loaded in the conda env",
                runtime_dirs,
                only_names=("libstdc++.so.6", "libgcc_s.so.1"),
            )
        )
    if rpath and not runpath:
        steps.append(SearchStep("RPATH", expand_origin(rpath, library_dir)))
    steps.append(SearchStep("LD_LIBRARY_PATH", [p for p in (ld_library_path or "").split(":") if p]))
    if runpath:
        steps.append(SearchStep("RUNPATH", expand_origin(runpath, library_dir)))
    steps.append(SearchStep("ld.so.cache"))
    steps.append(SearchStep("default directories", default_dirs))
    return steps


def windows_search(
    *,
    library_dir: str,
    python_dir: str | None,
    system_root: str,
    preloaded: dict[str, str],
    dll_directories: list[str],
    path: str | None,
) -> list[SearchStep]:
    steps = [
        SearchStep("loaded by torch before bitsandbytes", known={k.lower(): v for k, v in preloaded.items()}),
        SearchStep("the DLL's own folder", [library_dir]),
    ]
    if python_dir:
        steps.append(SearchStep("the application folder", [python_dir]))
    if dll_directories:  # LOAD_LIBRARY_SEARCH_USER_DIRS come before System32
        steps.append(SearchStep("os.add_dll_directory (torch)", dll_directories))
    steps.append(SearchStep("System32", [f"{system_root}\\System32"]))
    steps.append(SearchStep("PATH (not searched by Python 3.8+ ctypes)", [p for p in (path or "").split(";") if p]))
    return steps


def resolve(
    host: Host,
    names: list[str],
    steps: list[SearchStep],
    *,
    cache: LdCache | None = None,
    cache_arch: str | None = None,
    windows: bool = False,
    other_dirs: list[str] | None = None,
) -> list[ResolvedDependency]:
    """Resolve each name through the steps; the first existing file wins. ``other_dirs`` are
    places outside the search path (toolkits, wheels) where a missing library may be sitting."""
    join = host.pathmod.join
    resolved = []
    for name in names:
        kind = dependency_kind(name)
        dep = ResolvedDependency(name=name, kind=kind)
        if windows and kind == "system" and name.lower().startswith(("api-ms-win-", "ext-ms-")):
            dep.resolved, dep.via = name, "Windows API set (provided by the OS)"
            resolved.append(dep)
            continue
        seen_paths: set[str] = set()
        for step in steps:
            if step.only_names and name not in step.only_names:
                continue
            paths: list[str] = []
            key = name.lower() if windows else name
            if step.known:
                if key in step.known:
                    paths.append(step.known[key])
            elif step.via == "ld.so.cache":
                paths.extend(lookup(cache, name, cache_arch) if cache else [])
            else:
                for folder in step.folders:
                    candidate = join(folder, name)
                    if host.is_file(candidate):
                        paths.append(candidate)
            for path in paths:
                if path in seen_paths:
                    continue
                seen_paths.add(path)
                real = host.realpath(path)
                dep.candidates.append(
                    LibraryCandidate(
                        path=path,
                        via=step.via,
                        realpath=real,
                        version=version_from_name(real) or version_from_name(path),
                    )
                )
                usable = not step.via.startswith("PATH (not searched")
                if dep.resolved is None and usable:
                    dep.resolved, dep.via = path, step.via
        if windows and dep.resolved is None and kind == "system":
            dep.resolved, dep.via = name, "Windows system DLL"
        if dep.resolved is None:
            for folder in other_dirs or []:
                candidate = join(folder, name)
                if candidate not in seen_paths and host.is_file(candidate):
                    seen_paths.add(candidate)
                    dep.elsewhere.append(candidate)
        if dep.resolved is None and not windows:
            dep.other_sonames = other_sonames(host, name, steps, cache, cache_arch, other_dirs or [])
        reals = []
        for cand in dep.candidates:
            real = cand.realpath or cand.path
            if real not in reals:
                reals.append(real)
        dep.duplicates = reals if len(reals) > 1 and kind in ("cuda", "rocm", "cxx_runtime") else []
        resolved.append(dep)
    return resolved


_SONAME = re.compile(r"^(?P<stem>lib[\w+-]+\.so)\.(?P<major>\d+)$")


def other_sonames(
    host: Host, name: str, steps: list[SearchStep], cache: LdCache | None, cache_arch: str | None, other_dirs: list[str]
) -> list[str]:
    """Paths of the same library under another SONAME (``libsycl.so.9`` for a missing ``libsycl.so.8``), in
    the loader's search folders, torch's loaded libraries, the cache and the other places bnbdoctor looks."""
    match = _SONAME.match(name)
    if match is None:
        return []
    stem = match.group("stem")

    def same_library(candidate: str) -> bool:
        other = _SONAME.match(candidate)
        return other is not None and other.group("stem") == stem and candidate != name

    found: list[str] = []
    folders: list[str] = list(other_dirs)
    for step in steps:
        if step.known:
            found.extend(path for key, path in step.known.items() if same_library(key))
        elif step.via == "ld.so.cache":
            found.extend(paths_where(cache, same_library, cache_arch) if cache else [])
        else:
            folders.extend(step.folders)
    for folder in dict.fromkeys(folders):
        for entry in host.list_dir(folder) or []:
            if same_library(entry):
                found.append(host.pathmod.join(folder, entry))
    return list(dict.fromkeys(found))
