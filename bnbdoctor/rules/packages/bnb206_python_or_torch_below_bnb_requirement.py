"""BNB206 python-or-torch-below-bnb-requirement: passes when python and torch satisfy the installed bitsandbytes' requirements."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Remediation, Severity, Skip
from bnbdoctor.knowledge.releases import known_requirements
from bnbdoctor.knowledge.versions import parse_version, release_tuple
from bnbdoctor.rules.base import rule
from bnbdoctor.rules.common import BNB_DOCS_INSTALL, bnb_of, ev, torch_of, versioned


@rule(
    Severity.ERROR,
    "Python and torch satisfy the installed bitsandbytes' requirements",
    needs=("python",),
    references=(BNB_DOCS_INSTALL,),
)
def requirements(facts: Facts) -> list[Hit] | Skip:
    """## What it detects

    The rule needs the `python` facts. It is skipped when bitsandbytes is not installed or its version is unknown. It
    reads two requirements from the installed bitsandbytes metadata: `Requires-Python`, and the `torch` entry of
    `Requires-Dist`. If the metadata carries neither, it falls back to a built-in table: {{ releases.KNOWN_REQUIREMENTS.0.series }}.x needs Python `{{ releases.KNOWN_REQUIREMENTS.0.python }}`
    and torch `{{ releases.KNOWN_REQUIREMENTS.0.torch }}`, {{ releases.KNOWN_REQUIREMENTS.1.series }} and later need Python `{{ releases.KNOWN_REQUIREMENTS.1.python }}` and torch `{{ releases.KNOWN_REQUIREMENTS.1.torch }}`.

    It then checks the examined interpreter's Python version and the installed torch version against them. Local build
    tags such as `+cu121` are ignored, and pre-releases count. It reports one error per requirement that is not met. A
    requirement it cannot parse, or a torch that is not installed (see [BNB201](BNB201.md)), is not checked.

    ## Why it matters

    What bitsandbytes requires, by release (from its package metadata):

    | bitsandbytes | Python | torch |
    |---|---|---|
    {{ published.requirements_table }}

    A normal `pip install` enforces these. A mismatch gets in through other routes: `--no-deps`,
    `--ignore-requires-python`, mixing conda and pip, copying site-packages between environments, or downgrading torch
    after installing bitsandbytes. Newer releases use torch APIs that older torch lacks ({{ releases.TORCH_LIBRARY_OPS.first_text }} moved to `torch.library`
    custom operators), so the failure shows up at import or at the first quantized operation. The error text does not
    mention the version.

    ## How to fix

    Either bring Python/torch up to the requirement, or install a bitsandbytes release that supports what you have:

    ```bash
    pip install "torch>={{ releases.CURRENT_TORCH_MINIMUM.torch }},<3" --index-url https://download.pytorch.org/whl/cu124
    # or keep torch {{ releases.TORCH_MINIMUM_BY_RELEASE.1.torch }} and use the last release that accepts it
    pip install "bitsandbytes<{{ releases.TORCH_MINIMUM_BY_RELEASE.2.series }}"
    ```

    For an old Python: {{ published.older_python_support }}. Check the result with `pip
    check` and `python -m bitsandbytes`.

    ## Further reading

    - https://huggingface.co/docs/bitsandbytes/v0.50.0/installation (Python >= 3.10, PyTorch >= {{ releases.TORCH_MINIMUM_BY_RELEASE.3.torch }})
    - https://huggingface.co/docs/bitsandbytes/v0.48.1/installation (Python >= 3.9, PyTorch >= {{ releases.TORCH_MINIMUM_BY_RELEASE.2.torch }})
    """
    python, bnb, torch = facts.python, bnb_of(facts), torch_of(facts)
    assert python is not None
    if not (bnb and bnb.installed and bnb.version):
        return Skip("bitsandbytes version unknown")
    requires_python, requires_torch = bnb.requires_python, bnb.requires_torch
    release = release_tuple(bnb.version)
    known = known_requirements(release) if requires_python is None and requires_torch is None and release else None
    if known is not None:
        requires_python, requires_torch = known.python, known.torch
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    hits = []
    for label, spec_text, installed, fact in (
        ("Python", requires_python, python.version, "python.version"),
        ("torch", requires_torch, torch.version if torch and torch.installed else None, "python.torch.version"),
    ):
        if not spec_text or not installed:
            continue
        try:
            spec = SpecifierSet(spec_text)
        except InvalidSpecifier:
            continue
        version = parse_version(installed)
        if version is None or spec.contains(version, prereleases=True):
            continue
        pre = version.is_prerelease or version.is_devrelease
        hits.append(
            Hit(
                title=f"{versioned(facts, 'bitsandbytes', bnb.version)} requires {label} {spec_text}, found {installed}",
                explanation=f"bitsandbytes' files can be installed while {label} does not meet its requirement "
                "(pip --ignore-requires-python or --no-deps, conda, or a later downgrade of torch); the release then "
                "fails at import or at the first operation in ways that do not name the version."
                + (
                    f" {installed} is a pre-release, which pip orders before {version.base_version} (a vendor build "
                    "such as NVIDIA's containers ship): the next `pip install` that resolves bitsandbytes' "
                    f"requirements replaces this {label} with PyPI's."
                    if pre
                    else ""
                ),
                evidence=[ev(label, installed, fact), ev("required", spec_text, "python.bitsandbytes")],
                remediation=Remediation(
                    f"Install a bitsandbytes release that supports {label} {installed}"
                    + (" (keep the vendor build)" if pre else f", or a {label} that satisfies {spec_text}")
                    + ".",
                    ['pip install "bitsandbytes"'] if label == "torch" else [],
                ),
            )
        )
    return hits
