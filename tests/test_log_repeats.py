"""The log extractor's work is bounded per block, whatever a log repeats (issue 14's log campaign).

Work is counted as the lines handed to the matchers (``LogExtractor._feed_line``), not timed: the
campaign's slow inputs (``tests/data/fuzz/log/*.json``, run-length encoded, so the file is the exact
input) and synthetic logs of one message repeated or re-worded hundreds of thousands of times.
"""

from __future__ import annotations

import io
import itertools
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.explain.pipeline import explain_stream
from bnbdoctor.logs.clean import BLOCK
from bnbdoctor.logs.extract import MAX_LINES_PER_BLOCK, REPEATS_CHECKED_AFTER, LogExtractor, extract
from bnbdoctor.logs.repeats import KEPT_COPIES, MAX_BLANKED_LINES, MIN_REPEATS, blank_repeats

FUZZ_LOGS = sorted((Path(__file__).parent / "data" / "fuzz" / "log").glob("*.json"))


def _rebuild(path: Path) -> bytes:
    doc = json.loads(path.read_text(encoding="ascii"))
    data = b"\n".join(b"\n".join([line.encode("latin-1")] * count) for line, count in doc["runs"])
    assert len(data) == doc["bytes"]
    return data


class CountingExtractor(LogExtractor):
    """A LogExtractor that counts the lines it matches."""

    def __init__(self) -> None:
        super().__init__()
        self.fed = 0

    def _feed_line(self, number: int, line: str, indices: set[int]) -> None:
        self.fed += 1
        super()._feed_line(number, line, indices)


def _fed(data: bytes) -> tuple[int, dict[str, Any]]:
    from bnbdoctor.logs.clean import ReadStats, read_blocks

    stats = ReadStats()
    extractor = CountingExtractor()
    extractor.feed_all(read_blocks(io.BytesIO(data), stats))
    return extractor.fed, extractor.facts(stats).source


def _blocks(data: bytes) -> int:
    """Blocks read_blocks yields for ``data`` at most (the last one holds the carried partial line)."""
    return len(data) // BLOCK + 2


def test_the_campaign_inputs_are_all_here() -> None:
    assert len(FUZZ_LOGS) >= 24


@pytest.mark.parametrize("path", FUZZ_LOGS, ids=lambda p: p.stem)
def test_a_campaign_input_matches_each_distinct_line_a_few_times(path: Path) -> None:
    """Each of these took 0.5-1 s: ~20,000 copies of a few lines, every copy decoded and matched. Now a
    line is matched at most KEPT_COPIES + 1 times per block once a block brings more than
    REPEATS_CHECKED_AFTER lines to match."""
    data = _rebuild(path)
    fed, source = _fed(data)
    counts = Counter(data.split(b"\n"))
    per_block = max(REPEATS_CHECKED_AFTER + 1, sum(min(count, KEPT_COPIES + 1) for count in counts.values()))
    bound = _blocks(data) * per_block
    assert fed <= bound, f"{fed} lines matched, at most {bound} expected"
    assert source["repeated_lines"] > 0  # each repeats one line thousands of times: the copies are blanked
    explain_stream(io.BytesIO(data), "log")  # and the whole pipeline ends normally


@pytest.mark.parametrize(
    "line",
    [
        b"KeyError: 'x'",
        b"CUDA",
        b"Could not find the bitsandbytes CUDA binary at PosixPath('/x/libbitsandbytes_cuda118.so')",
        b"ValueError: Some modules are dispatched on the CPU or the disk.",
    ],
)
def test_a_line_repeated_a_few_hundred_thousand_times(line: bytes) -> None:
    data = b"\n".join([line] * (4_000_000 // (len(line) + 1)))
    fed, source = _fed(data)
    assert fed <= _blocks(data) * (KEPT_COPIES + 1)
    assert source["repeated_lines"] >= data.count(b"\n") + 1 - _blocks(data) * (KEPT_COPIES + 1)
    assert source["lines"] == data.count(b"\n") + 1  # numbering is untouched


@pytest.mark.parametrize(
    "template",
    ["CUDA {}", "RuntimeError: CUDA error: step {}", "/usr/lib/x{}/libcudart.so.12", "bitsandbytes cuda{}.so"],
)
def test_a_message_in_ever_new_words_is_matched_at_most_a_thousand_times_a_block(template: str) -> None:
    data = "\n".join(template.format(i) for i in range(200_000)).encode()
    fed, source = _fed(data)
    assert fed <= _blocks(data) * MAX_LINES_PER_BLOCK
    assert source["lines_not_matched"] > 100_000  # the report says lines were left out


def test_a_repeated_block_keeps_its_first_copies_its_last_and_every_line_number() -> None:
    lines = [b"KeyError: 'a'"] * 100 + [b"unique 1"] + [b"KeyError: 'a'"] * 50 + [b"", b"tail"]
    block = b"\n".join(lines)
    out, blanked = blank_repeats(block, lambda line: b"Error" in line)
    kept = out.split(b"\n")
    assert len(kept) == len(lines)
    positions = [i for i, line in enumerate(kept) if line == b"KeyError: 'a'"]
    assert positions == [0, 1, 2, 150]  # the first three copies and the last one
    assert blanked == 150 - KEPT_COPIES - 1
    assert kept[100] == b"unique 1" and kept[-1] == b"tail"
    assert all(kept[i] == b"" for i in range(3, 150) if i != 100)


def test_lines_no_pattern_reads_are_left_alone() -> None:
    block = b"\n".join([b"plain words"] * 500)
    assert blank_repeats(block, lambda line: False) == (block, 0)


def test_a_log_of_few_repeats_is_passed_on_untouched() -> None:
    block = b"\n".join(b"line %d" % i for i in range(10_000)) + b"\nKeyError: 'a'\nKeyError: 'a'"
    assert blank_repeats(block, lambda line: True) == (block, 0)


def test_the_last_error_after_thousands_of_repeats_is_still_the_one_explained() -> None:
    """The failure at the end of a log that repeated a warning 50,000 times is found, with its number."""
    warning = "UserWarning: Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32"
    lines = [warning] * 50_000 + [
        "Traceback (most recent call last):",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    ]
    facts, _seconds = extract(io.BytesIO("\n".join(lines).encode()))
    assert facts.log is not None
    assert facts.log.exception is not None and "no kernel image" in facts.log.exception
    numbers = [m.line for m in facts.log.matches if "no kernel image" in m.text]
    assert numbers == [50_002]


def test_repeats_change_only_the_counts() -> None:
    """A log with a message repeated 20,000 times explains like the same log with it written 5 times."""
    seed = (Path(__file__).parent / "data" / "real_logs").glob("*.txt")
    for path in itertools.islice(sorted(seed), 6):
        text = path.read_bytes()
        lines = text.split(b"\n")
        middle = len(lines) // 2
        few = b"\n".join(lines[:middle] + [lines[middle]] * 5 + lines[middle + 1 :])
        many = b"\n".join(lines[:middle] + [lines[middle]] * 20_000 + lines[middle + 1 :])
        ids_few = {f.rule_id for f in explain_stream(io.BytesIO(few), "log").findings}
        ids_many = {f.rule_id for f in explain_stream(io.BytesIO(many), "log").findings}
        assert ids_few == ids_many, path.name


def test_the_first_scan_gives_up_rather_than_miss_lines() -> None:
    """The first scan stops at REPEATS_CHECKED_AFTER lines. An anchor scanned late, whose first
    occurrences sat on lines already found, once stopped after the few lines of room left and never
    read its later lines: the lines the first scan answers with must be the full scan's."""
    from bnbdoctor.logs.collectors import ANCHORS

    anchors = [a for a in ANCHORS if len(a) >= 4 and a.isalpha()]
    first = anchors[0]
    later = next(a for a in anchors[1:] if first not in a and a not in first)
    block = b"\n".join([first + b" " + later] * (REPEATS_CHECKED_AFTER - 6) + [later + b" %d" % i for i in range(5)])
    quick = LogExtractor()._candidates(block, REPEATS_CHECKED_AFTER, set())
    full = LogExtractor()._candidates(block, None, set())
    assert full is not None and len(full.lines) == REPEATS_CHECKED_AFTER - 1
    assert quick is None or set(quick.lines) == set(full.lines)


def _blank_repeats_by_replace(block: bytes, relevant: Callable[[bytes], bool]) -> tuple[bytes, int]:
    """The blanking as it was first written (``bytes.replace`` over the block, twice per repeated line): the
    reference the one-pass blanking is held to."""
    lines = block.split(b"\n")
    counts = Counter(lines)
    repeats = len(lines) - len(counts)
    if block.count(b"\n") < MIN_REPEATS or repeats < MIN_REPEATS or repeats * 64 < len(counts):
        return block, 0
    blanked, framed = 0, b"\n" + block + b"\n"
    for line, count in counts.most_common(MAX_BLANKED_LINES):
        if count <= KEPT_COPIES + 1:
            break
        if not line or not relevant(line):
            continue
        whole, start = b"\n" + line + b"\n", -1
        for _ in range(KEPT_COPIES):
            start = framed.find(whole, start + 1)
        middle_from, last = start + len(whole) - 1, framed.rfind(whole)
        middle = framed[middle_from : last + 1].replace(whole, b"\n\n").replace(whole, b"\n\n")
        framed = framed[:middle_from] + middle + framed[last + 1 :]
        blanked += count - KEPT_COPIES - 1
    return (framed[1:-1], blanked) if blanked else (block, 0)


@pytest.mark.parametrize("seed", range(6))
def test_the_blanking_is_the_replace_based_one(seed: int) -> None:
    """Runs of adjacent copies, copies at the block's first and last line, empty lines repeated, more
    repeated lines than are blanked, lines no pattern reads: blanked exactly as before."""
    rng = random.Random(seed)
    words = [b"", b"CUDA %d" % seed, b"KeyError: 'a'", b"plain", b"Error", b"ErrorError"] + [
        b"Error %d" % i for i in range(40)
    ]
    lines = [rng.choice(words[: rng.choice([3, 6, len(words)])]) for _ in range(rng.randrange(70, 3000))]
    block = b"\n".join(lines)
    relevant = (lambda line: b"Error" in line) if seed % 2 else (lambda line: True)
    assert blank_repeats(block, relevant) == _blank_repeats_by_replace(block, relevant)
