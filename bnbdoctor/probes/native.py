"""The native probe: which bitsandbytes library will load, what it needs, and where the loader
will find it. Static: reads files through the host; the real load is the ``load`` probe."""

from __future__ import annotations

import re
from dataclasses import asdict

from bnbdoctor.derive import predict_selection
from bnbdoctor.facts import (
    AbiNeed,
    Facts,
    NativeFacts,
    ResolvedDependency,
    SelectedLibrary,
)
from bnbdoctor.hosts.base import Host
from bnbdoctor.native.ldcache import (
    LdCache,
    arch_for_elf,
    normalize_arch,
    parse_ld_so_cache,
)
from bnbdoctor.native.resolve import linux_search, resolve, windows_search
from bnbdoctor.probes.base import ProbeContext, ProbeError

LDCONFIG_TIMEOUT_S = 5.0
#: The C++ runtime a conda interpreter's own packages have loaded from $CONDA_PREFIX/lib.
CONDA_RUNTIME = ("libstdc++.so.6", "libgcc_s.so.1")
_DEFAULT_DIRS = {
    "x86_64": ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"],
    "aarch64": ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"],
}
_GLIBC_FILES = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1")


def warm_up() -> None:
    """Import the ELF reader ahead of time, while other probes wait on subprocesses."""
    import bnbdoctor.native.elf  # noqa: F401


def _file_format(data: bytes) -> str:
    if data[:4] == b"\x7fELF":
        return "ELF"
    if data[:2] == b"MZ":
        return "PE"
    if data[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe"):
        return "Mach-O"
    return "unknown"


def load_ld_cache(host: Host) -> tuple[LdCache | None, str]:
    """The loader cache from /etc/ld.so.cache, or from `ldconfig -p` when the file is unreadable."""
    data = host.read_bytes("/etc/ld.so.cache", limit=64 * 1024 * 1024)
    if data:
        cache = parse_ld_so_cache(data)
        if cache.error is None:
            return cache, f"/etc/ld.so.cache: {len(cache.entries)} entries"
    result = host.run(["ldconfig", "-p"], timeout=LDCONFIG_TIMEOUT_S)
    if not result.ok:
        return None, f"no loader cache ({result.describe_failure()})"
    from bnbdoctor.native.ldcache import LdCacheEntry

    entries = []
    for line in result.stdout.splitlines():
        match = re.match(r"\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if match:
            abi = match.group(2).split(",")
            # `ldconfig -p` spells the architecture as glibc prints it ("x86-64", "AArch64")
            arch = normalize_arch(abi[1].strip().lower()) if len(abi) > 1 else abi[0]
            entries.append(LdCacheEntry(match.group(1), match.group(3), 0, arch, match.group(2)))
    return LdCache(entries=tuple(entries), format="ldconfig -p"), f"`ldconfig -p`: {len(entries)} entries"


def _preloaded(host: Host, facts: Facts, windows: bool) -> dict[str, str]:
    """What torch has loaded into the process before bitsandbytes, by SONAME (taken as the file
    name): its nvidia-* wheel libraries and the libraries in torch/lib.

    torch's CUDA wheels link the nvidia-* libraries through DT_RPATH (pytorch/builder#1150), which
    the loader searches before LD_LIBRARY_PATH, so the wheel copies win. torch/lib's own files are
    found through DT_RUNPATH=$ORIGIN, which comes after LD_LIBRARY_PATH: a copy there wins."""
    python = facts.python
    known: dict[str, str] = {}
    if python is None or not python.torch.installed:
        return known
    torch = python.torch
    sep = "\\" if windows else "/"
    for wheel in torch.nvidia_wheels:
        for name in wheel.libraries:
            if wheel.lib_dir:
                known.setdefault(name, f"{wheel.lib_dir}{sep}{name}")
    if torch.lib_dir:
        ld_dirs = [] if windows else [d for d in (facts.env.get("LD_LIBRARY_PATH") or "").split(":") if d]
        for name in torch.lib_files:
            if name in known:
                continue
            found = next((f"{d.rstrip('/')}/{name}" for d in ld_dirs if host.is_file(f"{d.rstrip('/')}/{name}")), None)
            known[name] = found or f"{torch.lib_dir}{sep}{name}"
    return known


def _other_dirs(host: Host, facts: Facts, windows: bool) -> list[str]:
    """Folders outside the loader's search where CUDA/ROCm libraries often sit."""
    join = host.pathmod.join
    dirs: list[str] = []
    for toolkit in facts.cuda_toolkit.toolkits if facts.cuda_toolkit else []:
        subs = (
            ("bin",)
            if windows
            else ("lib64", "lib", join("targets", "x86_64-linux", "lib"), join("targets", "sbsa-linux", "lib"))
        )
        dirs.extend(join(toolkit.path, sub) for sub in subs)
    python = facts.python
    if python and python.torch.installed:
        dirs.extend(w.lib_dir for w in python.torch.nvidia_wheels if w.lib_dir)
        if python.torch.lib_dir:
            dirs.append(python.torch.lib_dir)
    if not windows:
        dirs.extend(["/opt/rocm/lib", "/usr/lib/wsl/lib"])
        conda = facts.env.get("CONDA_PREFIX")
        if conda:
            dirs.append(join(conda, "lib"))
    seen: list[str] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def _conda_runtime_dirs(host: Host, facts: Facts) -> list[str]:
    """A conda interpreter's own lib/ (its libstdc++ is loaded before bitsandbytes)."""
    python = facts.python
    if python is None or not python.prefix:
        return []
    if host.is_dir(host.pathmod.join(python.prefix, "conda-meta")):
        return [host.pathmod.join(python.prefix, "lib")]
    return []


def _glibc_defines(version: str | None) -> list[str] | None:
    """GLIBC_x.y versions a glibc of ``version`` defines (every release up to it)."""
    if not version:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    defined = [
        "GLIBC_2.0",
        "GLIBC_2.1",
        "GLIBC_2.1.1",
        "GLIBC_2.1.2",
        "GLIBC_2.1.3",
        "GLIBC_2.2",
        "GLIBC_2.2.1",
        "GLIBC_2.2.2",
        "GLIBC_2.2.3",
        "GLIBC_2.2.4",
        "GLIBC_2.2.5",
        "GLIBC_2.2.6",
        "GLIBC_2.3",
        "GLIBC_2.3.2",
        "GLIBC_2.3.3",
        "GLIBC_2.3.4",
    ]
    defined += [f"GLIBC_2.{m}" for m in range(4, minor + 1)] if major == 2 else []
    return defined


def _abi(
    host: Host, facts: Facts, version_needs: dict[str, list[str]], deps: list[ResolvedDependency]
) -> list[AbiNeed]:
    from bnbdoctor.native.elf import max_versions, missing_versions, parse_elf

    by_name = {d.name: d for d in deps}
    needs = []
    for library, required in version_needs.items():
        need = AbiNeed(library=library, required=list(required))
        dep = by_name.get(library)
        provider = dep.resolved if dep else None
        defined: list[str] | None = None
        if provider:
            data = host.read_bytes(provider, limit=64 * 1024 * 1024)
            if data:
                info = parse_elf(data)
                if info.error is None or info.version_defs:
                    defined, need.provider = list(info.version_defs), provider
                else:
                    need.error = f"{provider}: {info.error}"
        if defined is None and library in _GLIBC_FILES and facts.platform:
            defined = _glibc_defines(facts.platform.libc_version)
            if defined is not None:
                need.provider, need.source = provider or library, "glibc"
        if defined is None:
            need.source = "unknown"
            needs.append(need)
            continue
        need.missing = missing_versions(required, defined)
        need.provider_max = max_versions(defined)
        if need.missing and dep is not None:
            need.satisfied_by = _alternatives(host, dep, required, provider)
        needs.append(need)
    return needs


def _alternatives(host: Host, dep: ResolvedDependency, required: list[str], provider: str | None) -> list[str]:
    """Other copies of the dependency on this machine that define every required version."""
    from bnbdoctor.native.elf import missing_versions, parse_elf

    provider_real = host.realpath(provider) if provider else None
    paths, seen = [], {provider_real}
    for path in [c.path for c in dep.candidates if c.path != provider] + list(dep.elsewhere):
        real = host.realpath(path)
        if real not in seen:
            seen.add(real)
            paths.append(path)
    good = []
    for path in paths:
        data = host.read_bytes(path, limit=64 * 1024 * 1024)
        if data and not missing_versions(required, parse_elf(data).version_defs):
            good.append(path)
    return good


def preload_plan(host: Host, facts: Facts, needed: list[str]) -> list[str]:
    """The files a real process has already loaded for these SONAMEs when bitsandbytes loads:
    torch's copies, and a conda interpreter's own C++ runtime."""
    platform = facts.platform
    windows = platform is not None and platform.os == "windows"
    known = _preloaded(host, facts, windows)
    plan = []
    for name in needed:
        key = name.lower() if windows else name
        lookup_table = {k.lower(): v for k, v in known.items()} if windows else known
        if key in lookup_table:
            plan.append(lookup_table[key])
            continue
        for folder in _conda_runtime_dirs(host, facts):
            candidate = host.pathmod.join(folder, name)
            if name in CONDA_RUNTIME and host.is_file(candidate):
                plan.append(candidate)
                break
    return plan


def gather_native(ctx: ProbeContext) -> NativeFacts:
    facts, host = ctx.facts, ctx.host
    python, platform = facts.python, facts.platform
    if python is None or platform is None:
        raise ProbeError("needs the python and platform facts")
    bnb, torch = python.bitsandbytes, python.torch
    native = NativeFacts(package_dir=bnb.location)
    selection = predict_selection(facts)
    if selection is None:
        return native
    native.selection = SelectedLibrary(**asdict(selection))
    if not selection.loaded_file or not bnb.location:
        return native
    windows = platform.os == "windows"
    native.library = host.pathmod.join(bnb.location, selection.loaded_file)
    data = host.read_bytes(native.library)
    if data is None:
        native.error = "the file cannot be read"
        return native
    native.format = _file_format(data)
    if native.format == "unknown":
        native.error = "an empty file (0 bytes)" if not data else f"not a shared library (it starts with {data[:8]!r})"
    native.preloaded = sorted(_preloaded(host, facts, windows).values())
    if native.format == "ELF":
        from bnbdoctor.native.elf import parse_elf

        info = parse_elf(data)
        native.error = info.error
        native.machine, native.soname = info.machine, info.soname
        native.needed, native.rpath, native.runpath = list(info.needed), list(info.rpath), list(info.runpath)
        native.version_needs = {k: list(v) for k, v in info.version_needs.items()}
        if platform.os != "linux" or not info.needed:
            return native
        cache, native.loader_cache = load_ld_cache(host)
        steps = linux_search(
            library_dir=bnb.location,
            rpath=native.rpath,
            runpath=native.runpath,
            ld_library_path=facts.env.get("LD_LIBRARY_PATH"),
            preloaded=_preloaded(host, facts, False),
            runtime_dirs=_conda_runtime_dirs(host, facts),
            default_dirs=_DEFAULT_DIRS.get(platform.arch, ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]),
        )
        native.search_order = [s.via for s in steps]
        native.dependencies = resolve(
            host,
            native.needed,
            steps,
            cache=cache,
            cache_arch=arch_for_elf(info.machine, info.elf_class),
            other_dirs=_other_dirs(host, facts, False),
        )
        native.abi = _abi(host, facts, native.version_needs, native.dependencies)
    elif native.format == "PE":
        from bnbdoctor.native.pe import (
            parse_pe,  # pefile is slow to import: only for DLLs
        )

        pe = parse_pe(data)
        native.error, native.machine = pe.error, pe.machine
        native.needed = list(pe.imports)
        if not windows:
            return native
        torch_lib = torch.lib_dir
        dll_dirs = [d for d in (torch_lib, host.pathmod.join(python.prefix or "", "Library", "bin")) if d]
        # a venv's python.exe only launches the base interpreter: the process's application
        # folder is the base install (where python.org ships VCRUNTIME140*.dll)
        app_dir = python.base_prefix or host.pathmod.dirname(python.executable)
        steps = windows_search(
            library_dir=bnb.location,
            python_dir=app_dir,
            system_root=facts.env.get("SYSTEMROOT") or facts.env.get("WINDIR") or "C:\\Windows",
            preloaded=_preloaded(host, facts, True),
            dll_directories=dll_dirs,
            path=facts.env.get("PATH"),
        )
        native.search_order = [s.via for s in steps]
        native.dependencies = resolve(
            host, native.needed, steps, windows=True, other_dirs=_other_dirs(host, facts, True)
        )
    return native
