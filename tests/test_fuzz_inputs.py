"""Property-based tests of the non-native parsers: logs, saved reports, fit's model input, manifests.

Structure-aware generators start from real seeds (a recorded machine's report and manifest, the
fit configs, log lines of the message families) and put absurd values where real ones were: huge,
negative, infinite or fractional numbers, the wrong type, lone surrogates, deep nesting, lines of
one repeated character. The property is the same everywhere: the parser answers with its own
one-line error or a result, never another exception, and its work is bounded by the format's caps.
The inputs the campaign (``bench/fuzz_inputs.py``) found are replayed from ``tests/data/fuzz/``.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnbdoctor.fit import approx
from bnbdoctor.fit.model_input import resolve_model
from bnbdoctor.fit.options import FitInputError
from bnbdoctor.hosts.fixture import FixtureError, FixtureHost
from bnbdoctor.hosts.live import LiveHost
from bnbdoctor.logs.candidates import MAX_OCCURRENCES_PER_ANCHOR
from bnbdoctor.logs.collectors import PATTERNS
from bnbdoctor.logs.extract import (
    MAX_HITS_PER_PATTERN,
    LogExtractor,
    extract,
)
from bnbdoctor.logs.state import MAX_KEPT
from bnbdoctor.render.json import render_json
from bnbdoctor.report_io import ReportError, load_facts, parse_report
from bnbdoctor.serde import from_dict, to_jsonable, writable

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tests" / "data" / "fuzz"
FIT = ROOT / "tests" / "data" / "fit"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Values no real config, header, report or manifest holds where a number or a name belongs.
ABSURD = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**30, 2**64, -1, 0, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["abc", "12.1", "cpu", "", "\udce9", "1e999", " 12 "]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:20]):
            found += _nodes(item, (*path, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _mutated(seed: Any) -> st.SearchStrategy[Any]:
    """``seed`` with one node (any depth) replaced by an absurd value."""
    paths = _nodes(seed)
    return st.tuples(st.sampled_from(paths), ABSURD).map(lambda pick: _replaced(seed, pick[0], pick[1]))


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


# ---------------------------------------------------------------------------------------------- logs

_KEYS = sorted({key for pattern in PATTERNS for key in pattern.keys})
_FILLER = st.sampled_from(["/", "\\", " ", "\t", "=", "1.", "a/", "'", "_", "bitsandbytes/", "C:\\", "(", "1"])


@FAST
@given(st.lists(st.tuples(st.sampled_from(_KEYS), _FILLER, st.integers(1, 3000), st.booleans()), max_size=8))
def test_log_lines_of_message_words_and_repeated_characters(parts: list[tuple[str, str, int, bool]]) -> None:
    lines = [(filler * count + key) if before else (key + filler * count) for key, filler, count, before in parts]
    facts, _seconds = extract(io.BytesIO("\n".join(lines).encode("utf-8")))
    assert facts.log is not None


@FAST
@given(st.binary(max_size=4000))
def test_log_bytes(data: bytes) -> None:
    extract(io.BytesIO(data))


def test_a_line_of_one_character_costs_what_a_line_costs() -> None:
    """Every message family on a line of 4,096 slashes, spaces or equals signs (the lines on which
    expressions with unbounded or nested repeats went quadratic): a bounded time per line."""
    worst = 0.0
    for key in _KEYS:
        for filler in ("/", " ", "=", "\t", "a/", "1.", "\\"):
            for line in ((key + filler * 4096)[:4096], (filler * 4096)[: 4096 - len(key)] + key):
                extractor = LogExtractor()
                started = time.perf_counter()
                extractor.feed(1, line)
                worst = max(worst, time.perf_counter() - started)
    assert worst < 0.25, f"one line took {worst:.3f}s"


def test_thousands_of_distinct_missing_libraries_are_kept_bounded() -> None:
    """log-09/log-22/log-23 of the campaign: 20,000 "Could not find the bitsandbytes CUDA binary"
    lines, each naming another library, made every later lookup cost the whole list."""
    lines = [
        f"Could not find the bitsandbytes CUDA binary at PosixPath('/x/site-packages/bitsandbytes/"
        f"libbitsandbytes_cuda{i}.so')"
        for i in range(5000)
    ]
    extractor = LogExtractor()
    text = "\n".join(["Traceback (most recent call last):", "import bitsandbytes", *lines]).encode()
    extractor.feed_block(1, text)
    state = extractor.state
    assert len(state.bnb.absent) <= MAX_KEPT and len(state.bnb.selected) <= MAX_KEPT
    assert len(state.load.errors) <= MAX_KEPT
    # Of a block's 5,002 lines that hold a message word, the first and the last 500 are matched: the
    # log's last line is read and kept (the latest one), and the report says how many were not.
    assert "libbitsandbytes_cuda4999.so" in state.bnb.absent
    assert "libbitsandbytes_cuda2500.so" not in state.bnb.absent
    assert all(hits <= MAX_HITS_PER_PATTERN for hits in extractor._hits.values())
    facts = extractor.facts()
    assert 5000 - 2 * MAX_OCCURRENCES_PER_ANCHOR <= facts.source["lines_not_matched"] <= 5002


# ---------------------------------------------------------------------------------------------- reports

_REPORT = json.loads((FUZZ / "report-seed.json").read_text(encoding="utf-8"))


def _replay(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            facts, _header = load_facts(str(path))
        except ReportError:
            return
    from bnbdoctor.doctor import diagnose_facts

    render_json(diagnose_facts(facts)).encode("utf-8")


@FAST
@given(_mutated(_REPORT))
def test_saved_reports_with_an_absurd_value(report: Any) -> None:
    _replay(_dumps(report))


@FAST
@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(["\ud800", "\udce9", "\udfff"])), max_size=50))
def test_serde_text_always_writable(text: str) -> None:
    writable(text).encode("utf-8")
    assert len(writable(text)) == len(text)
    assert json.dumps(to_jsonable({text: [text]}), ensure_ascii=False).encode("utf-8")


def test_lone_surrogates_round_trip_to_writable_text() -> None:
    from bnbdoctor.facts import Facts

    facts = from_dict(Facts, {"source": {"label": "jos\udce9"}, "env": {"PATH\udce9": "/x\ud800"}})
    assert json.dumps(to_jsonable(facts), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("name", ["report-00-long-number.json", "report-01-lone-surrogate.json"])
def test_campaign_reports(name: str) -> None:
    text = (FUZZ / name).read_text(encoding="utf-8")
    with pytest.raises(ReportError):
        parse_report(text, name)


def _with_dependencies(copies: int) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(json.dumps(_REPORT))
    dependencies = report["facts"]["native"]["dependencies"]
    report["facts"]["native"]["dependencies"] = dependencies * copies
    return report


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


def test_a_report_of_fifty_thousand_values_is_refused_in_one_line() -> None:
    """The report campaign's one slow input (1.4 MB): ``facts.native.dependencies`` made a list of 2,000
    entries, 50,000 values, and replaying it took 1.4 s. A report is bounded by its number of values."""
    from bnbdoctor.report_io import MAX_VALUES

    big = _with_dependencies(200)
    assert _values(big) > MAX_VALUES
    with pytest.raises(ReportError, match=r"^big.json: more than 12,000 values \(a report holds about 1,000\)"):
        parse_report(json.dumps(big), "big.json")
    small = _with_dependencies(3)  # three times a real machine's libraries still replays
    assert _values(small) < MAX_VALUES
    parse_report(json.dumps(small), "small.json")  # accepted
    _replay(json.dumps(small))


# ---------------------------------------------------------------------------------------------- fit's model input

_CONFIGS = [json.loads(p.read_text()) for p in sorted(FIT.glob("*.json"))]
_SIZE_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "vocab_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "num_experts",
    "n_routed_experts",
    "moe_intermediate_size",
    "n_shared_experts",
    "first_k_dense_replace",
    "mlp_only_layers",
    "torch_dtype",
    "tie_word_embeddings",
)


@FAST
@given(st.sampled_from(_CONFIGS), st.dictionaries(st.sampled_from(_SIZE_KEYS), ABSURD, min_size=1, max_size=4))
def test_config_sizes_of_any_type(config: dict[str, Any], changes: dict[str, Any]) -> None:
    tensors = approx.tensors_from_config({**config, **changes})
    if tensors is not None:
        assert len(tensors) <= approx.MAX_LAYERS * 12 + 3


@pytest.mark.parametrize("layers", [10**7, 2**64, float("inf"), "9" * 5000])
def test_absurd_layer_counts_are_refused_not_looped(layers: Any) -> None:
    config = {**_CONFIGS[0], "num_hidden_layers": layers, "num_experts": 10**9}
    started = time.perf_counter()
    assert approx.tensors_from_config(config) is None
    assert time.perf_counter() - started < 0.5


def _model_folder(files: dict[str, bytes]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bnbdoctor-fuzz-"))
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder


def _safetensors(header: Any) -> bytes:
    body = _dumps(header).encode("utf-8", "surrogatepass")
    return len(body).to_bytes(8, "little") + body


def _fit(files: dict[str, bytes], quant: str = "4bit") -> None:
    folder = _model_folder(files)
    try:
        host = LiveHost()
        try:
            model = resolve_model(host, str(folder))
        except FitInputError:
            return
        approx.estimate(host, model.config, model.checkpoint_files, quant, None, True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_TINY = next(c for c in _CONFIGS if c.get("hidden_size", 0) < 1024)
_TINY_TENSORS = (approx.tensors_from_config(_TINY) or [])[:8]
_HEADER = {n: {"dtype": d, "shape": s, "data_offsets": [0, 0]} for n, s, d in _TINY_TENSORS}


@FAST
@given(_mutated(_HEADER))
def test_safetensors_headers_with_an_absurd_value(header: Any) -> None:
    _fit({"config.json": _dumps(_TINY).encode(), "model.safetensors": _safetensors(header)})


@FAST
@given(_mutated({"metadata": {"total_size": 1}, "weight_map": {"a.weight": "model-00001-of-00001.safetensors"}}))
def test_index_files_with_an_absurd_value(index: Any) -> None:
    files = {
        "config.json": _dumps(_TINY).encode(),
        "model.safetensors.index.json": _dumps(index).encode("utf-8", "surrogatepass"),
        "model-00001-of-00001.safetensors": _safetensors(_HEADER),
    }
    _fit(files)


@FAST
@given(_mutated(_TINY), st.sampled_from(["4bit", "8bit"]))
def test_configs_with_an_absurd_value(config: Any, quant: str) -> None:
    _fit({"config.json": _dumps(config).encode("utf-8", "surrogatepass")}, quant)


def test_deeply_nested_config_and_header() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    _fit({"config.json": deep})
    _fit({"config.json": _dumps(_TINY).encode(), "model.safetensors": len(deep).to_bytes(8, "little") + deep})


@pytest.mark.parametrize("bundle", sorted((FUZZ / "model").glob("*.json")), ids=lambda p: p.stem)
def test_campaign_model_inputs(bundle: Path) -> None:
    """The bundles the campaign found (config, index, header, cache layout as the readers saw them)."""
    data = json.loads(bundle.read_text(encoding="utf-8"))
    folder = Path(tempfile.mkdtemp(prefix="bnbdoctor-fuzz-"))
    try:
        for name, content in data["files"].items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            raw = content.encode("latin-1", "replace") if name.endswith(".safetensors") else content.encode()
            target.write_bytes(raw)
        host = LiveHost()
        started = time.perf_counter()
        try:
            model = resolve_model(host, str(folder / data["given"]), bool(data.get("trust")))
        except FitInputError:
            return
        approx.estimate(host, model.config, model.checkpoint_files, data["quant"], data.get("dtype"), bool(data["dq"]))
        assert time.perf_counter() - started < 2.0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- manifests

_FIXTURE = ROOT / "platform_fixtures" / "a100-healthy"
_MANIFEST = json.loads((_FIXTURE / "machine.json").read_text(encoding="utf-8"))


@FAST
@given(_mutated(_MANIFEST))
def test_manifests_with_an_absurd_value(manifest: Any) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bnbdoctor-fuzz-"))
    try:
        (folder / "machine.json").write_text(_dumps(manifest), encoding="utf-8", errors="surrogatepass")
        (folder / "root").symlink_to(_FIXTURE / "root")
        try:
            host = FixtureHost(folder)
        except FixtureError:
            return
        host.os_info()
        host.nvml()
        python = host.current_python()
        for record in host.manifest.get("commands") or []:
            host.run(list(record.get("argv") or []) or ["true"])
        for purpose in ("facts", "dlopen", "load"):
            host.run_python(python.executable, "", purpose=purpose)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_manifest_naming_a_path_too_long_for_any_file_system() -> None:
    """The campaign's manifest-00: an interpreter path with a 9,000-character component (ENAMETOOLONG)."""
    folder = Path(tempfile.mkdtemp(prefix="bnbdoctor-fuzz-"))
    try:
        manifest = {**_MANIFEST, "python": {**_MANIFEST["python"], "executable": "/usr/bin/" + "x" * 9000}}
        (folder / "machine.json").write_text(_dumps(manifest), encoding="utf-8")
        (folder / "root").symlink_to(_FIXTURE / "root")
        host = FixtureHost(folder)
        python = host.current_python()
        assert host.run_python(python.executable, "").ok  # the recorded answer, found by name
        assert not host.is_file(python.executable)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
