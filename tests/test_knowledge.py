"""Release knowledge is data: the boundaries live in bnbdoctor/knowledge/, and rule modules hold none.

Three parts: a scan of bnbdoctor/rules/*.py for version literals (each must come from a named,
sourced entry of bnbdoctor/knowledge/), the range helpers at their edges, and the table that
declares BNB207/BNB208.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from bnbdoctor.facts import BnbFacts, Facts, PlatformFacts, PythonFacts, TorchFacts
from bnbdoctor.findings import Hit
from bnbdoctor.fit.engine_parts import replica
from bnbdoctor.knowledge import selection
from bnbdoctor.knowledge.cuda import torch_index_for
from bnbdoctor.knowledge.gpus import pre_pascal_family
from bnbdoctor.knowledge.imports import SCIPY_IMPORT, TRITON_OPS_IMPORT
from bnbdoctor.knowledge.loader import (
    CPU_FALLBACK_ERA,
    CUDA_OVERRIDE_READ,
    EXACT_MATCH_ERA,
    GLIBC_234_BUILDS,
    LEGACY_CUDA_SETUP,
    NEAREST_BUILD,
)
from bnbdoctor.knowledge.platforms import CURRENT_MANYLINUX, ManylinuxTag
from bnbdoctor.knowledge.ranges import VersionRange, dotted, full, minor
from bnbdoctor.knowledge.releases import known_requirements, legacy_cuda_setup
from bnbdoctor.knowledge.transformers import FIT_ENGINE_TRANSFORMERS
from bnbdoctor.knowledge.versions import at_least
from bnbdoctor.rules import all_rules, get_rule

ROOT = Path(__file__).resolve().parents[1]
RULE_MODULES = sorted((ROOT / "bnbdoctor" / "rules").rglob("*.py"))
KNOWLEDGE_MODULES = ("cuda", "gpus", "imports", "loader", "platforms", "releases", "transformers")

# --------------------------------------------------------------------------- the scan
#: A dotted number, the shape of a version: 0.45, 0.45.1, 3.2, 12.4.
VERSION = re.compile(r"\d+\.\d+")
#: Dotted numbers that are not versions, removed from a string before VERSION looks at it. Keep
#: this short: anything else that looks like a version belongs in bnbdoctor/knowledge/.
NOT_VERSIONS = (
    re.compile(r"\d+(?:\.\d+)+ byte"),  # a size per weight: "0.5 byte" (fit sizing, not a release)
    re.compile(r"x\d+\.\d+|\d+\.\d+ x "),  # a factor: "x0.9", "1.25 x the largest block"
    re.compile(r"\b0\.0\d+"),  # a fraction with a leading zero ("0.0625", "0.016"): versions never have one
    re.compile(r"\.so(?:\.\d+)+"),  # a shared-library file name: "libcudart.so.11.0"
)


def _docstrings(tree: ast.AST) -> set[int]:
    """Docstrings are neither checked nor printed: they may cite releases."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def _int_tuple(node: ast.Tuple) -> bool:
    return len(node.elts) >= 2 and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)


def version_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every version-like literal in a module: int tuples of two or more numbers
    and strings (f-string parts included) with a dotted number.

    ``(0, 0)`` is allowed: ``major_minor(x) or (0, 0)`` is the "unknown" sentinel that sorts below
    every version, not a boundary."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and _int_tuple(node):
            if any(e.value for e in node.elts):  # type: ignore[attr-defined]
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            for pattern in NOT_VERSIONS:
                text = pattern.sub(" ", text)
            if VERSION.search(text):
                found.append((node.lineno, node.value))
    return sorted(found)


@pytest.mark.parametrize("path", RULE_MODULES, ids=lambda p: str(p.relative_to(ROOT / "bnbdoctor" / "rules")))
def test_rule_modules_hold_no_version_literals(path: Path) -> None:
    found = version_literals(path.read_text(encoding="utf-8"))
    listing = "\n".join(f"  {path.name}:{line}: {text[:100]!r}" for line, text in found)
    assert not found, (
        "version literals in a rule module; name the boundary in bnbdoctor/knowledge/ (with its "
        f"source) and build the check and the text from it:\n{listing}"
    )


def test_the_scan_finds_versions_and_only_versions() -> None:
    source = '''
def check(facts):
    """Docstrings may cite 0.45.1."""
    if release < (0, 45, 1) or cc < (7, 5):
        pass
    upgrade = f"upgrade to 0.45.1 or newer, {name}"
    pin = "pin triton below 3.2"
    quantities = ("0.5 byte", "x0.9", "1.25 x the largest block", "0.0625 byte per weight, 0.016 with double quant")
    names = ("libcudart.so.11.0", "libgomp.so.1", "sm_90", "cuda126", (0, 0), (9,))
    built = f"{RANGE.first_text}+ and compute capability {CAP.text}"
'''
    assert [text for _, text in version_literals(source)] == [
        "(0, 45, 1)",
        "(7, 5)",
        "upgrade to 0.45.1 or newer, ",
        "pin triton below 3.2",
    ]


# --------------------------------------------------------------------------- the helpers
def test_a_range_is_half_open() -> None:
    assert TRITON_OPS_IMPORT.contains("0.45.0")
    assert not TRITON_OPS_IMPORT.contains("0.45.1")
    assert TRITON_OPS_IMPORT.contains("0.39.0") and not TRITON_OPS_IMPORT.contains("0.38.1")
    assert TRITON_OPS_IMPORT.contains((0, 45, 0)) and not TRITON_OPS_IMPORT.contains((0, 45, 1))


def test_only_release_numbers_count_as_the_existing_helpers_do() -> None:
    # a dev build, post release or local build counts as its release (versions.release_tuple)
    assert not TRITON_OPS_IMPORT.contains("0.45.1.dev0")
    assert TRITON_OPS_IMPORT.contains("0.45.0.post1") and TRITON_OPS_IMPORT.contains("0.45.0+cu124")
    torch_22 = VersionRange("2.2", None, "test")
    assert torch_22.contains("2.2.0a0+81ea7a4") and at_least("2.2.0a0+81ea7a4", "2.2")
    assert not VersionRange(None, "2.2", "test").contains("2.2.0a0+81ea7a4")


def test_unknown_versions_are_in_no_range() -> None:
    for unknown in (None, "", "garbage"):
        assert not TRITON_OPS_IMPORT.contains(unknown)
        assert not NEAREST_BUILD.contains(unknown)
        assert not VersionRange(None, "9", "test").contains(unknown)


def test_a_boundary_compares_at_the_precision_it_is_written() -> None:
    # tuples: (0, 45) < (0, 45, 0), so the bare version "0.45" starts a "0.45" range but precedes "0.45.0"
    assert VersionRange("0.45", None, "test").contains("0.45")
    assert not VersionRange("0.45.0", None, "test").contains("0.45")
    series = VersionRange("0.45", "0.46", "test")
    assert series.contains("0.45.5") and not series.contains("0.46.0") and not series.contains("0.44.9")


def test_texts_and_specs_come_from_the_range() -> None:
    assert TRITON_OPS_IMPORT.pip_spec() == ">=0.39.0,<0.45.1"
    assert TRITON_OPS_IMPORT.after().pip_spec() == ">=0.45.1"
    assert LEGACY_CUDA_SETUP.pip_spec() == "<0.43.1"
    assert (TRITON_OPS_IMPORT.first_text, TRITON_OPS_IMPORT.below_text, TRITON_OPS_IMPORT.last_text) == (
        "0.39.0",
        "0.45.1",
        "0.45.0",
    )
    assert (SCIPY_IMPORT.first_text, SCIPY_IMPORT.last_text) == ("0.39.0", "0.41.x")
    assert (minor("0.45.1"), minor("0.50"), full("0.50"), full("5.18.0"), dotted((5, 12))) == (
        "0.45",
        "0.50",
        "0.50.0",
        "5.18.0",
        "5.12",
    )
    with pytest.raises(ValueError, match="no lower bound"):
        _ = LEGACY_CUDA_SETUP.first_text
    with pytest.raises(ValueError, match="no upper bound"):
        _ = NEAREST_BUILD.below_text


def test_a_range_needs_real_versions_and_a_source() -> None:
    with pytest.raises(ValueError, match=r"not a version: '0\.45\.x'"):
        VersionRange("0.45.x", None, "test")
    with pytest.raises(ValueError, match="needs its source"):
        VersionRange("0.45", None, "")


def test_every_named_range_says_where_it_comes_from() -> None:
    ranges = []
    for name in KNOWLEDGE_MODULES:
        module = importlib.import_module(f"bnbdoctor.knowledge.{name}")
        for value in vars(module).values():
            for candidate in (value, getattr(value, "releases", None)):
                if isinstance(candidate, VersionRange):
                    ranges.append(candidate)
    assert len(ranges) >= 20
    assert all(r.source.strip() for r in ranges)


# --------------------------------------------------------------------------- one fact, one place
def test_the_loader_eras_agree_with_the_library_selection_model() -> None:
    assert LEGACY_CUDA_SETUP.below_release == selection.CPU_FALLBACK
    assert selection.EXACT[:2] == CPU_FALLBACK_ERA.below_release
    assert selection.NEAREST[:2] == NEAREST_BUILD.first_release
    assert selection.EXACT[:2] == EXACT_MATCH_ERA.first_release and EXACT_MATCH_ERA.below == NEAREST_BUILD.first
    assert CUDA_OVERRIDE_READ.contains("0.40.1.post1") and not CUDA_OVERRIDE_READ.contains("0.40.1")
    assert legacy_cuda_setup("0.43.0") and not legacy_cuda_setup("0.43.1") and not legacy_cuda_setup(None)


def test_the_fit_engine_range_matches_the_script_it_describes() -> None:
    # the engine runs inside the patient interpreter and cannot import bnbdoctor.knowledge
    assert FIT_ENGINE_TRANSFORMERS.first_release == replica.SUPPORTED_MIN
    assert FIT_ENGINE_TRANSFORMERS.below_release == replica.SUPPORTED_BELOW


def test_manylinux_tags_give_their_glibc_floor() -> None:
    assert CURRENT_MANYLINUX.tag == "manylinux_2_24" and CURRENT_MANYLINUX.glibc == (2, 24)
    assert CURRENT_MANYLINUX.glibc_text == "2.24" and CURRENT_MANYLINUX.first == "0.43.0"
    assert ManylinuxTag("manylinux_2_28", "9.9.9", "test").glibc == (2, 28)
    with pytest.raises(ValueError, match="not a PEP 600 manylinux tag: manylinux2014"):
        _ = ManylinuxTag("manylinux2014", "9.9.9", "test").glibc


def test_release_tables() -> None:
    assert known_requirements((0, 48, 2)) is None
    assert known_requirements((0, 49, 0)).torch == ">=2.3,<3"  # type: ignore[union-attr]
    assert known_requirements((0, 50, 1)).torch == ">=2.4,<3"  # type: ignore[union-attr]
    assert GLIBC_234_BUILDS.affects("libbitsandbytes_cuda126.so")
    assert GLIBC_234_BUILDS.affects("libbitsandbytes_cuda128.so")
    assert not GLIBC_234_BUILDS.affects("libbitsandbytes_cuda124.so")
    assert [pre_pascal_family(cc) for cc in ((3, 7), (5, 2), (2, 1))] == ["Kepler", "Maxwell", "pre-Pascal"]
    assert torch_index_for((12, 2)) == "https://download.pytorch.org/whl/cu121"
    assert torch_index_for((13, 1)) == "https://download.pytorch.org/whl/cu130"
    assert torch_index_for((11, 4)) is None and torch_index_for(None) is None


# --------------------------------------------------------------------------- BNB207/BNB208: one table
def _facts(bnb: str | None, packages: dict[str, str | None]) -> Facts:
    return Facts(
        platform=PlatformFacts(os="linux", arch="x86_64"),
        python=PythonFacts(
            executable="/venv/bin/python",
            selected_by="VIRTUAL_ENV",
            version="3.11.9",
            torch=TorchFacts(installed=True, version="2.6.0+cu124", cuda="12.4"),
            bitsandbytes=BnbFacts(installed=bnb is not None, version=bnb),
            packages=packages,
        ),
    )


def test_the_import_breakage_rules_share_one_check() -> None:
    """BNB207 and BNB208 are two rows of one check (``ImportBreakage``), each declared in its own rule file."""
    from bnbdoctor.rules.packages import bnb207_triton_ops_removed, bnb208_scipy_missing_for_old_bnb
    from bnbdoctor.rules.packages._shared import ImportBreakage

    for module, rule_id in ((bnb207_triton_ops_removed, "BNB207"), (bnb208_scipy_missing_for_old_bnb, "BNB208")):
        rule = get_rule(rule_id)
        assert rule is not None and rule in all_rules() and rule.module == module.__name__
        assert isinstance(module.BREAKAGE, ImportBreakage)
        assert rule.needs == ("python",)


@pytest.mark.parametrize(
    ("bnb", "packages", "removed_by"),
    [
        ("0.45.0", {"triton": "3.2.0"}, "3.2.0"),
        ("0.39.0", {"triton": "3.3.1"}, "3.3.1"),
        ("0.45.0", {"triton": None, "pytorch-triton-rocm": "3.2.0+rocm6.2"}, "3.2.0+rocm6.2"),
        ("0.45.1", {"triton": "3.2.0"}, None),
        ("0.45.1.dev0", {"triton": "3.2.0"}, None),
        ("0.38.1", {"triton": "3.2.0"}, None),
        ("0.45.0", {"triton": "3.1.0"}, None),
        ("0.45.0", {}, None),
        (None, {"triton": "3.2.0"}, None),
    ],
)
def test_triton_ops_row(bnb: str | None, packages: dict[str, str | None], removed_by: str | None) -> None:
    hit = get_rule("BNB207").check(_facts(bnb, {"scipy": "1.13.0", **packages}))  # type: ignore[union-attr]
    if removed_by is None:
        assert hit is None
    else:
        assert isinstance(hit, Hit)
        assert hit.title == f"bitsandbytes {bnb} imports triton.ops, which triton {removed_by} removed"
        assert hit.remediation.commands == ['pip install -U "bitsandbytes>=0.45.1"']


@pytest.mark.parametrize(
    ("bnb", "scipy", "fires"),
    [
        ("0.41.3", None, True),
        ("0.39.0", None, True),
        ("0.42.0", None, False),
        ("0.38.1", None, False),
        ("0.41.3", "1.11.0", False),
    ],
)
def test_scipy_row(bnb: str, scipy: str | None, fires: bool) -> None:
    hit = get_rule("BNB208").check(_facts(bnb, {"scipy": scipy}))  # type: ignore[union-attr]
    assert isinstance(hit, Hit) is fires
    if isinstance(hit, Hit):
        assert hit.title == f"bitsandbytes {bnb} needs scipy, which is not installed"
