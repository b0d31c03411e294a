"""BNB302 bnb-cuda-version-override: passes when BNB_CUDA_VERSION / BNB_ROCM_VERSION are unset or point at a usable build."""

from __future__ import annotations

import re

from bnbdoctor.environment import override_named
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.loader import EMPTY_OVERRIDE_IGNORED, NEAREST_BUILD, ROCM_REJECTS_CUDA_OVERRIDE
from bnbdoctor.knowledge.selection import LibrarySelection
from bnbdoctor.knowledge.versions import major_minor, release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, torch_of, versioned
from bnbdoctor.rules.native._shared import (
    _UPGRADE_TO_NEAREST,
    _loader_evidence,
    _native,
    _reachable_same_major,
    _shipped_versions,
    _tag_major,
    underlying_gap,
)


def _unset_remediation(facts: Facts, variable: str, gap: LibrarySelection | None, alternative: str) -> Remediation:
    """Unset the override, unless the release ships nothing for torch's version without it: then say
    both, and give the upgrade (or the override value that does reach a shipped build)."""
    if gap is None:
        return Remediation(f"Unset {variable}{alternative}.", [f"unset {variable}"])
    torch = torch_of(facts)
    upgrade = list(_UPGRADE_TO_NEAREST)
    wanted = major_minor(torch.hip if gap.backend == "rocm" else torch.cuda) if torch else None
    reachable = _reachable_same_major(facts, gap.backend, wanted[0], wanted) if wanted else None
    text = (
        f"Unsetting {variable} alone does not help: without it bitsandbytes asks for {gap.expected_file}, which "
        f"it does not ship either. Upgrade bitsandbytes ({NEAREST_BUILD.first_text}+ picks the nearest build of the "
        f"same major) and unset {variable}"
    )
    if reachable:
        text += f"; or set {reachable[0]}={reachable[1]}, a shipped build of torch's major version"
        return Remediation(text + ".", [f"export {reachable[0]}={reachable[1]}", *upgrade])
    return Remediation(text + ".", [*upgrade, f"unset {variable}"])


@rule(
    Severity.ERROR,
    "BNB_CUDA_VERSION / BNB_ROCM_VERSION are unset or point at a usable build",
    needs=("native", "python"),
    covers=("bnb_cuda_version_override_mismatch",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1559", BNB_DOCS_INSTALL),
    refutes=("override-fits-torch",),
)
def override(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `python` facts and the `BNB_CUDA_VERSION` environment variable — or
    `BNB_ROCM_VERSION` when torch is a ROCm build and bitsandbytes is {{ loader.NEAREST_BUILD.first_text }}+ (which ignores `BNB_CUDA_VERSION` on ROCm).
    It is skipped when the variable it reads is not set. An empty value counts as set.

    It reports one finding, for the first case that applies:

    - **info**: the CPU library is chosen (torch sees no CUDA GPU), so the variable does nothing today;
    - **warning**: the value is empty and the release is {{ loader.EMPTY_OVERRIDE_IGNORED.last_text }} or older — ignored today ({{ loader.EMPTY_OVERRIDE_IGNORED.first_text }}–{{ loader.EMPTY_OVERRIDE_IGNORED.last_text }} told users to clear
      the override this way), but {{ loader.NEAREST_BUILD.first_text }}+ rejects it, so the next upgrade breaks the import;
    - **error**: the release rejects the value: {{ loader.NEAREST_BUILD.first_text }}+ requires digits only; {{ loader.ROCM_REJECTS_CUDA_OVERRIDE.first_text }}–{{ loader.ROCM_REJECTS_CUDA_OVERRIDE.last_text }} refuse any non-empty
      `BNB_CUDA_VERSION` when torch is a ROCm build;
    - **error**: the value names a library the package does not ship, e.g. `libbitsandbytes_cuda117.so` in a release
      without CUDA 11.7. The text says what that release then does: ≤ {{ loader.LEGACY_CUDA_SETUP.last_text }} fails at import, {{ loader.CPU_FALLBACK_ERA.first_text }}–{{ loader.CPU_FALLBACK_ERA.last_text }} fall back to
      the CPU library, {{ loader.EXACT_MATCH_ERA.first_text }}+ raise at the first quantized operation;
    - **error** (or **warning** when that runtime is on the loader path): the value picks a build for another CUDA major
      than torch's;
    - **info**: the override is in force and matches torch's major version, which can work.

    It is skipped for {{ loader.ROCM_WITHOUT_OVERRIDE.first_text }} ROCm builds, which ignore `BNB_CUDA_VERSION`. Whatever it reports, it also asks what the
    release would pick without the override: when the release ships nothing for torch's version either (reported by
    [BNB301](BNB301.md)), the fix says so and gives the upgrade, or the override value that does reach a shipped build
    of torch's major, instead of "unset it" alone. Errors of this rule are a root cause: [BNB303](BNB303.md)'s missing
    CUDA libraries of an override's build are listed under it.

    ## Why it matters

    `BNB_CUDA_VERSION=XYZ` replaces bitsandbytes' own choice with `libbitsandbytes_cudaXYZ`. It is meant for running
    bitsandbytes on a CUDA version other than torch's, and it is easy to forget: Docker images and notebook platforms
    have baked it in, and it survives upgrades of torch and bitsandbytes. What a bad value does depends on the release:

    | release | override behaviour |
    |---|---|
    | {{ loader.CUDA_OVERRIDE_READ.first_minor }} – {{ loader.LEGACY_CUDA_SETUP.last_text }} | used only when non-empty; a missing file makes `import bitsandbytes` fail |
    | {{ loader.CPU_FALLBACK_ERA.first_text }} – {{ loader.CPU_FALLBACK_ERA.last_text }} | an empty value is ignored; a missing file is handled like any missing file: a warning, then the CPU library |
    | {{ loader.EXACT_MATCH_ERA.first_text }} – {{ loader.EXACT_MATCH_ERA.last_text }} | an empty value is ignored; a missing file raises at the first native call; ROCm builds ({{ loader.ROCM_REJECTS_CUDA_OVERRIDE.first_text }}+) refuse any non-empty `BNB_CUDA_VERSION` |
    | {{ loader.NEAREST_BUILD.first_text }}+ | exactly `libbitsandbytes_{cuda,rocm}<value>` with no fallback; the value must be all digits, so `export BNB_CUDA_VERSION=` raises `value must be digits only` |

    Up to {{ loader.OVERRIDE_NOCUBLASLT_BUG.last_text }} the override also builds a wrong name for the `_nocublaslt` variants used on GPUs below compute
    capability {{ gpus.INT8_MATMUL_MIN.text }} (`libbitsandbytes_cuda124_nocublaslt124.so` in issue #1312); {{ loader.OVERRIDE_NOCUBLASLT_BUG.below_full }} fixed it.

    The override chooses only bitsandbytes' file. The `libcudart.so.X` that file needs still comes from the normal
    loader search. An override to another CUDA major therefore needs that major's runtime on the loader path next to
    torch's. The release's own warning says so: `make sure the right libcudart.so is in your LD_LIBRARY_PATH`.

    ## How to fix

    Find out where the variable comes from:

    ```bash
    env | grep -E '^BNB_(CUDA|ROCM)_VERSION='
    grep -rn BNB_CUDA_VERSION ~/.bashrc ~/.profile /etc/environment 2>/dev/null
    ```

    - Nearly always: remove it, unless the release ships nothing for torch's version without it (the finding says so;
      upgrade bitsandbytes first). Use `unset BNB_CUDA_VERSION`, not `export BNB_CUDA_VERSION=`, because {{ loader.NEAREST_BUILD.first_text }}+ rejects the
      empty value. Also delete it from shell profiles, Dockerfiles (`ENV BNB_CUDA_VERSION=…`), notebook settings and job
      scripts.
    - If you really run bitsandbytes on another CUDA than torch's, set it to a build the package ships (`pip show -f
      bitsandbytes | grep libbitsandbytes_`), and put that CUDA's `lib64` folder on `LD_LIBRARY_PATH`.
    - ROCm with {{ loader.NEAREST_BUILD.first_text }}+: the variable is `BNB_ROCM_VERSION`. {{ loader.ROCM_REJECTS_CUDA_OVERRIDE.first_text }}–{{ loader.ROCM_REJECTS_CUDA_OVERRIDE.last_text }} ROCm builds accept no override at all.

    ## Severity note

    lowered to **info** when the override has no effect or is harmless

    ## Further reading

    - https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1318 (the `_nocublaslt` override name, fixed in
      {{ loader.OVERRIDE_NOCUBLASLT_BUG.below_full }})
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/793 (override plus `LD_LIBRARY_PATH` on a legacy
      release)
    """
    native, torch, bnb = _native(facts), torch_of(facts), bnb_of(facts)
    release = release_tuple(bnb.version if bnb else None) or (0,)
    # a log may not show torch's HIP version: BNB_ROCM_VERSION set alone (and no CUDA torch) says ROCm too
    rocm = bool(torch and torch.hip) or (override_named(facts.env) == "BNB_ROCM_VERSION" and not (torch and torch.cuda))
    strict = NEAREST_BUILD.contains(release)
    variable = "BNB_ROCM_VERSION" if rocm and strict else "BNB_CUDA_VERSION"
    value = facts.env.get(variable)
    if value is None:
        if rocm and strict and "BNB_CUDA_VERSION" in facts.env:
            return Skip(
                f"BNB_CUDA_VERSION is ignored on ROCm from {NEAREST_BUILD.first_text} (BNB_ROCM_VERSION is not set)"
            )
        return Skip(f"{variable} is not set")
    if rocm and not strict and not ROCM_REJECTS_CUDA_OVERRIDE.contains(release):
        return Skip(f"bitsandbytes {bnb.version if bnb else '?'} ROCm builds ignore BNB_CUDA_VERSION")
    sel = native.selection
    evidence = [ev(variable, repr(value), f"env.{variable}")]
    gap = underlying_gap(facts)
    # '6.2', '12.4' are rejected: the release wants digits ('62', '124')
    digits = (
        f", or write it in digits: {variable}={value.replace('.', '')}" if re.fullmatch(r"\d{1,2}\.\d", value) else ""
    )
    unset = _unset_remediation(facts, variable, gap, digits if sel and sel.outcome == "override_error" else "")
    if sel is None or sel.backend == "cpu":
        return Hit(
            title=f"{variable}={value!r} is set but has no effect here",
            explanation="The override only applies when torch sees a GPU; this machine loads the CPU library.",
            evidence=evidence,
            remediation=unset,
            severity=Severity.INFO,
            covers=[],  # an override without effect diagnoses no failure
        )
    if value == "" and not strict:
        return Hit(
            title=f"{variable} is set but empty: ignored by {bnb.version}, "  # type: ignore[union-attr]
            f"rejected by {NEAREST_BUILD.first_text}+",
            explanation=f"Releases {EMPTY_OVERRIDE_IGNORED.first_text}–{EMPTY_OVERRIDE_IGNORED.last_text} told users "
            "to clear the override with `export BNB_CUDA_VERSION=`; they ignore an empty value. From "
            f"{NEAREST_BUILD.first_text} the variable being set at all counts, and an empty value raises "
            "\"BNB_CUDA_VERSION='': value must be digits only\" — the next upgrade will break the import.",
            evidence=evidence,
            remediation=unset,
            severity=Severity.WARNING,
        )
    evidence.append(ev("selected", sel.expected_file, "native.selection.expected_file"))
    if sel.outcome == "override_error":
        return Hit(
            title=f"{variable}={value!r} is rejected by {versioned(facts, 'bitsandbytes', bnb.version)}",  # type: ignore[union-attr]
            explanation=f"bitsandbytes raises '{sel.message}'"
            + (
                f": on ROCm builds {ROCM_REJECTS_CUDA_OVERRIDE.first_text}–{ROCM_REJECTS_CUDA_OVERRIDE.last_text} "
                "refuse any non-empty BNB_CUDA_VERSION."
                if rocm and variable == "BNB_CUDA_VERSION"
                else "."
            )
            + (
                f" {NEAREST_BUILD.first_text} checks that the variable is set, not that it is non-empty; the old advice "
                "'export BNB_CUDA_VERSION=' now breaks the import."
                if value == ""
                else ""
            ),
            evidence=evidence,
            remediation=unset,
        )
    torch_major = (major_minor(torch.hip if rocm else torch.cuda) or (0, 0))[0] if torch else 0
    shipped = _shipped_versions(facts, sel.backend)
    wanted = major_minor(torch.hip if rocm else torch.cuda) if torch else None
    reachable = _reachable_same_major(facts, sel.backend, torch_major, wanted)
    alternative = f", or set it to a shipped build of torch's major version ({reachable[1]})" if reachable else ""
    if not sel.exists:
        bug = (
            " — built by this release's name-building bug for _nocublaslt builds"
            if "nocubla" in sel.expected_file
            else ""
        )
        effect = {
            "import_error": "`import bitsandbytes` fails ('CUDA Setup failed despite GPU being available')",
            "cpu_fallback": "bitsandbytes falls back to its CPU library, so GPU operations fail",
        }.get(sel.outcome, "the first quantized operation raises a 'binary not found' error")
        return Hit(
            title=f"{variable}={value} asks for {sel.expected_file}, which bitsandbytes does not ship",
            explanation=f"With the override set, bitsandbytes asks for exactly that file{bug}. It is missing: {effect}.",
            evidence=[
                *evidence,
                ev("shipped builds", ", ".join(shipped) or "none", "python.bitsandbytes.native_libraries"),
            ],
            remediation=_unset_remediation(facts, variable, gap, alternative),
        )
    wanted_major = _tag_major(sel.backend, value) if value.isdigit() and len(value) >= 2 else None
    if wanted_major is not None and torch_major and wanted_major != torch_major:
        runtime = next(
            (d for d in native.dependencies if d.name.startswith(("libcudart", "cudart", "libamdhip"))), None
        )
        found = runtime is not None and runtime.resolved is not None
        where = (
            f"it resolves to {runtime.resolved} ({runtime.via})"
            if runtime is not None and runtime.resolved is not None
            else "no such runtime is on the loader path, so loading fails"
        )
        return Hit(
            title=f"{variable}={value} loads a {sel.backend.upper()} {wanted_major} build next to torch's "
            f"{sel.backend.upper()} {torch_major}",
            explanation=f"{sel.loaded_file} needs the {sel.backend.upper()} {wanted_major} runtime, which torch does not "
            f"load; {where}. "
            + (
                "bitsandbytes supports this only if that runtime is the one on LD_LIBRARY_PATH; two major versions "
                "in one process are fragile."
                if found
                else ""
            ),
            evidence=evidence + _loader_evidence(facts),
            remediation=_unset_remediation(facts, variable, gap, alternative),
            severity=Severity.WARNING if found else Severity.ERROR,
        )
    return Hit(
        title=f"{variable}={value} is in force: bitsandbytes loads {sel.loaded_file}",
        explanation="The override replaces bitsandbytes' own choice. It fits torch's major version, so it can work; "
        "remember it is set when you upgrade torch or bitsandbytes."
        + (
            f" Without it, bitsandbytes would ask for {gap.expected_file}, which it does not ship (BNB301): do not "
            "just unset it, upgrade bitsandbytes first."
            if gap is not None
            else ""
        ),
        evidence=evidence,
        remediation=Remediation("Nothing to do if this is intended.", []),
        severity=Severity.INFO,
        covers=[],  # a fitting override diagnoses no failure
    )
