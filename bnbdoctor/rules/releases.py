"""Rules about which bitsandbytes release is installed, and how: known-bad releases, a release
older than transformers accepts, and a package folder holding files of more than one install.

All three read the ``python`` facts the patient probe gathers from metadata and files (the shipped
regressions are the table in ``knowledge/bad_releases.py``; transformers' minimum is read from its
own source, ``knowledge/dependents.py``; the folder is compared with the RECORD of each
distribution that claims it). BNB216 reads a log's ``No module named 'bitsandbytes.…'``.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from bnbdoctor.facts import Facts, PackageRecord
from bnbdoctor.findings import Evidence, Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.bad_releases import DOWNSTREAM_PINS, REGRESSIONS, fixing_release, regressions_in
from bnbdoctor.knowledge.dependents import (
    TRANSFORMERS_BNB_CONSTANT,
    TRANSFORMERS_BNB_FILE,
    TRANSFORMERS_BNB_MINIMUM_PR,
    TRANSFORMERS_IMPORT_UTILS,
    TRANSFORMERS_WITH_BNB_MINIMUM,
)
from bnbdoctor.knowledge.versions import parse_version
from bnbdoctor.remedy.installable import blocked as install_obstacle
from bnbdoctor.remedy.target import target_of
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import bnb_of, ev, versioned

PIP_SHOW_FILES = "pip show -f bitsandbytes"
#: A community wheel that only worked over 0.35's leftover cuda_setup/paths.py, and such a traceback.
OVERLAY_REPORT = "https://github.com/jllllll/bitsandbytes-windows-webui/issues/22"
OVERLAY_TRACEBACK = "https://github.com/kohya-ss/sd-scripts/issues/1062"
RECORD_SPEC = "https://packaging.python.org/en/latest/specifications/recording-installed-packages/"
#: Unlisted files a finding names (the facts keep more).
SHOWN_FILES = 8
_MODULE_SUFFIXES = (".py", ".so", ".dll", ".dylib", ".pyd")


#: What to change first, by what stops every release from installing (remedy.installable.Blocked.change).
_CHANGE_FIRST = {"torch": "upgrade torch first", "python": "use a newer Python first"}


def _ceiling_below(facts: Facts, minimum: str) -> tuple[str, str] | None:
    """(why no release from ``minimum`` on installs here, keeping torch, on this Python, OS and glibc; what to
    change first), or None."""
    obstacle = install_obstacle(target_of(facts), SpecifierSet(f">={minimum}"))
    if obstacle is None:
        return None
    return obstacle.reason, _CHANGE_FIRST.get(obstacle.change, "run it on an OS where one installs")


# ------------------------------------------------------------------------------ known-bad releases
@rule(
    "BNB213",
    "known-bad-bnb-release",
    Severity.WARNING,
    "The installed bitsandbytes release has no known shipped regression",
    needs=("python",),
    covers=("known_bad_bnb_release",),
    references=(*dict.fromkeys(ref for row in REGRESSIONS for ref in row.references), DOWNSTREAM_PINS),
)
def known_bad_release(facts: Facts) -> Hit | None:
    """## What it detects

    The rule needs the `python` facts. It fires when the installed bitsandbytes version (from its metadata, or a
    version a log prints) lies in a row of bnbdoctor's table of shipped regressions
    (`bnbdoctor/knowledge/bad_releases.py`):

    - {{ bad_releases.PARAMS4BIT_REQUANTIZED.releases.first_text }}: `Params4bit.to()` drops `bnb_quantized`, so a
      4-bit model moved between devices is quantized again (`RuntimeError: Blockwise quantization only supports
      16/32-bit floats, but got torch.uint8`); issue #1664, fixed in {{
      bad_releases.PARAMS4BIT_REQUANTIZED.fixed_in }} (PR #1665).
    - {{ bad_releases.INT8_DEVICE_MOVE.releases.first_text }}: moving 8-bit parameters between devices is broken, so
      pre-quantized 8-bit checkpoints generate garbage without an error; issue #1775, fixed in {{
      bad_releases.INT8_DEVICE_MOVE.fixed_in }} (PR #1776).
    - {{ bad_releases.INT8_OFFLOAD.releases.first_text }} to {{ bad_releases.INT8_OFFLOAD.releases.last_text }}: int8
      CPU/disk offload through accelerate fails; fixed in {{ bad_releases.INT8_OFFLOAD.fixed_in }} (PR #1786).

    Comparison uses the release numbers only: a local or dev build of a listed release counts as that release. An
    unknown version does not fire.

    ## Why it matters

    These releases pass `python -m bitsandbytes` and load fine; the regression shows only in the workflow it breaks,
    often as wrong output rather than an error. Downstream projects exclude them from their requirements (unsloth
    requires `bitsandbytes!=0.46.0,!=0.48.0`), and a pinned or cached install can keep one around long after the fix.

    ## How to fix

    Install the fixing patch release or newer. The suggested command keeps the upper bound the installed torch needs
    (see [BNB206](BNB206.md)), so pip does not replace a CUDA build of torch:

    ```bash
    pip install -U "bitsandbytes>=0.48.2"
    python -m bitsandbytes
    ```
    """
    bnb = bnb_of(facts)
    if not (bnb and bnb.installed and bnb.version):
        return None
    rows = regressions_in(bnb.version)
    if not rows:
        return None
    fixed = fixing_release(rows)
    spec = fixed.pip_spec()  # bnbdoctor.remedy narrows it to the releases that install here, or says none does
    return Hit(
        title=f"{versioned(facts, 'bitsandbytes', bnb.version)} shipped a known regression "
        f"(fixed in {fixed.first_text})",
        explanation=f"bitsandbytes {bnb.version} is a release with "
        + ("a regression" if len(rows) == 1 else f"{len(rows)} regressions")
        + " fixed in a later patch release: "
        + "; ".join(f"{row.what} (fixed in {row.fixed_in}; {row.symptom})" for row in rows)
        + ". It loads and passes `python -m bitsandbytes`; the failure shows only in the workflow it breaks.",
        evidence=[ev("bitsandbytes", bnb.version, "python.bitsandbytes.version")]
        + [Evidence("regression", f"{row.what}: fixed in {row.fixed_in}", None) for row in rows]
        + log.line_evidence(facts, "quantize_packed_weights", limit=1),
        remediation=Remediation(
            f"Install bitsandbytes {fixed.first_text} or newer (the next patch release, or the newest release your "
            "torch supports).",
            [f'pip install -U "bitsandbytes{spec}"', "python -m bitsandbytes"],
        ),
        references=[ref for row in rows for ref in row.references],
    )


# ----------------------------------------------------------------- transformers' minimum bitsandbytes
@rule(
    "BNB214",
    "transformers-requires-newer-bnb",
    Severity.ERROR,
    "The installed bitsandbytes is at least the minimum the installed transformers accepts",
    needs=("python",),
    covers=("transformers_requires_newer_bnb",),
    references=(TRANSFORMERS_BNB_MINIMUM_PR, TRANSFORMERS_IMPORT_UTILS),
    confirm=("pip show transformers bitsandbytes",),
)
def transformers_requires_newer_bnb(facts: Facts) -> Hit | Skip | None:
    """## What it detects

    The rule needs the `python` facts. transformers {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} and
    later keep the oldest bitsandbytes they accept in one constant, `{{ dependents.TRANSFORMERS_BNB_CONSTANT }}` in `{{
    dependents.TRANSFORMERS_BNB_FILE }}`. bnbdoctor reads that constant from the installed transformers' own file (as
    text, parsed with `ast`, never imported), so it follows whatever value that transformers release ships. The rule
    fires when the installed bitsandbytes is older than it, compared the way transformers compares
    (`packaging.version`, so a `.dev` build of the minimum is older than the minimum).

    From a log, it fires on transformers' own message, which names the minimum: ``Using `bitsandbytes` 4-bit
    quantization requires bitsandbytes: `pip install -U bitsandbytes>=…` ``.

    When transformers is {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} or later but the constant cannot be
    read (the file is missing, unreadable, or no longer holds it), the rule is skipped and says so: bnbdoctor does not
    guess the number. Older transformers have no such constant and are not checked.

    ## Why it matters

    `is_bitsandbytes_available()` returns False for a bitsandbytes older than the minimum, exactly as if it were not
    installed. Loading with a `BitsAndBytesConfig` then fails with an `ImportError` telling you to install a package
    that `pip list` shows as installed. An old bitsandbytes is usually pinned on purpose (an old torch, an old glibc),
    so upgrading transformers to 5 breaks a setup that worked.

    ## How to fix

    Upgrade bitsandbytes to the minimum or newer (the command keeps the upper bound the installed torch needs); if the
    platform cannot run that release (a torch older than it supports, glibc below what its wheels need), keep
    transformers below {{ dependents.TRANSFORMERS_WITH_BNB_MINIMUM.first_text }} instead:

    ```bash
    pip install -U "bitsandbytes>=0.46.1"
    # or
    pip install "transformers<5.0"
    ```
    """
    python, bnb = facts.python, bnb_of(facts)
    assert python is not None
    minimum = python.transformers_bnb_minimum
    transformers = python.packages.get("transformers")
    if minimum is None:
        return (
            Skip("transformers' own minimum bitsandbytes was not read (an older recording)") if transformers else None
        )
    if minimum.minimum is None:
        if TRANSFORMERS_WITH_BNB_MINIMUM.contains(transformers):
            why = minimum.error or f"{minimum.file or TRANSFORMERS_BNB_FILE} holds no {TRANSFORMERS_BNB_CONSTANT}"
            return Skip(f"transformers {transformers}'s minimum bitsandbytes is unknown: {why}")
        return None
    from_log = minimum.file is None  # the minimum was read from a log, not the installed transformers
    installed = bnb.version if bnb and bnb.installed else None
    have, need = parse_version(installed), parse_version(minimum.minimum)
    if need is None:
        return Skip(f"transformers' minimum bitsandbytes {minimum.minimum!r} is not a version")
    if have is not None and have >= need:
        return None
    if have is None and not from_log:
        return None if not (bnb and bnb.installed) else Skip("bitsandbytes version unknown")
    named = f"transformers {transformers}" if transformers else "transformers"
    ceiling = _ceiling_below(facts, minimum.minimum)
    pin = f'pip install "transformers<{TRANSFORMERS_WITH_BNB_MINIMUM.first_text}"'
    commands = [f'pip install -U "bitsandbytes>={minimum.minimum}"']
    fix = f"Upgrade bitsandbytes to {minimum.minimum} or newer"
    if ceiling:
        why, first = ceiling
        fix = f"Keep transformers below {TRANSFORMERS_WITH_BNB_MINIMUM.first_text} ({why}), or {first}"
        commands = [pin]
    else:
        fix += f", or keep transformers below {TRANSFORMERS_WITH_BNB_MINIMUM.first_text}"
        commands.append(pin)
    source = f"{TRANSFORMERS_BNB_CONSTANT} in {minimum.file or TRANSFORMERS_BNB_FILE}"
    where = "its ImportError names" if from_log else source
    evidence = [
        ev("transformers", transformers, "python.packages.transformers"),
        ev("transformers needs bitsandbytes", f">={minimum.minimum} ({where})", "python.transformers_bnb_minimum"),
        ev("bitsandbytes", installed or ("not shown in the log" if from_log else None), "python.bitsandbytes.version"),
    ]
    return Hit(
        title=f"{named} needs bitsandbytes >= {minimum.minimum}, "
        + (f"found {installed}" if installed else "and refused the installed one"),
        explanation=f"transformers treats a bitsandbytes older than {minimum.minimum} ({where}) as not installed: "
        "is_bitsandbytes_available() returns False, so loading with a BitsAndBytesConfig raises an ImportError "
        "although bitsandbytes is installed"
        + ("" if installed else " (or bitsandbytes is missing, or its metadata is)")
        + ".",
        evidence=evidence + log.line_evidence(facts, "transformers_bnb_minimum", limit=1),
        remediation=Remediation(fix + ".", commands),
    )


# ------------------------------------------------------------------------------ overlaid installs
def _is_module(path: str) -> bool:
    return path.endswith(_MODULE_SUFFIXES)


def _claimants(record: PackageRecord) -> str:
    return ", ".join(f"{c.name} {c.version or '(version unknown)'}" for c in record.claims)


@rule(
    "BNB215",
    "mixed-bnb-installs",
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


@rule(
    "BNB216",
    "bnb-submodule-missing",
    Severity.ERROR,
    "The log shows no bitsandbytes submodule missing from an importable bitsandbytes",
    needs=("log",),
    covers=("mixed_bnb_distributions_stale_files",),
    stands_in_for=("BNB215",),
    references=(OVERLAY_REPORT, OVERLAY_TRACEBACK),
    confirm=(PIP_SHOW_FILES, "bnbdoctor --rule BNB215"),
)
def submodule_missing(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `ModuleNotFoundError: No module named 'bitsandbytes.<submodule>'`: the bitsandbytes package
    itself imports, but one of its modules imports a sibling that is not there (for example
    `bitsandbytes.cuda_setup.paths`, which only the releases with the legacy loader shipped).

    ## Why it matters

    A release never imports a module it does not ship, so the importing file and the folder come from different
    releases: files of an older install left in the package folder (a community wheel installed over PyPI's, an
    interrupted install, a manual copy), or modules of the previous release still in memory after `pip install -U`
    inside a running notebook. On the machine, [BNB215](BNB215.md) compares the folder with its `RECORD`.

    ## How to fix

    Restart the Python process first (a notebook kernel). If the error stays, uninstall every bitsandbytes
    distribution, delete the leftover folder and install one release:

    ```bash
    pip uninstall -y bitsandbytes   # repeat until pip says it is not installed
    pip install --no-cache-dir bitsandbytes
    ```
    """
    if not log.seen(facts, "bnb_submodule_missing"):
        return None
    notebook = log.seen(facts, "notebook")
    return Hit(
        title="A bitsandbytes module imports a sibling that is not installed: files of two releases meet",
        explanation="bitsandbytes itself imports, but one of its modules imports a submodule that is missing. A "
        "release never imports a module it does not ship, so the files come from two releases: leftovers of an older "
        "install in the package folder, or (in a notebook) modules of the previous release still in memory after an "
        "upgrade.",
        evidence=log.line_evidence(facts, "bnb_submodule_missing"),
        remediation=Remediation(
            ("Restart the kernel first. " if notebook else "Restart the process first. ")
            + "If the error stays, uninstall every bitsandbytes distribution until pip finds none, delete the leftover "
            "bitsandbytes folder in site-packages, and install one release.",
            ["pip uninstall -y bitsandbytes", "pip install --no-cache-dir bitsandbytes", PIP_SHOW_FILES],
        ),
    )
