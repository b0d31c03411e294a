"""The anchor prefilter (:func:`bnbdoctor.logs.candidates.absent_anchors`) changes nothing the extractor finds.

It rules anchors out of a block from the block's distinct lines (digits made ``0``) so that they are not
searched one by one. These tests hold it to the per-anchor search on real log text: every anchor it rules
out is in no line of the block; with it, the candidate lines of every block and the facts of the whole
log are those found without it, for anchors that overlap (``Exit`` in ``SystemExit``, ``bit`` in
``bitsandbytes``, ``libc`` in ``libcudart``), that hold digits (``TX2``), that a line break cuts, and for
lines at the edges of the blocks.
"""

from __future__ import annotations

import importlib
import io
import json
import random
from pathlib import Path

import pytest

from bnbdoctor.logs.candidates import Candidates, absent_anchors
from bnbdoctor.logs.clean import ReadStats, read_blocks
from bnbdoctor.logs.collectors import ANCHORS
from bnbdoctor.logs.extract import REPEATS_CHECKED_AFTER, LogExtractor
from bnbdoctor.logs.framing import unframe
from bnbdoctor.serde import to_jsonable

# (``from bnbdoctor.logs import extract`` is the function: the package exports it lazily)
extract_module = importlib.import_module("bnbdoctor.logs.extract")

DATA = Path(__file__).parent / "data"
REAL_LOGS = sorted((DATA / "real_logs").glob("*.txt")) + sorted((DATA / "synthetic_logs").glob("*.txt"))

#: Lines where anchors overlap, hold digits, or are cut by a line break (``Syst`` / ``emExit``).
EDGES = [
    b"SystemExit: 1",
    b"Exception during processing !!! Exception: boom",
    b"bitsandbytes BitAndBytes quantization with TP Prequant BitsAndBytes",
    b"OSError: libcudart.so.12: cannot open shared object file; libc.so.6 ldd (GNU libc) 2.31",
    b"NVIDIA Jetson TX2 with jetpack 4.6, tegra",
    b"C:\\Users\\me\\bitsandbytes\\libbitsandbytes_cuda121.dll not found",
    b"raise Syst",
    b"emExit",
    b"CUDA SETUP ERROR",
    b"Traceback (most recent call last)",
]


def _noisy_log(seed: int, size: int) -> bytes:
    """Real logs cut in pieces, between training-loop noise whose lines differ only in their numbers
    (so a block's distinct lines are few and the prefilter is used), with the edge cases here and there."""
    rng = random.Random(seed)
    pieces = [path.read_bytes() for path in REAL_LOGS]
    out: list[bytes] = []
    total = 0
    while total < size:
        roll = rng.random()
        if roll < 0.02:
            text = rng.choice(pieces)
            start = rng.randrange(len(text))
            line = text[start : start + rng.randrange(2000)]
        elif roll < 0.03:
            line = rng.choice(EDGES)
        else:
            line = b"{'loss': %.4f, 'grad_norm': 0.%d, 'epoch': %d} %d/1000 [00:%02d<07:21, 2.27it/s]" % (
                rng.random() * 3,
                rng.randrange(100),
                rng.randrange(10),
                rng.randrange(1000),
                rng.randrange(60),
            )
        out.append(line)
        total += len(line) + 1
    return b"\n".join(out)


def _blocks(data: bytes, block: int) -> list[bytes]:
    """The blocks the extractor searches: read in ``block``-byte chunks, framing off."""
    return [unframe(raw)[0] for _, raw in read_blocks(io.BytesIO(data), block=block)]


LOGS = {"real-1": _noisy_log(1, 600_000), "real-2": _noisy_log(2, 300_000)}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("block", [1 << 20, 1 << 16, 4099])
def test_an_anchor_ruled_out_is_in_no_line_of_the_block(name: str, block: int) -> None:
    ruled_out = 0
    for text in _blocks(LOGS[name], block):
        absent = absent_anchors(text, ANCHORS)
        wrong = sorted(anchor for anchor in absent if anchor in text)
        assert not wrong, f"ruled out, but in the block: {wrong}"
        ruled_out += len(absent)
    assert ruled_out  # the prefilter was used, and ruled anchors out


def test_an_anchor_with_digits_cut_or_overlapping_is_not_ruled_out() -> None:
    lines = [b"step %d loss 0.%d" % (i, i % 97) for i in range(400)]
    lines[10:10] = [b"NVIDIA Jetson TX2", b"raise Syst", b"emExit", b"SystemExit", b"libcudart.so.12"]
    text = b"\n".join(lines)
    absent = absent_anchors(text, ANCHORS)
    assert absent, "400 lines alike but for their numbers: the prefilter is used"
    for anchor in (b"TX2", b"NVIDIA", b"SystemExit", b"Exit", b"libc"):
        assert anchor not in absent
    assert b"Traceback (most recent call last)" in absent and b"tegra" in absent


def test_a_block_of_distinct_lines_is_searched_anchor_by_anchor() -> None:
    rng = random.Random(3)
    text = b"\n".join(bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyz", k=16)) for _ in range(1000))
    assert absent_anchors(text, ANCHORS) == set()


def _outcome(found: Candidates | None) -> tuple[dict[int, set[int]], set[int], int] | None:
    return None if found is None else (found.lines, found.sparse, found.unread)


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("block", [1 << 20, 1 << 16])
def test_every_block_brings_the_same_candidate_lines_with_the_prefilter(name: str, block: int) -> None:
    for text in _blocks(LOGS[name], block):
        for give_up_after in (REPEATS_CHECKED_AFTER, None):
            searched, filtered = set[bytes](), absent_anchors(text, ANCHORS)
            before = _outcome(LogExtractor()._candidates(text, give_up_after, searched))
            after = _outcome(LogExtractor()._candidates(text, give_up_after, filtered))
            assert after == before
            assert not any(anchor in text for anchor in filtered)


def _facts(data: bytes, block: int) -> str:
    stats = ReadStats()
    extractor = LogExtractor("log")
    extractor.feed_all(read_blocks(io.BytesIO(data), stats, block=block))
    return json.dumps(to_jsonable(extractor.facts(stats)), sort_keys=True)


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("block", [1 << 20, 1 << 16, 4099])
def test_a_log_gives_the_same_facts_with_and_without_the_prefilter(
    name: str, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_prefilter = _facts(LOGS[name], block)
    monkeypatch.setattr(extract_module, "absent_anchors", lambda text, anchors, distinct=b"": set())
    assert _facts(LOGS[name], block) == with_prefilter
