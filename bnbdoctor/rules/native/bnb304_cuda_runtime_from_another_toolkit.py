"""BNB304 cuda-runtime-from-another-toolkit: passes when the CUDA libraries bitsandbytes resolves match torch's CUDA version."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev, torch_of
from bnbdoctor.rules.native._shared import _loader_evidence, _native


@rule(
    Severity.ERROR,
    "The CUDA libraries bitsandbytes resolves match torch's CUDA version",
    needs=("native", "python"),
    covers=("conda_env_vs_system_cuda_mixup",),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1115",),
    requires=("library-readable",),
)
def runtime_mismatch(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule reads the `native` and `python` facts. It is skipped when torch is not a CUDA build, and when
    `BNB_CUDA_VERSION` is set ([BNB302](BNB302.md) judges an override). It looks at the CUDA *runtime* the selected
    bitsandbytes library needs (`libcudart.so.N`) and at the copy the loader would take: when the version in that copy's
    real file name (after following symlinks, e.g. `libcudart.so.11.0` → `libcudart.so.11.8.89` → CUDA `11.8`) has another
    major than `torch.version.cuda`, it reports an error with the path and the search step that found it. Only the
    runtime is compared: CUDA 13 still ships `libcusparse.so.12`, so other libraries' SONAME versions say nothing about
    the toolkit.

    torch's pip wheels load their `nvidia-*` libraries through `DT_RPATH`, which the loader searches before
    `LD_LIBRARY_PATH`; bnbdoctor models that, so a toolkit folder on `LD_LIBRARY_PATH` does not by itself produce a
    finding (the recorded machine `cuda11-first-ld-path-torch-cu12` passes).

    ## Why it matters

    pip's torch wheels bring their CUDA libraries as `nvidia-*` packages. Since late 2022, torch's own libraries point
    at those folders with `DT_RPATH` rather than `DT_RUNPATH`. The loader searches `DT_RPATH` *before*
    `LD_LIBRARY_PATH`, so the CUDA libraries torch links directly (`libcudart`, `libcublas`, `libcublasLt`) come from
    the wheels even when a toolkit folder is exported. bitsandbytes then reuses them by SONAME. This was done on
    purpose, so that a `/usr/local/cuda/lib64` on `LD_LIBRARY_PATH` cannot replace the PyPI libraries.

    That protection does not reach the dependencies of NVIDIA's own libraries. cuSPARSE needs nvJitLink, and it looks
    for it after `LD_LIBRARY_PATH`. A toolkit folder exported there (`/usr/local/cuda-12.1/lib64`, Kaggle's
    `/opt/conda/lib`, an HPC module's `lib64`) can supply an older `libnvJitLink.so.12`. The SONAMEs match, so nothing
    complains until a newer symbol is missing:

    ```text
    ImportError: …/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12
    ```

    This kills `import torch` as well as bitsandbytes. The real load check catches it as [BNB314](BNB314.md) when the
    static model finds nothing.

    The older form of the mix-up comes from conda environments. The legacy loader (up to {{ loader.LEGACY_SYSTEM_CUDA_RUNTIME.last_text }}) took the CUDA runtime
    from `/usr/local/cuda` or a conda `cudatoolkit` rather than from torch. When that runtime had another major version,
    it picked a library that does not exist or loaded the wrong runtime.

    ## Example notes

    (A SONAME `libcudart.so.12` pointing at a CUDA 11.8 file is a broken install — the kind of mix-up conda environments and
    hand-made symlinks produce.)

    ## How to fix

    See which copy the loader really picks:

    ```bash
    echo "$LD_LIBRARY_PATH"
    LD_DEBUG=libs python -c "import torch" 2>&1 | grep -E 'calling init: .*(libcudart|libcublas|libnvJitLink|libcusparse)'
    ```

    - pip's torch: remove CUDA toolkit folders from `LD_LIBRARY_PATH`, in the shell profile, `module load` scripts and
      container `ENV` lines. If something else needs the toolkit, set the variable only for that program.
    - If a folder must stay, put torch's wheel folders (`site-packages/nvidia/*/lib`) in front of it, and keep
      `nvidia-nvjitlink-cu12` at least as new as `nvidia-cusparse-cu12`.
    - conda: keep torch and bitsandbytes from the same ecosystem (pip torch with PyPI bitsandbytes), and do not mix a
      conda `cudatoolkit` of another major into the environment.
    - Legacy bitsandbytes (up to {{ loader.LEGACY_CUDA_SETUP.last_text }}): upgrade; the current loader follows torch's CUDA version
      ([BNB205](BNB205.md)).

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (`DT_RPATH`, then `LD_LIBRARY_PATH`, then `DT_RUNPATH`)
    - https://github.com/pytorch/pytorch/issues/111469
    - https://github.com/pytorch/builder/pull/1150 (torch's wheels use `RPATH` instead of `RUNPATH` so that
      `LD_LIBRARY_PATH` cannot replace the PyPI libraries)
    - https://github.com/pytorch/pytorch/pull/131295 (torch preloading nvJitLink for cuSPARSE)
    """
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
            hits.append(
                Hit(
                    title=f"{dep.name} resolves to CUDA {found.version} ({dep.via}), torch is CUDA {torch.cuda}",  # type: ignore[union-attr]
                    explanation="bitsandbytes would run on a CUDA runtime of another major version than torch's: the load "
                    "or the first kernel fails.",
                    evidence=[
                        ev(dep.name, f"{dep.resolved} via {dep.via}", "native.dependencies"),
                        *_loader_evidence(facts),
                    ],
                    remediation=Remediation(
                        f"Make the CUDA {runtime[0]} runtime win: remove the other toolkit's folder "
                        f"from the search ({dep.via}).",
                        [],
                    ),
                )
            )
    return hits
