"""Logs read as people paste them (issue 24, item 4): the framing around each line is taken off before
recognition, and every finding still points at the lines of the text that was pasted.

The property: every kept log (tests/data/*_logs/, the logs the explain tests run), wrapped in each
framing below, gives the same findings as the log itself: the same rules, severities, titles and
explanations, evidence quoting the same text, and the same log lines once the pasted text's line
numbers are mapped back to the log's (a hard wrap or a progress bar adds lines). The explain
engine runs in-process, so every log under every framing costs a few seconds.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bnbdoctor.explain import explain_stream, explain_text
from bnbdoctor.logs.clean import read_blocks, split_lines
from bnbdoctor.logs.framing import FRAMINGS, Framing, dewrap, unframe
from bnbdoctor.report import Report

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT / "tests" / "data").glob("*_logs/*.txt"))
ESC = "\x1b"

#: Framings that join lines: the findings keep every text, a recognised line's quoted text may differ
#: where a line exactly as wide as the terminal was taken for a wrapped one (or the other way).
JOINING = {"wrap-80", "logging-wrap-80", "ansi-wrap-80"}
#: A framed text and, for each of its lines, the number of the log's line it shows (None: a line the
#: framing added, such as a progress bar's redraw).
Framed = tuple[str, list[int | None]]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    return lines


def _same_lines(out: list[str]) -> Framed:
    return "\n".join(out) + "\n", list(range(1, len(out) + 1))


def prefixed(prefix: str, empty: str | None = None) -> Callable[[str], Framed]:
    """Every line behind ``prefix`` (an empty line behind ``empty``, where the framing writes it so)."""
    return lambda text: _same_lines([(prefix if line or empty is None else empty) + line for line in _lines(text)])


def per_line(frames: list[Callable[[str], str]]) -> Callable[[str], Framed]:
    """Each line in the next of ``frames``, in turn: framings mixed in one paste, or on some lines only."""
    return lambda text: _same_lines([frames[i % len(frames)](line) for i, line in enumerate(_lines(text))])


def html_escaped(text: str) -> Framed:
    """As a web page shows it: ``&amp;``, ``&lt;``, ``&gt;``, ``&quot;``, ``&#39;``."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _same_lines(_lines(escaped.replace('"', "&quot;").replace("'", "&#39;")))


def coloured(text: str) -> Framed:
    """ANSI colour codes: a whole line red, a bold yellow first word, a green level before a line."""
    out = []
    for i, line in enumerate(_lines(text)):
        if i % 3 == 0:
            out.append(f"{ESC}[1;33m{line[:5]}{ESC}[0m{line[5:]}")
        elif i % 3 == 1:
            out.append(f"{ESC}[31m{line}{ESC}[0m")
        else:
            out.append(f"{ESC}[32mINFO{ESC}[0m 12-01 10:11:12 llm_engine.py:161] {line}")
    return _same_lines(out)


#: tqdm's redraws before the line that ends them (each ``\r`` ends a line of its own).
BAR = "  0%|          | 0/2 [00:00<?, ?it/s]\r 50%|#####     | 1/2 [00:01<00:01,  1.71s/it]\r"


def progress_bars(text: str) -> Framed:
    """A ``\\r``-redrawn progress bar before every fifth line that has text."""
    out: list[str] = []
    shows: list[int | None] = []
    for number, line in enumerate(_lines(text), start=1):
        if number % 5 == 0 and line:
            out.append(BAR + line)
            shows += [None, None, number]
        else:
            out.append(line)
            shows.append(number)
    return "\n".join(out) + "\n", shows


_VISIBLE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|.", re.DOTALL)


def fold(line: str, width: int) -> list[str]:
    """``line`` cut every ``width`` columns, as a terminal wraps it (a colour code takes none)."""
    pieces, piece, used = [], "", 0
    for token in _VISIBLE.findall(line):
        if len(token) == 1:
            if used == width:
                pieces.append(piece)
                piece, used = "", 0
            used += 1
        piece += token
    return [*pieces, piece]


def hard_wrapped(width: int) -> Callable[[str], Framed]:
    def frame(text: str) -> Framed:
        out: list[str] = []
        shows: list[int | None] = []
        for number, line in enumerate(_lines(text), start=1):
            pieces = fold(line, width)
            out += pieces
            shows += [number] * len(pieces)
        return "\n".join(out) + "\n", shows

    return frame


def kubernetes_partial(width: int) -> Callable[[str], Framed]:
    """The CRI log format with long lines split by the runtime: ``P`` pieces, then the ``F`` one."""

    def frame(text: str) -> Framed:
        out: list[str] = []
        shows: list[int | None] = []
        for number, line in enumerate(_lines(text), start=1):
            pieces = [line[k : k + width] for k in range(0, len(line), width)] or [""]
            for k, piece in enumerate(pieces):
                out.append(f"2024-05-01T10:11:12.123Z stdout {'F' if k == len(pieces) - 1 else 'P'} {piece}")
                shows.append(number)
        return "\n".join(out) + "\n", shows

    return frame


def then(*frames: Callable[[str], Framed]) -> Callable[[str], Framed]:
    """One framing, then the next around the result (a timestamped log, then hard-wrapped)."""

    def frame(text: str) -> Framed:
        shows: list[int | None] | None = None
        for each in frames:
            text, inner = each(text)
            shows = inner if shows is None else [shows[k - 1] if k else None for k in inner]
        assert shows is not None
        return text, shows

    return frame


LOGGING = "2024-05-01 10:11:12,345 - transformers.modeling_utils - WARNING - "  # %(asctime)s - %(name)s - ...
VLLM = "INFO 12-01 10:11:12 model_runner.py:123] "
RANK = "[rank0]: "
DOCKER = "2024-05-01T10:11:12.123456789Z "
KUBERNETES = "2024-05-01T10:11:12.123Z stdout F "
SLURM = "0: "
COLUMNS = "step 12 | pid 4321 | 3f2a9c1e-7b4d-4e2a-9f1c-0a1b2c3d4e5f | "

FRAMES: dict[str, Callable[[str], Framed]] = {
    "python-logging": prefixed(LOGGING),
    "vllm": prefixed(VLLM),
    "rank": prefixed(RANK),
    "docker": prefixed(DOCKER),
    "kubernetes": prefixed(KUBERNETES),
    "slurm": prefixed(SLURM),
    "job-columns": prefixed(COLUMNS),
    "github-quote": prefixed("> ", ">"),
    "html-entities": html_escaped,
    "ansi": coloured,
    "progress-bars": progress_bars,
    "wrap-80": hard_wrapped(80),
    "stacked": prefixed(KUBERNETES + LOGGING + RANK),
    "some-lines": per_line([lambda line: LOGGING + line, lambda line: line]),
    "mixed": per_line(
        [
            lambda line: LOGGING + line,
            lambda line: line,
            lambda line: VLLM + line,
            lambda line: RANK + line,
            lambda line: DOCKER + line,
            lambda line: "> " + line,
            lambda line: SLURM + line,
        ]
    ),
    "quoted-html": then(prefixed("> ", ">"), html_escaped),
    "logging-wrap-80": then(prefixed(LOGGING), hard_wrapped(80)),
    "ansi-wrap-80": then(coloured, hard_wrapped(80)),
    "kubernetes-partial": kubernetes_partial(50),
}

_LINE_NUMBERS = re.compile(r"\b(lines?) (\d+(?:, \d+)*)")


def outcome(
    report: Report, shows: list[int | None] | None = None, *, texts: bool = True, match_texts: bool = True
) -> tuple[list[object], list[object]]:
    """The findings and the recognised lines, with the pasted text's line numbers as the log's.
    ``texts``: with every text (titles, explanations, evidence); else the rules, severities and line
    numbers; ``match_texts``: with each recognised line's quoted text too."""

    def line(number: int) -> int | None:
        return number if shows is None else shows[number - 1]

    def mapped(text: str) -> str:
        return _LINE_NUMBERS.sub(
            lambda m: f"{m.group(1)} " + ", ".join(str(line(int(n))) for n in m.group(2).split(", ")), text
        )

    findings: list[object] = [
        (
            f.rule_id,
            f.severity.value,
            sorted({line(n) or 0 for n in f.log_lines}),
            [mapped(e.label) for e in f.evidence],
            (mapped(f.title), mapped(f.explanation), [e.value for e in f.evidence]) if texts else (),
        )
        for f in report.findings
    ]
    log = report.facts.log
    quoted = texts and match_texts
    matches = sorted((m.signature, line(m.line) or 0, m.text if quoted else "") for m in (log.matches if log else []))
    return findings, list(matches)


def explained(text: str) -> Report:
    return explain_stream(io.BytesIO(text.encode("utf-8")), "log")


@cache
def bare(path: Path, *, texts: bool = True, match_texts: bool = True) -> tuple[list[object], list[object]]:
    """The outcome of a kept log as it is (once per session: every framing is compared with it)."""
    return outcome(explained(path.read_text(encoding="utf-8")), texts=texts, match_texts=match_texts)


# ------------------------------------------------------------------------------------------ the property
@pytest.mark.parametrize("name", list(FRAMES))
def test_every_kept_log_in_this_framing_gives_the_same_findings(name: str) -> None:
    frame = FRAMES[name]
    different = []
    for path in LOGS:
        text = path.read_text(encoding="utf-8")
        framed, shows = frame(text)
        assert len(shows) == len(split_lines(framed)) - 1, name  # the map covers every line pasted
        whole = name not in JOINING  # a joining framing: the findings whole, the recognised lines by number
        if outcome(explained(framed), shows, match_texts=whole) != bare(path, match_texts=whole):
            different.append(f"{path.parent.name}/{path.name}")
    known = sorted(KNOWN_GAPS.get(name, set()) & set(different))
    assert sorted(set(different) - set(known)) == [], f"{name}: {different}"


#: Framing x log pairs that differ for a reason not fixed yet, each written down (a gap, not a pass): the
#: near-miss log from the corpus families (merged last in this session) starts with a long module path that a
#: wrap at 80 columns behind a logging prefix splits mid-name ("importlib.meta" / "data.PackageNotFoundError");
#: the de-wrapper keeps the pieces apart, so one quoted evidence line loses its module prefix. Same findings.
#: vLLM's ERROR records in kserve #4875 (real_logs/vllm_bnb_missing_or_below_minimum.txt) are error lines by their
#: level: wrapped at 80 behind a logging prefix, the record's level is on a piece the de-wrapper joins after the level
#: is read, and a progress bar glued in front of one record hides that record's level, so the error lines the bench
#: quotes beside the family's finding differ by one. The family's finding is the same.
KNOWN_GAPS: dict[str, set[str]] = {
    "logging-wrap-80": {
        "outcome_logs/near_misses_corpus_families.txt",
        "real_logs/vllm_bnb_missing_or_below_minimum.txt",
    },
    "progress-bars": {"real_logs/vllm_bnb_missing_or_below_minimum.txt"},
}


#: Kept logs of one long line whose message is told from its near misses only at its end (``but got
#: torch.uint8``, not ``float8``): cut at 120 columns behind a prefix, with no second wrapped line to show the
#: wrap, the part that names the family is on a line of its own and nothing rejoins it.
ONE_LINE_CUT_MID_MESSAGE = {"blockwise_quant_on_prequantized_weight.txt"}


def test_a_wider_wrap_keeps_the_findings_where_two_lines_show_it() -> None:
    """At 120 columns one wrapped line is not told from a line that long (two are): the quoted text of
    such a line may stay cut, the findings and their line numbers do not change."""
    for path in LOGS:
        if path.name in ONE_LINE_CUT_MID_MESSAGE:
            continue
        text = path.read_text(encoding="utf-8")
        framed, shows = then(prefixed(VLLM), hard_wrapped(120))(text)
        assert outcome(explained(framed), shows, texts=False) == bare(path, texts=False), path.name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(LOGS),
    st.lists(st.sampled_from(["", LOGGING, VLLM, RANK, DOCKER, KUBERNETES, SLURM, COLUMNS, "> "]), min_size=1),
    st.lists(st.sampled_from(["", RANK, "> ", KUBERNETES + LOGGING]), min_size=1, max_size=3),
)
@example(  # found by a CI run: srun's task number before a rank prefix, after a line at the wrap width
    ROOT / "tests" / "data" / "real_logs" / "params4bit_lacks_quant_storage_old_bnb.txt",
    ["", "", "", "", "", "", "", "2024-05-01T10:11:12.123456789Z ", "0: ", "2024-05-01T10:11:12.123Z stdout F "],
    ["[rank0]: "],
)
@example(  # found by a CI run: srun's task number before an indented line
    ROOT / "tests" / "data" / "synthetic_logs" / "cuda_setup_failed_despite_gpu_available.txt",
    ["2024-05-01T10:11:12.123456789Z ", "INFO 12-01 10:11:12 model_runner.py:123] ", "0: ", "", ""],
    ["[rank0]: ", ""],
)
def test_any_mix_of_framings_gives_the_same_findings(path: Path, outer: list[str], inner: list[str]) -> None:
    """Each line in its own framing (two stacked), drawn at random, some lines bare."""
    text = path.read_text(encoding="utf-8")
    lines = _lines(text)
    framed = "\n".join(outer[i % len(outer)] + inner[i % len(inner)] + line for i, line in enumerate(lines)) + "\n"
    assert outcome(explained(framed)) == bare(path)


def test_every_kept_log_is_left_as_it_is_but_its_own_framing() -> None:
    """Unframing a log that was pasted bare joins nothing, and takes off only real framing (the ranks,
    timestamps and levels some kept logs show)."""
    changed = {}
    for path in LOGS:
        for first, block in read_blocks(io.BytesIO(path.read_bytes())):
            out, emptied = unframe(block)
            assert emptied == [], path.name  # no hard wrap seen where there is none
            for offset, (before, after) in enumerate(zip(block.split(b"\n"), out.split(b"\n"), strict=True)):
                if before != after:
                    assert before.endswith(after), (path.name, before)
                    changed[(path.name, first + offset)] = before[: len(before) - len(after)].decode()
    prefixes = {re.sub(r"\d", "0", prefix) for prefix in changed.values()}
    assert prefixes == {
        "[rank0]: ",
        "W0000 00:00:00.000000 000 torch/distributed/run.py:000] ",
        "E0000 00:00:00.000000 000 torch/distributed/elastic/multiprocessing/api.py:000] ",
        "[0000-00-00 00:00:00,000] [INFO] [real_accelerator.py:000:get_accelerator] ",
        "0000-00-00 00:00:00.000 | INFO     | __main__:main:00 - ",
        "[0000-00-00 00:00:00] INFO  ",
        "WARNING 00-00 00:00:00 config.py:000] ",  # the vLLM line quoted in the corpus near-miss log
        # the GPU pooling layer's log around the paged optimizer's error (Firefly #185)
        "0000-00-00 00:00:00 [ERROR] ",
        "0000-00-00 00:00:00 [INFO] ",
        "ERROR:torch.distributed.elastic.multiprocessing.api:",  # torchrun's record after the paged optimizer's abort
        ">",  # a quote without its space (textgen #3339's paste)
        "INFO 00-00 00:00:00 [gpu_model_runner.py:0000] ",  # vLLM 0.9's format (kserve #4875)
        "ERROR 00-00 00:00:00 [core.py:000] ",
        "0000-00-00 00:00:00 [WARNING] ",
        "> ",  # the 8-bit Adam import error quoted in bitsandbytes #86
    }, prefixes


# ------------------------------------------------------------------------------------------ the framings
@pytest.mark.parametrize("framing", FRAMINGS, ids=lambda f: f.name)
def test_each_framing_is_taken_off_its_example(framing: Framing) -> None:
    example = framing.example.encode()
    assert unframe(example + b"ValueError: boom\nplain line")[0] == b"ValueError: boom\nplain line"


@pytest.mark.parametrize(
    ("line", "content"),
    [
        ("2024-05-01 10:11:12,345 - __main__ - ERROR - RuntimeError: CUDA error", "RuntimeError: CUDA error"),
        ("2024-05-01 10:11:12,345 - ERROR - RuntimeError: x", "RuntimeError: x"),
        ("2024-05-01 10:11:12,345 INFO transformers.modeling_utils: loading", "loading"),
        (
            "2024-05-01 10:11:12 ERROR torch.OutOfMemoryError: CUDA out of memory",
            "torch.OutOfMemoryError: CUDA out of memory",
        ),
        ("[2024-05-01 10:11:12,345][__main__][INFO] - loading", "loading"),
        ("2024-05-01 10:11:12.345 | INFO     | __main__:main:10 - loading", "loading"),
        ("(RayWorkerWrapper pid=1234, ip=10.0.0.1) INFO 12-01 10:11:12 [core.py:58] loading", "loading"),
        ("(VllmWorkerProcess pid=1234) ERROR 12-01 10:11:12 worker.py:12] KeyError: 'x'", "KeyError: 'x'"),
        ("I0501 10:11:12.123456 140234 file.py:123] loading", "loading"),
        ("[rank1]:[W1120 10:11:12.123456789 ProcessGroupNCCL.cpp:1250] Warning: x", "Warning: x"),
        ("[1,0]<stderr>:Traceback (most recent call last):", "Traceback (most recent call last):"),
        ('[default3]:  File "train.py", line 3, in <module>', '  File "train.py", line 3, in <module>'),
        ('[rank0]:   File "train.py", line 3, in <module>', '  File "train.py", line 3, in <module>'),
        ("WARNING:bitsandbytes.cextension:The installed version", "The installed version"),
        (" 3: OSError: libcudart.so.12: cannot open", "OSError: libcudart.so.12: cannot open"),
        ("&gt; &gt; No module named &#39;scipy&#39;", "No module named &#39;scipy&#39;"),
        ("web-1  | ImportError: x", "ImportError: x"),
        ("build\tRun tests\t2024-05-01T10:11:12.1234567Z ValueError: x", "ValueError: x"),
        ("2024-05-01T10:11:12.123Z stdout F 2024-05-01 10:11:12,345 - root - INFO - [rank0]: x", "x"),
    ],
)
def test_framing_in_its_usual_shapes(line: str, content: str) -> None:
    assert unframe(line.encode())[0].decode() == content


@pytest.mark.parametrize(
    "line",
    [
        '  File "/opt/conda/lib/python3.10/site-packages/bitsandbytes/cextension.py", line 3, in <module>',
        "    raise ValueError(",
        ">>> import bitsandbytes",
        "----> 3 y = x @ x",
        "      1 x = torch.randn(80000, 80000)",
        "[rank0] is not a prefix without its colon",
        "the log of [rank0]: not at the start",
        "WARNING: BNB_CUDA_VERSION=124 environment variable detected; loading libbitsandbytes_cuda124.so.",
        "ERROR: Your GPU does not support Int8 Matmul!",
        "CUDA SETUP: WARNING! libcuda.so not found!",
        "DEBUG: Possible options found for libcudart.so: set()",
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)",
        "|   0  NVIDIA GeForce RTX 3090   Off | 00000000:01:00.0 Off |",
        "12:34:56 not a task number",
        "torch.OutOfMemoryError: CUDA out of memory.",
        "Traceback (most recent call last):",
        "(most recent call last)",
        "1.2.3: a version",
    ],
)
def test_what_is_the_log_itself_stays(line: str) -> None:
    assert unframe(line.encode())[0].decode() == line


# ------------------------------------------------------------------------------------------ line numbers
def test_findings_point_at_the_lines_that_were_pasted() -> None:
    """A torchrun log behind Kubernetes timestamps, cut at 80 columns: the finding names the lines of
    the paste where its messages begin."""
    prefix = "2024-05-01T10:11:12.123Z stdout F [rank0]: "
    log = [
        prefix + "loading the model",
        prefix + "/opt/conda/lib/python3.10/site-packages/bitsandbytes/cuda_setup/main.py:166: UserWarning: "
        "Welcome to bitsandbytes. For bug reports, please run",
        prefix + "/lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by "
        "/opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda117.so)",
    ]
    pieces = [fold(line, 80) for line in log]
    assert [len(p) for p in pieces] == [1, 3, 3]
    report = explain_text("\n".join(piece for line in pieces for piece in line))
    first = report.findings[0]
    assert first.rule_id == "BNB306"
    assert first.log_lines == [5]  # "/lib64/libstdc++.so.6: version ..." begins on the fifth line pasted
    assert log[2].removeprefix(prefix) in [e.value for e in first.evidence]  # the whole line, unframed
    assert report.facts.log is not None
    assert [(m.signature, m.line) for m in report.facts.log.matches if m.signature == "cxxabi_version_not_found"] == [
        ("cxxabi_version_not_found", 5)
    ]
    assert report.facts.log is not None and report.facts.log.lines == 7


def test_the_line_after_a_wrapped_message_is_still_the_next_line() -> None:
    """The keyword's name on the line after transformers' TypeError: that line is next to it in the log,
    also when the TypeError was wrapped (its pieces left empty lines behind)."""
    log = (
        "TypeError: BitsAndBytesConfig.__init__() got an unexpected keyword argument\n'load_in_8bit_fp32_cpu_offload'\n"
    )
    framed = "".join(LOGGING + line + "\n" for line in log.splitlines())
    pasted = "\n".join(piece for line in framed.split("\n") for piece in fold(line, 80))
    assert [f.rule_id for f in explain_text(pasted).findings] == [f.rule_id for f in explain_text(log).findings]
    assert explain_text(log).findings[0].rule_id == "BNB451"


# ------------------------------------------------------------------------------------------ hard wraps
def test_a_hard_wrapped_line_is_joined_and_its_pieces_left_empty() -> None:
    line = b"OSError: /lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by /usr/lib/libbnb_cuda117.so)"
    lines = [b"start", line[:80], line[80:], b"end"]
    assert dewrap(lines) == [2]
    assert lines == [b"start", line, b"", b"end"]


@pytest.mark.parametrize(
    "lines",
    [
        # lines of one length that say alike things: a counter, not one line cut in pieces
        [
            f"Could not find the bitsandbytes CUDA binary at /x/libbitsandbytes_cuda{i}.so".encode()
            for i in range(100, 200)
        ],
        [b"=" * 80, b"CUDA SETUP: Loading binary", b"=" * 80, b"done"],  # a rule ends no wrapped line
        [b"=" * 35 + b"BUG REPORT" + b"=" * 35, b"Welcome to bitsandbytes. For bug reports, please run"],
        [b"x" * 60, b"y" * 59, b"short"],  # no width shows: one line of the longest length
        # a line exactly as wide as the terminal, then a traceback's source line, a prompt, a new record
        [
            b'  File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", l',
            b"    raise ValueError(",
        ],
        [b"OSError: libsycl.so.8: cannot open shared object file: No such file or directory", b"ines@arc-ws:~$ ldd x"],
        [b"a" * 80, b"Traceback (most recent call last):"],
        [b"b" * 80, b"RuntimeError: CUDA error: no kernel image is available for execution on the device"],
        [b"c" * 80, b"2024-05-01 10:11:12,345 - root - INFO - next record"],
    ],
)
def test_no_join_where_lines_only_look_wrapped(lines: list[bytes]) -> None:
    before = list(lines)
    assert dewrap(lines) == []
    assert lines == before


def test_kubernetes_partial_lines_are_one_line() -> None:
    text = (
        b"2024-05-01T10:11:12.1Z stderr P OSError: libcudart.so.12: cannot open shared \n"
        b"2024-05-01T10:11:12.1Z stderr P object file: No such\n"
        b"2024-05-01T10:11:12.1Z stderr F  file or directory\n"
        b"2024-05-01T10:11:12.2Z stdout F next"
    )
    out, emptied = unframe(text)
    assert out.split(b"\n") == [
        b"OSError: libcudart.so.12: cannot open shared object file: No such file or directory",
        b"",
        b"",
        b"next",
    ]
    assert emptied == [1, 2]


# ------------------------------------------------------------------------------------------ bounded work
@pytest.mark.parametrize("filler", ["0", "[", "(", "> ", "-", "\t", "a", "2024-05-01 ", "INFO ", "|", " "])
def test_a_line_of_one_shape_costs_what_a_line_costs(filler: str) -> None:
    """4,096-character lines of what framings start with, 64 of them a block: bounded time."""
    line = (filler * 4096)[:4096].encode()
    block = b"\n".join([line] * 64)
    started = time.perf_counter()
    unframe(block)
    assert time.perf_counter() - started < 0.5


def _first_bytes(items: Any) -> set[int] | None:
    """The bytes a parsed expression can match first; None when any byte could (or it may match empty)."""
    out: set[int] = set()
    categories = {
        "CATEGORY_DIGIT": b"0123456789",
        "CATEGORY_WORD": b"0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        "CATEGORY_SPACE": b" \t\n\r\f\v",
    }
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return out | {av}
        if name == "IN":
            for item, value in av:
                if str(item) == "LITERAL":
                    out.add(value)
                elif str(item) == "RANGE":
                    out.update(range(value[0], value[1] + 1))
                elif str(item) == "CATEGORY" and str(value) in categories:
                    out.update(categories[str(value)])
                else:
                    return None
            return out
        if name == "SUBPATTERN":
            inner = _first_bytes(av[3])
            return None if inner is None else out | inner
        if name == "BRANCH":
            for alternative in av[1]:
                inner = _first_bytes(alternative)
                if inner is None:
                    return None
                out |= inner
            return out
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, _high, sub = av
            inner = _first_bytes(sub)
            if inner is None:
                return None
            out |= inner
            if low == 0:
                continue
            return out
        return None
    return None


@pytest.mark.parametrize("framing", [f for f in FRAMINGS if f.starts is not None], ids=lambda f: f.name)
def test_a_framing_s_first_bytes_are_all_it_can_begin_with(framing: Framing) -> None:
    """``starts`` lets the search skip lines at once: it must hold every byte the expression can match first
    (read from the expression itself by Python's own parser), or framed lines would keep their framing."""
    parser = pytest.importorskip("re._parser")
    first = _first_bytes(parser.parse(framing.regex))
    assert first is not None, "the expression can begin with any byte: declare no starts"
    assert framing.starts is not None
    assert first <= set(framing.starts), bytes(sorted(first - set(framing.starts)))
    assert framing.example.encode()[0] in framing.starts


@cache
def _kept_lines() -> list[str]:
    return [line for path in LOGS for line in _lines(path.read_text(encoding="utf-8"))][:4000]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3999),
            st.lists(st.sampled_from([f.example for f in FRAMINGS]), max_size=3),
            st.integers(min_value=0, max_value=10**9),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(min_value=2, max_value=6),
)
def test_framings_narrowed_by_the_distinct_lines_take_off_what_all_of_them_do(
    picks: list[tuple[int, list[str], int]], copies: int
) -> None:
    """The extractor tries on a repetitive block only the framings its distinct lines (digits made 0) hold:
    the result is the full expression's, line for line, whatever the stacks and the digits in them."""
    from bnbdoctor.logs.candidates import distinct_lines

    kept = _kept_lines()
    lines = []
    for _ in range(copies):  # repeats, with new digits in every copy, so the block has few distinct lines
        for index, stack, digits in picks:
            prefix = "".join(str((digits + i) % 10) if c.isdigit() else c for i, c in enumerate("".join(stack)))
            lines.append(prefix + kept[index % len(kept)])
    block = "\n".join(lines).encode("utf-8", "surrogateescape")
    distinct = distinct_lines(block)
    assert unframe(block, distinct) == unframe(block)


def test_a_quote_without_its_space_is_framing_too() -> None:
    """GitHub renders ``>text`` as a quote as well (textgen #3339 pasted its traceback so); a prompt is left."""
    block = b">major, minor = map(int, torch.version.cuda.split('.'))\n>AttributeError: boom\n>>> import torch\n>5"
    assert unframe(block)[0] == (
        b"major, minor = map(int, torch.version.cuda.split('.'))\nAttributeError: boom\n>>> import torch\n>5"
    )
