"""A rule's prose names release boundaries through ``{{ knowledge }}`` placeholders, never by hand
(bnbdoctor.ruledocs.versions.bare_versions), so a page cannot go stale when knowledge changes."""

from __future__ import annotations

import inspect

import pytest

from bnbdoctor.knowledge.releases import TORCH_MINIMUM_BY_RELEASE
from bnbdoctor.ruledocs.pages import expand
from bnbdoctor.ruledocs.versions import HISTORICAL, bare_versions, bare_versions_in
from bnbdoctor.rules import all_rules, get_rule
from bnbdoctor.rules.base import Rule

RULES = all_rules()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_prose_writes_no_release_number_by_hand(rule: Rule) -> None:
    found = bare_versions(rule)
    assert not found, (
        f"{rule.id}: release numbers written by hand in its prose; write the knowledge constant the check "
        "reads as a placeholder ({{ loader.NEAREST_BUILD.first_text }}), adding one to bnbdoctor/knowledge/ "
        "(with its source) where none exists:\n  " + "\n  ".join(found)
    )


def _tokens(text: str) -> list[str]:
    return [entry.split("'")[1] for entry in bare_versions_in(text)]


def test_a_boundary_written_by_hand_is_caught() -> None:
    assert _tokens("It fires on bitsandbytes 0.45.0+ only.") == ["0.45.0+"]
    assert _tokens("| 0.43.1 – 0.45.x | falls back |") == ["0.43.1", "0.45.x"]
    assert _tokens("releases 0.39-0.45.0 and transformers 4.3x-4.4x, 5.12 to 5.x") == [
        "0.39",
        "0.45.0",
        "4.3x",
        "4.4x",
        "5.12",
        "5.x",
    ]
    assert _tokens('```bash\npip install -U "bitsandbytes>=0.43.1"\n```') == ["0.43.1"]
    assert _tokens("torch 2.6 removed it; 0.50 requires PyTorch 2.4 or newer.") == ["2.6", "0.50", "2.4"]


def test_numbers_that_are_not_release_boundaries_pass() -> None:
    allowed = (
        "Needs CUDA 12.1, or CUDA 12.6 or 12.8 builds, torch cu121, sm_75 and cc 6.0.",
        "A GPU with compute capability 7.5 (Turing) or newer; Maxwell (5.0/5.2) and Pascal (6.x).",
        "The quote `Highest compute capability among GPUs detected: 6.1` and driver 11.4.",
        "`GLIBCXX_3.4.21`, `CXXABI_1.3.9`, `libcudart.so.11.0`, `/usr/local/cuda-11.8`, glibc 2.34, Python `>=3.10`.",
        "Ubuntu 20.04 with GCC 4.8 and ROCm 7.10+; see https://huggingface.co/docs/bitsandbytes/v0.48.1/installation.",
        'torch 2.8.0+cu128 is installed: `pip install "torch==2.5.1" --index-url ...`.',
        "0.5 byte per weight, 428.5 GiB, 1.25 x the largest block, 0.0625 and 0.016.",
        "The 0.50.2 wheel and 0.46.1's `cuda126` library (recorded wheels).",
        "Fixed in {{ loader.NEAREST_BUILD.first_text }}+, issue #1312 and PR #1889.",
    )
    for text in allowed:
        assert bare_versions_in(text) == [], text


def test_a_recorded_wheel_in_a_comparison_is_a_boundary() -> None:
    assert _tokens('pip install -U "bitsandbytes>=0.50.2"') == ["0.50.2"]
    assert _tokens("from 0.46.1+ on") == ["0.46.1+"]


def test_a_qualifier_reaches_only_its_own_range() -> None:
    # "ROCm" qualifies "7.10", not a release after it; a parenthesis must close on the numbers
    assert _tokens("ships ROCm libraries for the installed ROCm (0.49+ wheels carry them)") == ["0.49+"]
    assert _tokens("glibc 2.34 cannot load on a system with 2.31") == ["2.31"]
    assert _tokens("a line ending in CUDA 12.1\n- 0.46+: the next item") == ["0.46+"]


def test_historical_numbers_are_few_and_still_in_their_prose() -> None:
    assert sum(len(tokens) for tokens in HISTORICAL.values()) <= 8
    for rule_id, tokens in HISTORICAL.items():
        rule = get_rule(rule_id)
        assert rule is not None, f"HISTORICAL names {rule_id}, which is no rule"
        doc = inspect.getdoc(rule.check) or ""
        for token in tokens:
            assert token in doc, f"{rule_id}: {token!r} is allowed as history but its prose no longer has it"
        assert bare_versions_in(doc, frozenset()) != [], f"{rule_id}: needs no HISTORICAL entry any more"


def test_a_placeholder_indexes_tables_and_calls_functions() -> None:
    assert expand("{{ releases.TORCH_MINIMUM_BY_RELEASE.0.first }}") == "0.45.0"
    assert expand("{{ releases.CURRENT_TORCH_MINIMUM.series }}") == TORCH_MINIMUM_BY_RELEASE[-1].series
    assert expand("{{ published.requirements_table }}").startswith("| ")
