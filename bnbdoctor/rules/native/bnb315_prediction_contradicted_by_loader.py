"""BNB315 prediction-contradicted-by-loader: passes when the static prediction and the real loader agree."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import ev
from bnbdoctor.rules.native._shared import _library_name, _native, static_problem


@rule(
    Severity.WARNING,
    "The static prediction and the real loader agree",
    needs=("native", "load"),
)
def contradicted(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule reads the `native` and `load` facts and is skipped when the real load check did not run (`--no-load`, a
    recorded machine, no existing library selected). It fires in one situation: the static analysis predicted a failure,
    but the real dynamic loader loaded the library without complaint. A failure prediction means a missing dependency
    other than a Windows system DLL, a missing symbol version, or an unreadable file.

    The finding names the library that loaded. It does not withdraw the other findings. It tells you that on this
    machine they describe bnbdoctor's model, not reality.

    ## Why it matters

    bnbdoctor predicts the load from files on disk. It does not import torch or bitsandbytes, so the prediction is
    available even when the import crashes or takes minutes. The model covers the common cases ([the native
    chain](../native-chain.md) lists its simplifications), but the real loader knows more. Examples of what it can see
    and bnbdoctor cannot:

    - `glibc-hwcaps` subfolders of the search directories;
    - `DT_RPATH` inherited from the objects that load the library, for example the Python executable's own `RPATH`;
    - `LD_PRELOAD` and `/etc/ld.so.preload`;
    - a library torch loads under a SONAME that differs from its file name;
    - a loader cache bnbdoctor could not read.

    When the two disagree, the real loader is right about this process. The warning keeps a wrong error from sending
    someone to reinstall CUDA for nothing. It also marks a case where bnbdoctor's model should be improved.

    The opposite disagreement (the model finds nothing wrong, the loader fails) is [BNB314](BNB314.md).

    ## How to fix

    There is nothing to repair on the machine because of this finding. Treat the static findings about missing libraries
    and symbol versions as unconfirmed, and check them against the real loader:

    ```bash
    LD_DEBUG=libs python -c "import torch, bitsandbytes" 2>&1 | grep -E 'libbitsandbytes|libcudart|libstdc'
    bnbdoctor --json > bnbdoctor-report.json
    ```

    - If bitsandbytes works, ignore the contradicted findings on this machine.
    - Please open an issue with the JSON report attached, so that bnbdoctor's model of the loader can learn the case.
    - Under `--strict` this warning counts as an error; CI jobs that run bnbdoctor on such a machine can pass `--rule`
      to select the checks they rely on.

    ## Further reading

    - https://man7.org/linux/man-pages/man8/ld.so.8.html (search order, `LD_PRELOAD`, `/etc/ld.so.preload`)
    - https://docs.python.org/3/library/ctypes.html#loading-shared-libraries
    """
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
