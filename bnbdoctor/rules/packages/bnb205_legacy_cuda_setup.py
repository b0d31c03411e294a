"""BNB205 legacy-cuda-setup: passes when bitsandbytes is newer than the legacy CUDA setup."""

from __future__ import annotations

from bnbdoctor.derive import conda_env
from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.cuda import OLDEST_CUDA_MAJOR
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP, import_crash
from bnbdoctor.knowledge.releases import legacy_cuda_setup
from bnbdoctor.knowledge.versions import major_minor
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import (
    BNB_DOCS_INSTALL,
    bnb_of,
    ev,
    predicted_selection,
    torch_of,
    versioned,
    wheel_upgrade_blocked,
)
from bnbdoctor.rules.log_evidence import seen


def _legacy_families(facts: Facts) -> list[str]:
    """The legacy-setup families this machine or log shows, or that the setup itself causes here."""
    # The scan's own messages: every CUDA machine running the legacy setup gets them, because pip's
    # torch keeps libcudart inside site-packages (never searched) and path-like variables hold
    # pieces that do not exist.
    ids = ["libcudart_not_found_legacy_cuda_setup", "nonexistent_path_warnings_noise"]
    toolkits = facts.cuda_toolkit.toolkits if facts.cuda_toolkit else []
    runtimes = [t for t in toolkits if t.has_cudart]
    torch = torch_of(facts)
    # "CUDA Setup failed" wraps a failed load: claimed when a load failure is predicted or shown.
    selection = predicted_selection(facts)
    failing = selection is not None and selection.outcome != "loads" and import_crash(selection.message) is None
    if seen(facts, S.CUDA_SETUP_FAILED) or failing:
        ids.append("cuda_setup_failed_despite_gpu_available")
    # Several runtimes on the searched paths make the scan "flip a coin".
    if seen(facts, S.DUPLICATE_CUDA_RUNTIMES) or len(runtimes) > 1:
        ids.append("duplicate_cuda_runtimes_found")
    # A conda interpreter with a runtime from outside the environment: the scan may pick that one.
    conda = conda_env(facts)
    if seen(facts, S.CUDA_RUNTIME_SYMBOL_MISSING) or (conda and any(t.source != "CONDA_PREFIX" for t in runtimes)):
        ids.append("conda_env_vs_system_cuda_mixup")
    # A CUDA 10 runtime (torch's or one the scan can find) is refused for LLM.int8().
    old = [major_minor(v) for v in [torch.cuda if torch else None, *(t.version for t in runtimes)]]
    if seen(facts, S.CUDA_OLDER_THAN_11) or any(v is not None and v[0] < OLDEST_CUDA_MAJOR for v in old):
        ids.append("cuda_lt_11_unsupported")
    return ids


@rule(
    Severity.WARNING,
    f"bitsandbytes is newer than the legacy CUDA setup ({LEGACY_CUDA_SETUP.below_text}+)",
    needs=("python",),
    covers=(
        "libcudart_not_found_legacy_cuda_setup",
        "nonexistent_path_warnings_noise",
        "duplicate_cuda_runtimes_found",
        "conda_env_vs_system_cuda_mixup",
        "cuda_setup_failed_despite_gpu_available",
        "cuda_lt_11_unsupported",
    ),
    references=("https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1041", BNB_DOCS_INSTALL),
    requires=("one-install",),  # a stale cuda_setup/ left by an older install is BNB215's
)
def legacy_setup(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. It fires when bitsandbytes is installed and either its package contains the
    `bitsandbytes/cuda_setup/` folder, or its version is older than {{ loader.LEGACY_CUDA_SETUP.below_text }}. Either one means the release uses the legacy
    `CUDASetup` loader. The finding is a warning: the legacy loader works on many machines, but it is behind a whole
    family of confusing failures.

    The finding names only the catalog families this machine (or log) can have. The scan's own messages
    (`libcudart.so not found`, non-existent directories) come from the legacy setup itself wherever it runs, so they
    are always named. The others are named when the facts show them: `CUDA Setup failed despite GPU being available`
    when the library is predicted not to load (or the log shows it); duplicate runtimes when more than one CUDA runtime
    is on disk; the conda/system mix-up when a conda interpreter sees a runtime from outside its environment; "CUDA
    lower than 11" when torch's or a found runtime's CUDA is older than 11.

    ## Why it matters

    Up to {{ loader.LEGACY_CUDA_SETUP.last_text }}, importing bitsandbytes runs `cuda_setup/main.py`. It searches for a CUDA runtime (`libcudart.so*`) in
    `$CONDA_PREFIX/lib`, then `LD_LIBRARY_PATH`, then every other environment variable whose value contains `/`, then
    `/usr/local/cuda/lib64`. Before {{ loader.CUDA_VERSION_FROM_TORCH.first_text }} the runtime it found decided which library was loaded. From {{ loader.CUDA_VERSION_FROM_TORCH.first_text }} the version
    comes from `torch.version.cuda`, and the search only feeds messages. Its output is what most old bug reports are
    made of:

    - `CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...`.
      pip-installed torch keeps its runtime inside site-packages, where the search never looks.
    - `The following directories listed in your path were found to be non-existent: {...}`. This is noise caused by URLs
      and other path-like variables, not the failure.
    - `Found duplicate ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] files: {...}.. We'll flip a coin and
      try one of these, in order to fail forward.`. Often these are one library reached through symlinks.
    - A CUDA 10 runtime found on the system path: `CUDA SETUP: CUDA version lower than 11 are currently not supported
      for LLM.int8()`, then `Defaulting to libbitsandbytes_cpu.so...`.
    - Whenever the expected library is missing while CUDA works, the import fails with `CUDA Setup failed despite GPU
      being available. Please run the following command to get more information: python -m bitsandbytes`. This is a
      wrapper; the real cause is earlier in the log.

    {{ loader.LEGACY_CUDA_SETUP.below_text }} (PR #1041) removed this setup from the import path. The libcudart search only survives in `python -m
    bitsandbytes`, and the library is chosen from torch's CUDA version alone.

    ## How to fix

    Upgrade; then restart the Python process or notebook kernel:

    ```bash
    pip install -U bitsandbytes
    python -m bitsandbytes
    ```

    If you must stay on a legacy release:

    - Put the directory holding the `libcudart.so` that matches `torch.version.cuda` first in `LD_LIBRARY_PATH` (`find /
      -name 'libcudart.so*' 2>/dev/null`), and drop CUDA 10 and other CUDA versions from it.
    - In conda environments, keep torch and bitsandbytes from the same ecosystem (pip torch with PyPI bitsandbytes), or
      install a matching `cudatoolkit`.
    - Use a CUDA 11 or newer torch build.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/errors
    """
    bnb, torch = bnb_of(facts), torch_of(facts)
    if not (bnb and bnb.installed) or not (bnb.legacy_cuda_setup or legacy_cuda_setup(bnb.version)):
        return None
    if facts.platform and facts.platform.os == "macos":
        return Skip("the legacy CUDA setup only matters where CUDA does")
    if torch is not None and torch.installed and torch.build != "cuda":
        return Skip("torch is not a CUDA build")
    spec = f">={LEGACY_CUDA_SETUP.below_text}"
    blocked = wheel_upgrade_blocked(facts)
    if blocked:
        fix = Remediation(f"Upgrading is the fix, but {blocked}.", [])
    else:
        fix = Remediation(
            "Upgrade bitsandbytes; the current loader follows torch and needs no LD_LIBRARY_PATH tweaks.",
            [f'pip install -U "bitsandbytes{spec}"'],
        )
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} uses the legacy CUDA setup",
        explanation=f"Releases up to {LEGACY_CUDA_SETUP.last_text} take the CUDA version from torch but also scan "
        "every path-like "
        "environment variable for libcudart: the scan prints misleading warnings (non-existent directories, "
        "'duplicate' runtimes, 'libcudart.so not found'), its advice points at the wrong CUDA, and any load "
        f"problem surfaces as 'CUDA Setup failed despite GPU being available'. {LEGACY_CUDA_SETUP.below_text} "
        "rewrote the setup to follow torch only (PR #1041).",
        evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")],
        remediation=fix,
        covers=_legacy_families(facts),
    )
