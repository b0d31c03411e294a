"""BNB215 mixed-bnb-installs: passes when the bitsandbytes package folder holds the files of one installed distribution only."""

from __future__ import annotations

from bnbdoctor.facts import Facts, PackageRecord
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev
from bnbdoctor.rules.releases._shared import OVERLAY_REPORT, OVERLAY_TRACEBACK, PIP_SHOW_FILES

RECORD_SPEC = "https://packaging.python.org/en/latest/specifications/recording-installed-packages/"


#: Unlisted files a finding names (the facts keep more).
SHOWN_FILES = 8


_MODULE_SUFFIXES = (".py", ".so", ".dll", ".dylib", ".pyd")


# ------------------------------------------------------------------------------ overlaid installs
def _is_module(path: str) -> bool:
    return path.endswith(_MODULE_SUFFIXES)


def _claimants(record: PackageRecord) -> str:
    return ", ".join(f"{c.name} {c.version or '(version unknown)'}" for c in record.claims)


@rule(
    Severity.ERROR,
    "The bitsandbytes package folder holds the files of one installed distribution only",
    needs=("python",),
    covers=("mixed_bnb_distributions_stale_files",),
    references=(OVERLAY_REPORT, OVERLAY_TRACEBACK, RECORD_SPEC),
    confirm=(PIP_SHOW_FILES,),
    refutes=("one-install",),
)
def mixed_installs(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. The patient probe lists the bitsandbytes package folder (leaving out
    `__pycache__`) and the `*.dist-info` folders next to it, and reads the `RECORD` of every distribution that claims
    the folder: one named bitsandbytes (`bitsandbytes`, `bitsandbytes-windows`, ...) or one whose `top_level.txt`
    names it, and whose `RECORD` lists files inside it. The rule fires when

    - more than one distribution claims the folder (a fork's dist-info next to PyPI's, or two releases' dist-info
      folders left by an interrupted install), or
    - the folder holds files that no claimant's `RECORD` lists: leftovers of another install. Modules (`.py`) and
      native libraries make it an error, other files a warning.

    The comparison is bounded: the probe reads at most 2000 files of the folder (a wheel ships about a hundred) and
    says when it stopped. A folder no `RECORD` describes (an editable or source install) is not compared.

    ## Why it matters

    `pip install` over another distribution, a community wheel installed over PyPI's (or the reverse), an interrupted
    install or a manual copy leaves files of an older release in the folder. Python then imports modules from two
    releases, which fail with import errors that match neither: `No module named 'bitsandbytes.cuda_setup.paths'`,
    `cannot import name … from 'bitsandbytes…'`, or a stale native library picked up by name.

    ## How to fix

    Uninstall every distribution that claims the folder until pip finds none, delete what is left of the folder, then
    install one release:

    ```bash
    pip uninstall -y bitsandbytes      # repeat, and for the fork's name, until pip says it is not installed
    rm -rf /path/to/site-packages/bitsandbytes
    pip install bitsandbytes
    ```
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed):
        return None
    record = bnb.record
    if record is None:
        return Skip("the package folder was not compared with its RECORD (a log, or an older recording)")
    if record.skipped:
        return Skip(record.skipped)
    several = len(record.claims) > 1
    modules = [f for f in record.unlisted if _is_module(f)]
    if not several and not record.unlisted_count and not record.truncated:
        return None
    shown = record.unlisted[:SHOWN_FILES]
    more = record.unlisted_count - len(shown)
    listing = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    parts = []
    if several:
        parts.append(f"{len(record.claims)} distributions claim the folder ({_claimants(record)})")
    if record.unlisted_count:
        parts.append(
            f"{record.unlisted_count} of its {record.files} files {'is' if record.unlisted_count == 1 else 'are'} "
            "listed by no claimant's RECORD" + (f" ({len(modules)} of them modules or libraries)" if modules else "")
        )
    if record.truncated:
        parts.append(f"the folder holds more than the {record.files} files bnbdoctor reads (a wheel ships ~100)")
    names = list(dict.fromkeys(c.name for c in record.claims)) or ["bitsandbytes"]
    location = bnb.location or "site-packages/bitsandbytes"
    evidence = [ev("package folder", location, "python.bitsandbytes.location")]
    evidence += [
        Evidence("claimed by", f"{c.name} {c.version or ''} ({c.files} files)".replace("  ", " "), c.metadata_dir)
        for c in record.claims
    ]
    if shown:
        evidence.append(Evidence("not in RECORD", listing, "python.bitsandbytes.record.unlisted"))
    return Hit(
        title=f"The bitsandbytes folder mixes files of more than one install: {'; '.join(parts)}",
        explanation="Files of an earlier bitsandbytes (or of a fork installed under another name) stay in the package "
        "folder when another distribution is installed over it, so imports mix modules of two releases and fail with "
        "errors that match neither (No module named 'bitsandbytes.…', cannot import name …)."
        + (f" The RECORD compared is {record.compared_with}'s, the one written last." if several else ""),
        evidence=evidence,
        remediation=Remediation(
            f"Uninstall every claimant until pip finds none, delete what is left of {location}, then install one "
            "release.",
            [f"pip uninstall -y {' '.join(names)}", f"pip install --no-cache-dir bitsandbytes=={bnb.version}"]
            if bnb.version
            else [f"pip uninstall -y {' '.join(names)}", "pip install --no-cache-dir bitsandbytes"],
        ),
        severity=Severity.ERROR if several or modules or record.truncated else Severity.WARNING,
    )
