"""Rules about the native-library chain: the file bitsandbytes picks, what it needs, where the
loader finds it, the symbol versions it requires, and what the real loader said."""

from __future__ import annotations

import re

from bnbdoctor.facts import AbiNeed, Facts, NativeFacts, ResolvedDependency
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR, SUFFIXED_WHEEL_MAJORS, SUGGESTED_TORCH_CUDA
from bnbdoctor.knowledge.gpus import INT8_MATMUL_MIN
from bnbdoctor.knowledge.loader import (
    CPU_FALLBACK_ERA,
    CPU_LIBRARY_NEEDS_OPENMP,
    EMPTY_OVERRIDE_IGNORED,
    GLIBC_234_BUILDS,
    LEGACY_CUDA_SETUP,
    NEAREST_BUILD,
    OVERRIDE_NOCUBLASLT_BUG,
    ROCM_REJECTS_CUDA_OVERRIDE,
    XPU_LIBRARY,
    XPU_PER_ONEAPI_YEAR,
)
from bnbdoctor.knowledge.platforms import LINUX_ONLY_WHEEL, PYTHON_DLL_PATH_SEARCH_DROPPED, WINDOWS_WHEELS
from bnbdoctor.knowledge.ranges import full, minor
from bnbdoctor.knowledge.releases import FIRST_RELEASE_FOR_PLATFORM, bnb_spec_for_torch
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import LogGate, rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    bnb_of,
    ev,
    torch_of,
    unknown_version,
    versioned,
    visible_gpus,
    wheel_upgrade_blocked,
)

_PRELOADED = "loaded by torch before bitsandbytes"
_NOT_SEARCHED = "PATH (not searched"
#: pip wheels that bring each CUDA library (the same ones torch's CUDA wheels depend on).
_CUDA_WHEELS = {"cudart": "nvidia-cuda-runtime", "cublas": "nvidia-cublas", "cublasLt": "nvidia-cublas",
                "cusparse": "nvidia-cusparse", "nvJitLink": "nvidia-nvjitlink"}


def _native(facts: Facts) -> NativeFacts:
    native = facts.native
    assert native is not None
    return native


def _library_name(native: NativeFacts) -> str:
    return native.selection.loaded_file if native.selection and native.selection.loaded_file else "the library"


def _loader_evidence(facts: Facts) -> list[Evidence]:
    load = facts.load
    if load is not None and load.ran and load.ok is False and load.error:
        return [ev("the real loader said", load.error, "load.error")]
    return []


def _folder(path: str) -> str:
    return re.split(r"[\\/][^\\/]*$", path)[0]


def _shipped_versions(facts: Facts, backend: str) -> list[str]:
    bnb = bnb_of(facts)
    found = []
    for name in bnb.native_libraries if bnb else []:
        match = re.match(rf"libbitsandbytes_{backend}(\d+)(?:_nocublaslt)?\.(so|dll|dylib)$", name)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return sorted(found, key=int)


def _unresolved(native: NativeFacts, kinds: tuple[str, ...]) -> list[ResolvedDependency]:
    return [d for d in native.dependencies if d.kind in kinds and d.resolved is None]


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


@rule(
    "BNB301",
    "bnb-binary-missing-for-torch-cuda",
    Severity.ERROR,
    "The installed bitsandbytes ships a library for torch's CUDA/ROCm version",
    needs=("native", "python"),
    covers=("cuda_binary_missing_for_torch_cuda_version", "cuda_lt_11_unsupported",
            "cuda_setup_failed_despite_gpu_available", "compiled_without_gpu_support", "native_lib_none_attribute_errors"),
    references=(BNB_DOCS_INSTALL, "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180"),
)
def binary_missing(facts: Facts) -> Hit | Skip | None:
    native, torch, bnb = _native(facts), torch_of(facts), bnb_of(facts)
    sel = native.selection
    if sel is None:
        return Skip("bitsandbytes is not installed or its version is unknown")
    if sel.override is not None or sel.backend == "cpu" or sel.outcome in ("loads", "cpu_library", "override_error"):
        return None
    if not bnb or not any(re.match(r"libbitsandbytes_(cuda|rocm|xpu)", f) for f in bnb.native_libraries):
        return None  # nothing GPU-capable is shipped at all: BNB308/BNB309 name that root cause
    backend = sel.backend.upper()
    runtime = {"rocm": torch.hip, "xpu": torch.xpu}.get(sel.backend, torch.cuda) if torch else None
    shipped = _shipped_versions(facts, sel.backend)
    effect = {
        "import_error": "`import bitsandbytes` raises 'CUDA Setup failed despite GPU being available' (the log "
                        "says 'Required library version not found').",
        "cpu_fallback": f"bitsandbytes logs 'Could not find the bitsandbytes CUDA binary at …{sel.expected_file}' and "
                        "loads its CPU library instead: every GPU operation then fails ('compiled without GPU "
                        "support', or a missing method of the CPU library).",
        "error_on_first_call": "`import bitsandbytes` works, then the first quantized operation raises an error "
                               f"about the missing binary ({sel.message}).",
    }.get(sel.outcome, sel.message or "")
    commands: list[str] = []
    if sel.backend == "xpu":
        fix = ("This bitsandbytes ships no XPU library for torch's oneAPI version; install a release with XPU "
               f"builds ({XPU_LIBRARY.first_text}+, versioned per oneAPI year from {XPU_PER_ONEAPI_YEAR.first_text}).")
        commands = [f'pip install -U "bitsandbytes{XPU_LIBRARY.pip_spec()}"']
        runtime_text = torch.xpu if torch else None
    else:
        runtime_text = runtime
        wanted = major_minor(runtime)
        major = wanted[0] if wanted else 0
        same_major = [v for v in shipped if _tag_major(sel.backend, v) == major]
        lower = [v for v in same_major if _tag_version(sel.backend, v) <= (wanted or (0, 0))]
        pick = (lower or same_major)[-1] if same_major else None
        legacy_nocublaslt = OVERRIDE_NOCUBLASLT_BUG.contains(bnb.version) and "_nocublaslt" in sel.expected_file
        spec = bnb_spec_for_torch(torch.version if torch else None, full(NEAREST_BUILD.first_text))
        if sel.backend == "cuda" and major and major < OLDEST_CUDA_MAJOR:
            fix = (f"CUDA {runtime} is older than any bitsandbytes build ({OLDEST_CUDA_MAJOR}.x is the oldest "
                   f"shipped). Install a torch build for CUDA {' or '.join(SUGGESTED_TORCH_CUDA)}, then bitsandbytes.")
        elif pick and not legacy_nocublaslt:
            fix = (f"Point bitsandbytes at a shipped build of the same {backend} major, BNB_{'ROCM' if sel.backend == 'rocm' else 'CUDA'}"
                   f"_VERSION={pick}, whose runtime torch already loads; or upgrade bitsandbytes "
                   f"({NEAREST_BUILD.first_text}+ picks the nearest build of the same major by itself).")
            variable = "BNB_ROCM_VERSION" if sel.backend == "rocm" and NEAREST_BUILD.contains(bnb.version) \
                else "BNB_CUDA_VERSION"
            commands = ([] if sel.backend == "rocm" and variable == "BNB_CUDA_VERSION" else [f"export {variable}={pick}"])
            if not wheel_upgrade_blocked(facts):
                commands.append(f'pip install -U "bitsandbytes{spec}"')
        elif pick:
            fix = (f"This release builds the override file name wrongly for GPUs below compute capability "
                   f"{INT8_MATMUL_MIN.text} (_nocublaslt builds), so an override cannot help: upgrade bitsandbytes.")
            commands = [f'pip install -U "bitsandbytes{spec}"']
        else:
            fix = (f"This bitsandbytes has no {backend} {major}.x build at all (shipped: {', '.join(shipped) or 'none'}). "
                   f"Install a torch build for a {backend} version it ships, or a bitsandbytes release built for yours.")
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} has no library for torch's {backend} {runtime_text}: "
        f"{sel.expected_file} is missing",
        explanation=f"bitsandbytes chooses its native library from torch's {backend} version, not from the driver "
        f"or a local toolkit. {effect}",
        evidence=[ev("torch", f"{torch.version if torch else '?'} ({backend} {runtime_text})", "python.torch"),
                  ev("expected", sel.expected_file, "native.selection.expected_file"),
                  ev("shipped builds", ", ".join(shipped) or "none", "python.bitsandbytes.native_libraries")],
        remediation=Remediation(fix, commands),
    )


def _tag_version(backend: str, tag: str) -> tuple[int, int]:
    """"121" -> (12, 1) for CUDA, "714" -> (7, 14) for ROCm (how 0.50 reads file names)."""
    cut = 1 if backend == "rocm" else (2 if len(tag) >= 3 else 1)
    return int(tag[:cut]), int(tag[cut:] or 0)


def _tag_major(backend: str, tag: str) -> int:
    return _tag_version(backend, tag)[0]


@rule(
    "BNB302",
    "bnb-cuda-version-override",
    Severity.ERROR,
    "BNB_CUDA_VERSION / BNB_ROCM_VERSION are unset or point at a usable build",
    needs=("native", "python"),
    covers=("bnb_cuda_version_override_mismatch",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1559", BNB_DOCS_INSTALL),
)
def override(facts: Facts) -> Hit | Skip | None:
    native, torch, bnb = _native(facts), torch_of(facts), bnb_of(facts)
    release = release_tuple(bnb.version if bnb else None) or (0,)
    rocm = bool(torch and torch.hip)
    strict = NEAREST_BUILD.contains(release)
    variable = "BNB_ROCM_VERSION" if rocm and strict else "BNB_CUDA_VERSION"
    value = facts.env.get(variable)
    if value is None:
        if rocm and strict and "BNB_CUDA_VERSION" in facts.env:
            return Skip(f"BNB_CUDA_VERSION is ignored on ROCm from {NEAREST_BUILD.first_text} (BNB_ROCM_VERSION is "
                        "not set)")
        return Skip(f"{variable} is not set")
    sel = native.selection
    evidence = [ev(variable, repr(value), f"env.{variable}")]
    unset = Remediation(f"Unset {variable}.", [f"unset {variable}"])
    if sel is None or sel.backend == "cpu":
        return Hit(title=f"{variable}={value!r} is set but has no effect here",
                   explanation="The override only applies when torch sees a GPU; this machine loads the CPU library.",
                   evidence=evidence, remediation=unset, severity=Severity.INFO)
    if value == "" and not strict:
        return Hit(
            title=f"{variable} is set but empty: ignored by {bnb.version}, "  # type: ignore[union-attr]
            f"rejected by {NEAREST_BUILD.first_text}+",
            explanation=f"Releases {EMPTY_OVERRIDE_IGNORED.first_text}–{EMPTY_OVERRIDE_IGNORED.last_text} told users "
            "to clear the override with `export BNB_CUDA_VERSION=`; they ignore an empty value. From "
            f"{NEAREST_BUILD.first_text} the variable being set at all counts, and an empty value raises "
            "\"BNB_CUDA_VERSION='': value must be digits only\" — the next upgrade will break the import.",
            evidence=evidence, remediation=unset, severity=Severity.WARNING)
    evidence.append(ev("selected", sel.expected_file, "native.selection.expected_file"))
    if sel.outcome == "override_error":
        return Hit(
            title=f"{variable}={value!r} is rejected by {versioned(facts, 'bitsandbytes', bnb.version)}",  # type: ignore[union-attr]
            explanation=f"bitsandbytes raises '{sel.message}'"
            + (f": on ROCm builds {ROCM_REJECTS_CUDA_OVERRIDE.first_text}–{ROCM_REJECTS_CUDA_OVERRIDE.last_text} "
               "refuse any non-empty BNB_CUDA_VERSION." if rocm else ".")
            + (f" {NEAREST_BUILD.first_text} checks that the variable is set, not that it is non-empty; the old advice "
               "'export BNB_CUDA_VERSION=' now breaks the import." if value == "" else ""),
            evidence=evidence, remediation=unset)
    torch_major = (major_minor(torch.hip if rocm else torch.cuda) or (0, 0))[0] if torch else 0
    shipped = _shipped_versions(facts, sel.backend)
    valid = [v for v in shipped if _tag_major(sel.backend, v) == torch_major]
    alternative = (f", or set it to a shipped build of torch's major version ({', '.join(valid)})"
                   if valid and not (rocm and not strict) else "")
    if not sel.exists:
        bug = (" — built by this release's name-building bug for _nocublaslt builds"
               if "nocubla" in sel.expected_file else "")
        effect = {"import_error": "`import bitsandbytes` fails ('CUDA Setup failed despite GPU being available')",
                  "cpu_fallback": "bitsandbytes falls back to its CPU library, so GPU operations fail",
                  }.get(sel.outcome, "the first quantized operation raises a 'binary not found' error")
        return Hit(
            title=f"{variable}={value} asks for {sel.expected_file}, which bitsandbytes does not ship",
            explanation=f"With the override set, bitsandbytes asks for exactly that file{bug}. It is missing: {effect}.",
            evidence=evidence + [ev("shipped builds", ", ".join(shipped) or "none", "python.bitsandbytes.native_libraries")],
            remediation=Remediation(f"Unset {variable}{alternative}.", [f"unset {variable}"]))
    wanted_major = _tag_major(sel.backend, value) if value.isdigit() and len(value) >= 2 else None
    if wanted_major is not None and torch_major and wanted_major != torch_major:
        runtime = next((d for d in native.dependencies if d.name.startswith(("libcudart", "cudart", "libamdhip"))), None)
        found = runtime is not None and runtime.resolved is not None
        where = (f"it resolves to {runtime.resolved} ({runtime.via})" if found else  # type: ignore[union-attr]
                 "no such runtime is on the loader path, so loading fails")
        return Hit(
            title=f"{variable}={value} loads a {sel.backend.upper()} {wanted_major} build next to torch's "
            f"{sel.backend.upper()} {torch_major}",
            explanation=f"{sel.loaded_file} needs the {sel.backend.upper()} {wanted_major} runtime, which torch does not "
            f"load; {where}. "
            + ("bitsandbytes supports this only if that runtime is the one on LD_LIBRARY_PATH; two major versions "
               "in one process are fragile." if found else ""),
            evidence=evidence + _loader_evidence(facts),
            remediation=Remediation(f"Unset {variable}{alternative}.", [f"unset {variable}"]),
            severity=Severity.WARNING if found else Severity.ERROR)
    return Hit(
        title=f"{variable}={value} is in force: bitsandbytes loads {sel.loaded_file}",
        explanation="The override replaces bitsandbytes' own choice. It fits torch's major version, so it can work; "
        "remember it is set when you upgrade torch or bitsandbytes.",
        evidence=evidence, remediation=Remediation("Nothing to do if this is intended.", []), severity=Severity.INFO)


def _wheel_for(name: str) -> str | None:
    """The pip wheel that ships a CUDA library: nvidia-*-cu11/-cu12; CUDA 13's are unsuffixed."""
    match = re.match(r"lib(cudart|cublasLt|cublas|cusparse|nvJitLink)\.so\.(\d+)", name)
    if not match:
        return None
    base = _CUDA_WHEELS[match.group(1)]
    return f"{base}-cu{match.group(2)}" if match.group(2) in SUFFIXED_WHEEL_MAJORS else base


@rule(
    "BNB303",
    "cuda-library-not-found",
    Severity.ERROR,
    "Every CUDA library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=("libcudart_not_found_legacy_cuda_setup", "cuda_shared_lib_missing_libcusparse"),
    references=("https://man7.org/linux/man-pages/man8/ld.so.8.html", BNB_DOCS_INSTALL),
)
def cuda_library_missing(facts: Facts) -> Hit | Skip | None:
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("cuda",))
    if not missing:
        return None
    names = ", ".join(d.name for d in missing)
    commands, hints = [], []
    folders = []
    for dep in missing:
        if dep.elsewhere:
            folder = _folder(dep.elsewhere[0])
            if folder not in folders:
                folders.append(folder)
            hints.append(f"{dep.name} exists in {folder}, which is not on the loader path")
    if folders:
        commands.append(f"export LD_LIBRARY_PATH={':'.join(folders)}:$LD_LIBRARY_PATH")
    wheels = sorted({w for d in missing if not d.elsewhere and (w := _wheel_for(d.name))})
    if wheels:
        commands.append("pip install " + " ".join(wheels))
    fix = ("; ".join(hints) + ". " if hints else "") + (
        "Add that folder to LD_LIBRARY_PATH (persist it in your shell profile). " if folders else "") + (
        "The simplest fix is a CUDA build of torch, which brings these libraries and loads them before "
        "bitsandbytes. Installing the wheels alone also needs their lib folders (site-packages/nvidia/*/lib) on "
        "LD_LIBRARY_PATH." if wheels else "")
    return Hit(
        title=f"{_library_name(native)} needs {names}, which the loader cannot find",
        explanation="The library's DT_NEEDED entries are resolved by SONAME: torch's already-loaded copies, then "
        f"{', '.join(s for s in native.search_order[1:])}. None of them has {names}, so loading fails with "
        f"'{missing[0].name}: cannot open shared object file: No such file or directory'.",
        evidence=[ev("searched", " → ".join(native.search_order), "native.search_order")]
        + [ev(d.name, f"not found; elsewhere: {', '.join(d.elsewhere) or 'nowhere bnbdoctor looked'}",
              "native.dependencies") for d in missing] + _loader_evidence(facts),
        remediation=Remediation(fix.strip(), commands),
    )


@rule(
    "BNB304",
    "cuda-runtime-from-another-toolkit",
    Severity.ERROR,
    "The CUDA libraries bitsandbytes resolves match torch's CUDA version",
    needs=("native", "python"),
    covers=("conda_env_vs_system_cuda_mixup", "nvjitlink_cusparse_symbol_mismatch"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1115",),
)
def runtime_mismatch(facts: Facts) -> list[Hit] | Skip:
    native, torch = _native(facts), torch_of(facts)
    if "BNB_CUDA_VERSION" in facts.env:
        return Skip("BNB_CUDA_VERSION is set (BNB302 judges the override)")
    runtime = major_minor(torch.cuda if torch else None)
    if runtime is None:
        return Skip("torch is not a CUDA build")
    hits = []
    for dep in native.dependencies:
        # only the runtime's version tracks the toolkit: CUDA 13 still ships libcusparse.so.12
        if not dep.name.startswith("libcudart.so") or not dep.resolved:
            continue
        found = next((c for c in dep.candidates if c.path == dep.resolved), None)
        version = major_minor(found.version if found else None)
        if version and version[0] != runtime[0]:
            hits.append(Hit(
                title=f"{dep.name} resolves to CUDA {found.version} ({dep.via}), torch is CUDA {torch.cuda}",  # type: ignore[union-attr]
                explanation="bitsandbytes would run on a CUDA runtime of another major version than torch's: the load "
                "or the first kernel fails.",
                evidence=[ev(dep.name, f"{dep.resolved} via {dep.via}", "native.dependencies")] + _loader_evidence(facts),
                remediation=Remediation(f"Make the CUDA {runtime[0]} runtime win: remove the other toolkit's folder "
                                        f"from the search ({dep.via}).", []),
            ))
    return hits


@rule(
    "BNB305",
    "duplicate-cuda-runtimes",
    Severity.INFO,
    "Only one copy of each CUDA library is on the loader's search path",
    needs=("native", "python"),
    covers=("duplicate_cuda_runtimes_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/393",),
)
def duplicates(facts: Facts) -> list[Hit]:
    native, bnb = _native(facts), bnb_of(facts)
    legacy = bnb is not None and LEGACY_CUDA_SETUP.contains(bnb.version)
    searched = ("LD_LIBRARY_PATH", "RUNPATH", "RPATH", "ld.so.cache", "default directories")
    hits = []
    for dep in native.dependencies:
        if not dep.name.startswith(("libcudart.so", "libcublas")) or len(dep.duplicates) < 2:
            continue
        on_path = [c for c in dep.candidates if c.via in searched]
        precise = {major_minor(c.version) for c in on_path if c.version and c.version.count(".") >= 1}
        if not legacy and len(precise) < 2:
            continue  # torch's copy plus a toolkit's is normal: the loaded one wins by SONAME
        hits.append(Hit(
            title=f"{len(dep.duplicates)} copies of {dep.name} are visible; the loader uses {dep.resolved}",
            explanation="The dynamic loader is deterministic: the first search step that has the SONAME wins "
            f"({dep.via})"
            + ("; this legacy bitsandbytes also scans path-like environment variables for CUDA runtimes and warns "
               "'Found duplicate … files' — noise when the winner is the runtime torch uses." if legacy else
               "; several CUDA releases on the search path make that outcome depend on the order of LD_LIBRARY_PATH."),
            evidence=[ev(c.via, f"{c.path} ({c.version or 'version unknown'})", "native.dependencies")
                      for c in dep.candidates],
            remediation=Remediation("Nothing to fix if the winner is the runtime torch uses. To tidy up, remove stale "
                                    "CUDA folders from LD_LIBRARY_PATH.", []),
            severity=Severity.WARNING if legacy else Severity.INFO,
        ))
    return hits


def _abi_hits(facts: Facts, namespaces: tuple[str, ...]) -> list[tuple[str, list[str], AbiNeed]]:
    native = _native(facts)
    out = []
    for need in native.abi:
        missing = [m for m in need.missing if m.split("_")[0] in namespaces]
        if missing:
            out.append((need.library, missing, need))
    return out


@rule(
    "BNB306",
    "libstdcxx-too-old",
    Severity.ERROR,
    "The libstdc++ / libgcc_s the loader picks define every version bitsandbytes needs",
    needs=("native",),
    covers=("cxxabi_not_found", "glibcxx_not_found"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/957",
                "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1663",
                "https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html"),
)
def libstdcxx(facts: Facts) -> list[Hit]:
    native = _native(facts)
    hits = []
    for library, missing, need in _abi_hits(facts, RUNTIME_NAMESPACES):
        provider = need.provider or library
        dep = next((d for d in native.dependencies if d.name == library), None)
        conda = dep is not None and dep.via == "C++ runtime already loaded in the conda env"
        have = ", ".join(f"{v}" for k, v in sorted(need.provider_max.items()) if k in RUNTIME_NAMESPACES)
        alternatives = list(need.satisfied_by)
        commands = []
        if alternatives:
            folder = _folder(alternatives[0])
            fix = f"{alternatives[0]} defines every needed version. "
            if conda:
                fix += ("The conda env's own libstdc++ is loaded first, so update it in the env (or preload the "
                        "newer one).")
                commands = ['conda install -c conda-forge "libstdcxx-ng>=12"', f"export LD_PRELOAD={alternatives[0]}"]
            else:
                fix += "Put its folder first on the loader path."
                commands = [f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH"]
        else:
            fix = ("No libstdc++ on this machine is new enough. Install a newer one in a conda env "
                   "(conda-forge libstdcxx-ng) and put $CONDA_PREFIX/lib first on LD_LIBRARY_PATH, or move to a "
                   "newer OS; building bitsandbytes from source with the local compiler also works.")
            commands = ['conda install -c conda-forge "libstdcxx-ng>=12"',
                        "export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH"]
        hits.append(Hit(
            title=f"{provider} lacks {', '.join(missing)} (needed by {_library_name(native)})",
            explanation=f"{_library_name(native)} was built with a newer GCC and needs {', '.join(missing)} from "
            f"{library}; the copy the loader picks ({dep.via if dep else 'unknown'}) stops at {have or 'older versions'}"
            + (" — the conda env's older libstdc++ shadows the system one" if conda else "")
            + f". dlopen fails with \"{provider}: version `{missing[0]}' not found (required by …)\".",
            evidence=[ev(library, f"{provider} ({dep.via if dep else 'unknown'})", "native.abi"),
                      ev("defines up to", have or "unknown", "native.abi.provider_max"),
                      ev("needs", ", ".join(need.required), "native.version_needs")]
            + [ev("would satisfy", a, "native.abi.satisfied_by") for a in alternatives] + _loader_evidence(facts),
            remediation=Remediation(fix, commands),
        ))
    return hits


@rule(
    "BNB307",
    "glibc-too-old",
    Severity.ERROR,
    "The system glibc defines every GLIBC_ version bitsandbytes needs",
    needs=("native", "platform"),
    covers=("glibc_2_34_not_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1610",),
)
def glibc(facts: Facts) -> list[Hit] | Skip:
    native, bnb, platform = _native(facts), bnb_of(facts), facts.platform
    assert platform is not None
    if platform.os != "linux":
        return Skip("glibc applies to Linux only")
    missing_all: list[str] = []
    for _library, missing, _need in _abi_hits(facts, GLIBC_NAMESPACES):
        missing_all.extend(m for m in missing if m not in missing_all)
    if not missing_all:
        return []
    lib = _library_name(native)
    release = release_tuple(bnb.version) if bnb else None
    torch = torch_of(facts)
    mislinked = GLIBC_234_BUILDS
    if mislinked.releases.contains(release) and mislinked.affects(lib):
        fixed_in = full(mislinked.releases.below_text)
        fix = (f"The {minor(mislinked.releases.first_text)}.x CUDA {'/'.join(mislinked.cuda)} builds were linked "
               f"against glibc {mislinked.glibc} by mistake; {fixed_in} fixed it. Upgrade bitsandbytes, or use a torch "
               f"build for CUDA {mislinked.older_torch_cuda} or older with this release.")
        commands = [f'pip install -U "bitsandbytes{bnb_spec_for_torch(torch.version if torch else None, fixed_in)}"']
    else:
        fix = (f"This glibc ({platform.libc_version or unknown_version(facts)}) is older than the build needs. Use a bitsandbytes build made "
               "for older systems, build from source on this machine, or move to a newer OS.")
        commands = []
    return [Hit(
        title=f"{versioned(facts, 'glibc', platform.libc_version)} lacks {', '.join(missing_all)} (needed by {lib})",
        explanation=f"{lib} needs {', '.join(missing_all)} from libc.so.6, but this system's glibc is "
        f"{platform.libc_version or 'older than that'}: dlopen fails with \"version `{missing_all[0]}' not found\".",
        evidence=[ev("glibc", platform.libc_version, "platform.libc_version"),
                  ev("needs", ", ".join(missing_all), "native.version_needs")] + _loader_evidence(facts),
        remediation=Remediation(fix, commands),
    )]


@rule(
    "BNB308",
    "cpu-only-bitsandbytes-on-gpu-machine",
    Severity.ERROR,
    "bitsandbytes ships GPU libraries when torch uses a GPU",
    needs=("python", "gpu"),
    covers=("compiled_without_gpu_support", "cpu_lib_undefined_symbol_cget_col_row_stats"),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate("a log does not list the files bitsandbytes ships"),
)
def cpu_only_build(facts: Facts) -> Hit | None:
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed and torch and torch.cuda and visible_gpus(facts)):
        return None
    gpu_libs = [f for f in bnb.native_libraries if re.match(r"libbitsandbytes_(cuda|rocm|xpu)", f)]
    if gpu_libs or not bnb.native_libraries:
        return None
    symptom = ("`import bitsandbytes` fails with 'CUDA Setup failed despite GPU being available'"
               if LEGACY_CUDA_SETUP.contains(bnb.version)
               else "bitsandbytes warns that it could not find its CUDA binary and runs CPU-only ('compiled without "
                    "GPU support'; older releases then failed with e.g. 'undefined symbol: cget_col_row_stats')"
               if CPU_FALLBACK_ERA.contains(bnb.version) else
               "the first quantized operation raises a 'binary not found' error")
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} is a CPU-only build on a machine with a CUDA GPU",
        explanation="The package holds only " + ", ".join(bnb.native_libraries) + ": it was built or packaged "
        f"without GPU support (a source build without the CUDA backend, or a CPU-only conda package). {symptom}.",
        evidence=[ev("native libraries", ", ".join(bnb.native_libraries), "python.bitsandbytes.native_libraries"),
                  ev("torch", f"{torch.version} (CUDA {torch.cuda})", "python.torch.cuda")],
        remediation=Remediation("Install the PyPI wheel (it ships CUDA builds), or rebuild with the CUDA backend "
                                "(cmake -DCOMPUTE_BACKEND=cuda).",
                                ["pip install --force-reinstall --no-deps bitsandbytes"]),
    )


@rule(
    "BNB309",
    "no-compiled-library",
    Severity.ERROR,
    "The bitsandbytes package folder holds a compiled native library",
    needs=("python",),
    covers=("source_build_native_lib_missing", "native_lib_none_attribute_errors"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1180", BNB_DOCS_INSTALL),
    log_gate=LogGate("the log does not show bitsandbytes' libraries missing",
                     signatures=("bnb_cpu_library_not_found", "bnb_not_compiled")),
)
def no_library(facts: Facts) -> Hit | None:
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed) or bnb.native_libraries:
        return None
    source = not bnb.has_metadata
    return Hit(
        title="bitsandbytes has no compiled library" + (" (a source checkout on sys.path)" if source else ""),
        explanation=f"{bnb.location} holds no libbitsandbytes_* file. "
        + ("It is a git checkout or an install from source that was never compiled (pip install "
           "git+https://… without a build backend, or `import` from the repository folder). " if source else
           "The install is incomplete. ")
        + "bitsandbytes then fails with 'Could not find the bitsandbytes CUDA binary', \"NameError: name "
        "'str2optimizer32bit' is not defined\" or 'NoneType' attribute errors.",
        evidence=[ev("package folder", bnb.location, "python.bitsandbytes.location"),
                  ev("metadata", "present" if bnb.has_metadata else "none (not pip-installed)", "python.bitsandbytes.has_metadata")],
        remediation=Remediation("Install a released wheel, or compile the library in the checkout "
                                "(cmake -DCOMPUTE_BACKEND=cuda -S . && make) before installing it.",
                                ["pip install --force-reinstall bitsandbytes"] if bnb.has_metadata else []),
    )


@rule(
    "BNB310",
    "rocm-library-not-found",
    Severity.ERROR,
    "Every ROCm/HIP library the selected bitsandbytes build needs is found by the loader",
    needs=("native",),
    covers=("rocm_hip_libraries_missing",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1520", BNB_DOCS_INSTALL),
)
def rocm_missing(facts: Facts) -> Hit | Skip | None:
    native = _native(facts)
    if facts.platform and facts.platform.os == "windows":
        return Skip("Windows DLLs are checked by BNB311")
    missing = _unresolved(native, ("rocm",))
    if not missing:
        return None
    folders = sorted({_folder(d.elsewhere[0]) for d in missing if d.elsewhere})
    return Hit(
        title=f"{_library_name(native)} needs {', '.join(d.name for d in missing)}, which the loader cannot find",
        explanation="The ROCm build of bitsandbytes links hipBLAS/hipBLASLt (and hipSPARSE or rocRAND on some "
        "releases) from a ROCm install; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'.",
        evidence=[ev(d.name, f"not found; elsewhere: {', '.join(d.elsewhere) or 'nowhere bnbdoctor looked'}",
                     "native.dependencies") for d in missing] + _loader_evidence(facts),
        remediation=Remediation("Install the ROCm libraries of the version torch was built for (hipblas, hipblaslt), "
                                "or add the ROCm lib folder to LD_LIBRARY_PATH.",
                                [f"export LD_LIBRARY_PATH={':'.join(folders)}:$LD_LIBRARY_PATH"] if folders else []),
    )


@rule(
    "BNB311",
    "windows-dll-dependency-missing",
    Severity.ERROR,
    "Every DLL the selected bitsandbytes build imports is found by Windows",
    needs=("native", "platform"),
    covers=("windows_dll_could_not_find_module",),
    references=("https://docs.python.org/3/library/os.html#os.add_dll_directory",
                "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/639"),
)
def windows_dlls(facts: Facts) -> Hit | Skip | None:
    native, platform = _native(facts), facts.platform
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    missing = [d for d in native.dependencies if d.resolved is None]
    if not missing:
        return None
    on_path = [d for d in missing if any(c.via.startswith(_NOT_SEARCHED) for c in d.candidates)]
    vc = [d.name for d in missing if d.kind == "cxx_runtime"]
    cuda = [d.name for d in missing if d.kind == "cuda"]
    parts, commands = [], []
    if on_path:
        parts.append(f"{', '.join(d.name for d in on_path)} exist on PATH ({_folder(on_path[0].candidates[0].path)}), "
                     f"but Python {PYTHON_DLL_PATH_SEARCH_DROPPED}+ does not search PATH for a DLL's dependencies: "
                     "add the folder with "
                     "os.add_dll_directory() before importing bitsandbytes, or use a torch CUDA build that ships them.")
    if vc:
        parts.append("Install the Microsoft Visual C++ Redistributable (x64) for " + ", ".join(vc) + ".")
        commands.append("winget install --id Microsoft.VCRedist.2015+.x64")
    if cuda and not on_path:
        parts.append("Install a CUDA build of torch (it ships " + ", ".join(cuda) + " in torch\\lib) or the matching "
                     "CUDA toolkit.")
    return Hit(
        title=f"{_library_name(native)} imports {', '.join(d.name for d in missing)}, which Windows cannot find",
        explanation="Windows loads a DLL's imports from already-loaded DLLs, the DLL's own folder, the application "
        "folder, System32 and folders added with os.add_dll_directory. Without them Python raises "
        f"\"Could not find module '…{_library_name(native)}' (or one of its dependencies)\".",
        evidence=[ev(d.name, "not found" + (f"; on PATH at {d.candidates[0].path}" if d.candidates else ""),
                     "native.dependencies") for d in missing] + _loader_evidence(facts),
        remediation=Remediation(" ".join(parts) or "Install the missing DLLs.", commands),
    )


@rule(
    "BNB312",
    "linux-library-on-windows",
    Severity.ERROR,
    "A Windows install of bitsandbytes holds Windows DLLs, not Linux .so files",
    needs=("python", "platform"),
    covers=("windows_linux_so_loaded", "windows_path_not_iterable"),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/723",),
)
def linux_so_on_windows(facts: Facts) -> Hit | Skip | None:
    bnb, platform, torch = bnb_of(facts), facts.platform, torch_of(facts)
    assert platform is not None
    if platform.os != "windows":
        return Skip("not Windows")
    if not (bnb and bnb.installed and bnb.native_libraries):
        return None
    so = [f for f in bnb.native_libraries if f.endswith(".so")]
    if not so or any(f.endswith(".dll") for f in bnb.native_libraries):
        return None
    spec = bnb_spec_for_torch(torch.version if torch and torch.installed else None, WINDOWS_WHEELS.first_text)
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} on Windows holds only Linux libraries ({len(so)} .so files)",
        explanation=f"Releases up to {LINUX_ONLY_WHEEL.last_text} were a py3-none-any wheel containing Linux ELF "
        "files. On Windows, loading "
        "one fails with '[WinError 193] %1 is not a valid Win32 application', and the legacy setup trips over "
        "Windows paths (\"argument of type 'WindowsPath' is not iterable\").",
        evidence=[ev("native libraries", ", ".join(so[:4]) + (" …" if len(so) > 4 else ""),
                     "python.bitsandbytes.native_libraries")],
        remediation=Remediation(f"Install a release with Windows DLLs ({WINDOWS_WHEELS.first_text}+), or run under "
                                "WSL2.",
                                [f'pip install -U "bitsandbytes{spec}"']),
    )


@rule(
    "BNB313",
    "native-library-unreadable",
    Severity.ERROR,
    "The selected bitsandbytes library is a readable binary for this platform",
    needs=("native", "platform"),
    covers=("macos_apple_silicon_no_native_lib",),
    references=(BNB_DOCS_INSTALL,),
    log_gate=LogGate("a log does not show the library's file format", shows=lambda facts: bool(facts.native and facts.native.format)),
)
def unreadable(facts: Facts) -> Hit | None:
    native, platform, bnb, torch = _native(facts), facts.platform, bnb_of(facts), torch_of(facts)
    assert platform is not None
    if not native.library or not native.selection or not native.selection.exists:
        return None
    problem = format_problem(native, platform.os, platform.arch)
    if problem is None:
        return None
    if platform.os == "windows" and native.format == "ELF":
        return None  # Linux files on Windows: BNB312
    version = bnb.version if bnb else ""
    first = FIRST_RELEASE_FOR_PLATFORM.get((platform.os, platform.arch))
    wrong_platform = native.error is None
    if wrong_platform and first and not (release_tuple(version) or (0,)) >= (release_tuple(first) or (0,)):
        spec = bnb_spec_for_torch(torch.version if torch and torch.installed else None, first)
        fix = Remediation(f"This release has no build for {platform.os} {platform.arch}; install {first} or newer.",
                          [f'pip install -U "bitsandbytes{spec}"'])
    elif wrong_platform:
        fix = Remediation("Reinstall bitsandbytes from the wheel for this platform (a copied site-packages or a "
                          "wheel for another machine holds foreign binaries).",
                          [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [])
    else:
        fix = Remediation("Reinstall bitsandbytes: the file is damaged or truncated.",
                          [f'pip install --force-reinstall --no-deps "bitsandbytes=={version}"'] if version else [])
    return Hit(
        title=f"{native.library} cannot be loaded: {problem}",
        explanation="The file bitsandbytes will load is damaged, truncated, or built for another platform; the "
        "loader rejects it ('invalid ELF header', 'file too short', 'wrong ELF class', 'not a mach-o file').",
        evidence=[ev("file", native.library, "native.library"), ev("problem", problem, "native.error")]
        + _loader_evidence(facts),
        remediation=fix,
    )


@rule(
    "BNB314",
    "native-load-failed",
    Severity.ERROR,
    "The real dynamic loader loads the selected library",
    needs=("native", "load"),
    references=("https://docs.python.org/3/library/ctypes.html#loading-shared-libraries",),
)
def load_failed(facts: Facts) -> Hit | Skip | None:
    native, load = _native(facts), facts.load
    assert load is not None
    if not load.ran:
        return Skip(f"the load check did not run: {load.skipped_reason}")
    if load.ok:
        return None
    if static_problem(facts):
        # it did not load, but the static findings above name the cause and quote this message
        return Skip("the load failed; the findings above explain why")
    return Hit(
        title=f"Loading {_library_name(native)} fails although every dependency was found",
        explanation="The static analysis found all dependencies and symbol versions, but the real loader refused "
        "the library. The loader's message below names the cause (often a symbol missing from a library of the "
        "right name but the wrong release).",
        evidence=[ev("library", load.library, "load.library"), ev("the real loader said", load.error, "load.error")]
        + [ev(f"preload failed: {k}", v, "load.preload_errors") for k, v in load.preload_errors.items()],
        remediation=Remediation("Check the named library's version against torch's CUDA version; reinstalling "
                                "bitsandbytes and torch from the same index usually resolves it.", []),
    )


@rule(
    "BNB315",
    "prediction-contradicted-by-loader",
    Severity.WARNING,
    "The static prediction and the real loader agree",
    needs=("native", "load"),
)
def contradicted(facts: Facts) -> Hit | Skip | None:
    native, load = _native(facts), facts.load
    assert load is not None
    if not load.ran:
        return Skip(f"the load check did not run: {load.skipped_reason}")
    if not (load.ok and static_problem(facts)):
        return None
    return Hit(
        title=f"The real loader loaded {_library_name(native)} although bnbdoctor predicted a failure",
        explanation="bnbdoctor's static model of the loader disagrees with the real one on this machine; trust the "
        "real loader. Findings about missing libraries or symbol versions above may be wrong here.",
        evidence=[ev("library", load.library, "load.library")],
        remediation=Remediation("Please report this with `bnbdoctor --json` attached so the model can be fixed.", []),
    )


@rule(
    "BNB316",
    "system-library-not-found",
    Severity.ERROR,
    "Every C/C++ runtime library the selected bitsandbytes build needs is found by the loader",
    needs=("native", "platform"),
    covers=(),
    references=("https://man7.org/linux/man-pages/man8/ld.so.8.html",),
)
def system_library_missing(facts: Facts) -> Hit | Skip | None:
    native = _native(facts)
    if facts.platform and facts.platform.os != "linux":
        return Skip("Linux only (Windows imports are checked by BNB311)")
    oneapi = _unresolved(native, ("oneapi",))
    if oneapi:
        return Hit(
            title=f"{_library_name(native)} needs Intel oneAPI runtime libraries the loader cannot find: "
            f"{', '.join(d.name for d in oneapi)}",
            explanation="The XPU builds link the SYCL/oneAPI runtime (libsycl, libsvml, libimf, …), which comes with "
            "the oneAPI toolkit or the runtime wheels torch's XPU build depends on; it is not a system package.",
            evidence=[ev(d.name, "not found", "native.dependencies") for d in oneapi] + _loader_evidence(facts),
            remediation=Remediation("Source the oneAPI environment before Python, or install the runtime wheels.",
                                    ["source /opt/intel/oneapi/setvars.sh", "pip install intel-sycl-rt intel-cmplr-lib-rt"]),
        )
    missing = _unresolved(native, ("cxx_runtime", "libc", "other"))
    if not missing:
        return None
    names = ", ".join(d.name for d in missing)
    hints = {"libgomp.so.1": "the GNU OpenMP runtime (Debian/Ubuntu: libgomp1; RHEL: libgomp)",
             "libstdc++.so.6": "the GNU C++ runtime (libstdc++6 / libstdc++)",
             "libgcc_s.so.1": "the GCC runtime (libgcc-s1 / libgcc)"}
    wanted = [hints[d.name] for d in missing if d.name in hints]
    return Hit(
        title=f"{_library_name(native)} needs {names}, which the loader cannot find",
        explanation="These are ordinary system runtime libraries; without them loading fails with "
        f"'{missing[0].name}: cannot open shared object file'. The CPU build of {CPU_LIBRARY_NEEDS_OPENMP.first_text}+ "
        "also needs OpenMP "
        "(libgomp.so.1), which slim container images often lack.",
        evidence=[ev(d.name, f"not found; elsewhere: {', '.join(d.elsewhere) or 'nowhere bnbdoctor looked'}",
                     "native.dependencies") for d in missing] + _loader_evidence(facts),
        remediation=Remediation("Install " + ("; ".join(wanted) if wanted else "the missing runtime libraries")
                                + " with the system package manager.", []),
    )
