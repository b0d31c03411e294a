"""Markdown that fits a GitHub issue, and the same finding on many GPUs reported once.

Seen: a 4-GPU report was 74,326 characters with no "too large" note (only the JSON block was measured),
and GitHub takes at most 65,536. Now the whole body is measured and degrades in steps. A recorded 16-GPU
machine (``dgx2-v100x16-bnb0461-cu128``, a DGX-2) names its GPUs once: "GPUs 0–15", and
"16x Tesla V100-SXM3-32GB" (with a multiplication sign) in the header.
"""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from bnbdoctor.doctor import diagnose
from bnbdoctor.hosts.fixture import FixtureHost
from bnbdoctor.render.markdown import GITHUB_BODY_LIMIT, MAX_BODY, render_markdown
from bnbdoctor.render.text import render_text
from bnbdoctor.report import Report

DGX2 = "dgx2-v100x16-bnb0461-cu128"
TIMES = "\u00d7"
ALL_GPUS = "GPUs 0\u201315 (Tesla V100-SXM3-32GB, compute capability 7.0)"


@pytest.fixture(scope="module")
def dgx2() -> Report:
    return diagnose(FixtureHost.named(DGX2))


def with_gpus(report: Report, count: int) -> Report:
    """``report`` as if its machine had ``count`` copies of its first GPU."""
    many = copy.deepcopy(report)
    assert many.facts.gpu is not None
    first = many.facts.gpu.devices[0]
    many.facts.gpu.devices = [
        dataclasses.replace(first, index=i, pci_bus_id=f"00000000:{0x10 + i:02X}:00.0") for i in range(count)
    ]
    return many


def test_sixteen_gpus_are_one_finding_naming_them(dgx2: Report) -> None:
    assert [f.rule_id for f in dgx2.findings] == ["BNB120"]
    root = dgx2.findings[0]
    assert ALL_GPUS in root.title
    assert [(f.rule_id, ALL_GPUS in f.title) for f in root.follows] == [("BNB104", True), ("BNB105", True)]
    text = render_text(dgx2)
    assert f"GPU      16{TIMES} Tesla V100-SXM3-32GB (cc 7.0); driver 570.133.20" in text
    assert not re.search(r"GPU \d+ \(", text)  # no GPU is named on its own


def test_sixteen_gpu_markdown_fits_an_issue(dgx2: Report) -> None:
    body = render_markdown(dgx2)
    assert len(body) <= MAX_BODY < GITHUB_BODY_LIMIT
    assert f"16{TIMES} Tesla V100-SXM3-32GB, driver 570.133.20" in body
    verdict = body.split("\n")[2]
    assert verdict.startswith("**bitsandbytes will not work here:**") and ALL_GPUS in verdict
    assert f"| {ALL_GPUS} |" in body.replace("torch 2.7.1+cu128 has no kernels for ", "")  # the findings table
    assert "too large to paste here" in body  # its JSON (44 KiB) is left out, with the attach hint


def test_the_whole_body_is_measured_as_seen_on_four_gpus() -> None:
    """The report that was seen: about 74,000 characters on four GPUs, its JSON block alone under the old limit."""
    report = with_gpus(diagnose(FixtureHost.named("a100-healthy")), 4)
    body = render_markdown(report)
    assert len(body) <= MAX_BODY
    assert f"4{TIMES} NVIDIA A100-SXM4-80GB" in body
    shortened = "Facts shortened to fit an issue" in body
    assert shortened or "too large to paste here" in body
    if shortened:
        assert "| `devices[0\u20133].name` | `NVIDIA A100-SXM4-80GB` |" in body


def test_degrades_in_steps(dgx2: Report) -> None:
    full = render_markdown(diagnose(FixtureHost.named("cpu-laptop")))  # step 1: everything
    assert "```json" in full and "Facts shortened" not in full and len(full) <= MAX_BODY
    two = render_markdown(diagnose(FixtureHost.named("kepler-k80")))  # step 2: facts compacted, JSON kept
    assert "```json" in two and "Facts shortened" in two
    assert "| `devices[0,1].name` | `Tesla K80` |" in two
    assert len(two) <= MAX_BODY
    sixteen = render_markdown(dgx2)  # step 3: the JSON block becomes an attach hint, the facts whole again
    assert "```json" not in sixteen and "Facts shortened" not in sixteen
    huge = copy.deepcopy(dgx2)
    huge.facts.env["PATH"] = "/x" * 40_000
    cut = render_markdown(huge)  # step 4: facts compacted again, without JSON
    assert "```json" not in cut and "Facts shortened" in cut and "(80000 characters)" in cut
    assert len(cut) <= MAX_BODY


def test_a_body_that_never_fits_says_so(dgx2: Report) -> None:
    report = copy.deepcopy(dgx2)
    report.findings[0].explanation = "x " * 40_000
    body = render_markdown(report)
    assert body.startswith("_This report is ") and "more than a GitHub issue takes (65,536)" in body.split("\n")[0]
    assert "Facts:" not in body  # the last step leaves the facts out


def test_the_json_block_is_ascii_and_replays() -> None:
    from bnbdoctor.report_io import parse_report

    kepler = diagnose(FixtureHost.named("kepler-k80"))
    body = render_markdown(kepler)
    block = body.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert block.isascii()
    assert parse_report(body)["findings"][0]["title"] == kepler.findings[0].title
