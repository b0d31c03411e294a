"""Recognition found missing on the development corpus (issue 24): each case is a real thread's pasted text.

The text is the record's ``pasted`` field in tests/data/corpus/threads.jsonl, read by the thread's URL, so
the lines are exactly the ones the user pasted (cut lines, framing, markdown and all). Each case names the
mechanism it exercises; the patterns match the messages' structure, never a record's own words, and the
near misses beside them must stay unmatched.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from bnbdoctor.explain import explain_text
from bnbdoctor.report import Report

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "threads.jsonl"
GH = "https://github.com/"


@cache
def _pasted() -> dict[str, str]:
    records = (json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["url"]: r["pasted"] for r in records}


def pasted(thread: str) -> str:
    return _pasted()[GH + thread]


def top(report: Report) -> tuple[str, list[str]]:
    first = min(report.findings, key=lambda f: f.rank if f.rank is not None else 1_000)
    return first.rule_id, list(first.covers)


def said(report: Report) -> str:
    """The report's words (as bench/corpus_accuracy.py reads them): titles, explanations, evidence, the exception."""
    parts = [p for f in report.findings for p in (f.title, f.explanation, *(e.value for e in f.evidence))]
    if report.facts.log is not None and report.facts.log.exception:
        parts.append(report.facts.log.exception)
    return " ".join(" ".join(parts).split())


# ------------------------------------------------------------------------------- the top finding
@pytest.mark.parametrize(
    ("thread", "rule_id", "entry"),
    [
        # transformers before 4.38 words its gate "Using `load_in_8bit=True` requires Accelerate: ...", also cut
        ("nicknochnack/Llama2RAG/issues/1", "BNB521", "transformers_importerror_requires_accelerate_bnb"),
        ("zjunlp/DeepKE/issues/628", "BNB521", "transformers_importerror_requires_accelerate_bnb"),
        ("Bavest/fin-llama/issues/1", "BNB521", "transformers_importerror_requires_accelerate_bnb"),
        ("eosphoros-ai/DB-GPT-Hub/issues/106", "BNB521", "transformers_importerror_requires_accelerate_bnb"),
        ("huggingface/transformers/issues/26165", "BNB521", "transformers_importerror_requires_accelerate_bnb"),
        # accelerate's older "... loaded in 8-bit precision on multiple devices"
        ("huggingface/peft/issues/414", "BNB537", "accelerate_kbit_model_on_other_device"),
        ("huggingface/accelerate/issues/1515", "BNB537", "accelerate_kbit_model_on_other_device"),
        # the loader's "(required by .../site-packages/bitsandbytes/libbitsandb" cut mid-name: still bitsandbytes'
        ("bitsandbytes-foundation/bitsandbytes/issues/1139", "BNB306", "cxxabi_not_found"),
        # the legacy loader's "Unknown CUDA exception! Please check your CUDA install" (cuInit failed): no GPU seen
        ("bitsandbytes-foundation/bitsandbytes/issues/418", "BNB503", "no_gpu_detected_cpu_fallback"),
    ],
)
def test_the_top_finding_names_the_threads_family(thread: str, rule_id: str, entry: str) -> None:
    report = explain_text(pasted(thread))
    got, covers = top(report)
    assert (got, entry in covers) == (rule_id, True), [(f.rule_id, f.covers, f.title) for f in report.findings]


@pytest.mark.parametrize(
    "line",
    [
        # the device_map gate has its own cause (accelerate missing), not the bitsandbytes check
        "ImportError: Using `low_cpu_mem_usage=True` or a `device_map` requires Accelerate: `pip install accelerate`",
        "ValueError: You can't train a model that has been loaded in 8-bit precision.",
    ],
)
def test_near_misses_of_the_older_wordings(line: str) -> None:
    report = explain_text(line + "\n")
    assert {f.rule_id for f in report.findings}.isdisjoint({"BNB521", "BNB537"}), report.findings
