"""BNB305 duplicate-cuda-runtimes: passes when only one copy of each CUDA library is on the loader's search path."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev
from bnbdoctor.rules.native._shared import _native


@rule(
    Severity.INFO,
    "Only one copy of each CUDA library is on the loader's search path",
    needs=("native", "python"),
    covers=("duplicate_cuda_runtimes_found",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/393",),
    requires=("library-readable",),
)
def duplicates(facts: Facts) -> list[Hit]:
    r"""## What it detects

    The rule reads the `native` and `python` facts. For each CUDA library the selected bitsandbytes library needs,
    bnbdoctor records every place the loader's search finds a file of that name, not only the winner. It resolves
    symlinks first, so `libcudart.so.12` and `libcudart.so.12.4.127` in one folder count as one file.

    It looks at `libcudart` and `libcublas`. For current releases it reports a library only when copies of *different
    CUDA releases* (major.minor from the real file names) sit on the search steps the loader really walks
    (`LD_LIBRARY_PATH`, RUNPATH/RPATH, the loader cache, the default folders): that is when the outcome depends on the
    order of `LD_LIBRARY_PATH`. torch's own wheel copy next to a system toolkit is normal and is not reported (the
    loaded one wins by SONAME). For releases before {{ loader.LEGACY_CUDA_SETUP.below_text }} any second copy is reported, because their setup scans for
    copies itself. The finding names the copy the loader will use and lists every copy with the search step that finds
    it.

    The finding is **info** for current releases, where only the loader's choice matters. It is a **warning** for
    releases before {{ loader.LEGACY_CUDA_SETUP.below_text }}, whose legacy CUDA setup scans paths itself and prints the alarming duplicate warning.

    ## Why it matters

    Up to {{ loader.LEGACY_CUDA_SETUP.last_text }}, the legacy setup searched `$CONDA_PREFIX`, `LD_LIBRARY_PATH` and other path-like variables for
    `libcudart.so` itself. When it found more than one, it warned. Releases before {{ loader.CUDA_VERSION_FROM_TORCH.first_text }} said:

    ```text
    Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] files: {…}.. We'll flip a coin and try one of these, in order to fail forward.
    ```

    From {{ loader.CUDA_VERSION_FROM_TORCH.first_text }} the same warning ends with `We select the PyTorch default libcudart.so, which is {torch.version.cuda}`,
    placeholder included.

    Neither message describes what happens. The dynamic loader is deterministic: the first step of its search order that
    has the SONAME wins, and a library torch has already loaded always wins. Many reports list `libcudart.so` and
    `libcudart.so.11.0` from the same folder; usually that is one library reached through a symlink.

    Real duplicates still matter in two ways. A copy from another CUDA release can win if the search order changes (a
    new `LD_LIBRARY_PATH`, a job script, a container `ENV`). On legacy releases, a second runtime of another version was
    linked to `invalid device function` and `named symbol not found` errors. This rule says which copy wins today.
    [BNB304](BNB304.md) says whether the winner is the wrong one.

    ## How to fix

    Usually nothing: if the winner is torch's own copy, the other copies are not used. To check which files are really
    distinct:

    ```bash
    for f in $(ldconfig -p | awk '/libcudart.so/ {print $NF}'); do readlink -f "$f"; done | sort -u
    echo "$LD_LIBRARY_PATH" | tr ':' '\n'
    ```

    - Drop CUDA folders you no longer need from `LD_LIBRARY_PATH`, `/etc/ld.so.conf.d/` and job scripts, so a later
      change of search order cannot bring an old runtime forward.
    - Keep at most one CUDA toolkit registered with `ldconfig` when torch comes from pip.
    - Legacy bitsandbytes (up to {{ loader.LEGACY_CUDA_SETUP.last_text }}): upgrade. That removes the misleading duplicate warning as well as the path
      scan behind it ([BNB205](BNB205.md)).

    ## Severity note

    raised to **warning** for releases before {{ loader.LEGACY_CUDA_SETUP.below_text }}

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/582 (two names for the runtime in one conda folder)
    """
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
        hits.append(
            Hit(
                title=f"{len(dep.duplicates)} copies of {dep.name} are visible; the loader uses {dep.resolved}",
                explanation="The dynamic loader is deterministic: the first search step that has the SONAME wins "
                f"({dep.via})"
                + (
                    "; this legacy bitsandbytes also scans path-like environment variables for CUDA runtimes and warns "
                    "'Found duplicate … files' — noise when the winner is the runtime torch uses."
                    if legacy
                    else "; several CUDA releases on the search path make that outcome depend on the order of LD_LIBRARY_PATH."
                ),
                evidence=[
                    ev(c.via, f"{c.path} ({c.version or 'version unknown'})", "native.dependencies")
                    for c in dep.candidates
                ],
                remediation=Remediation(
                    "Nothing to fix if the winner is the runtime torch uses. To tidy up, remove stale "
                    "CUDA folders from LD_LIBRARY_PATH.",
                    [],
                ),
                severity=Severity.WARNING if legacy else Severity.INFO,
            )
        )
    return hits
