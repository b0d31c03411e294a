"""The k-bit log families of issue 12 (BNB534-BNB540) and the three outcomes of a log without a known
failure: empty input, a log without an error, and an error no family names (BNB549).

Messages are matched by their structure (the exception type and the fixed words, with classes,
dtypes, devices and paths as variables), so wordings of other releases than the test logs' are
tested here, and near misses that must not match.
"""

from __future__ import annotations

import io

import pytest
from conftest import ROOT

from bnbdoctor.explain import explain_stream, explain_text, render_explain_text
from bnbdoctor.findings import Severity
from bnbdoctor.render.markdown import verdict

OUTCOMES = ROOT / "tests" / "data" / "outcome_logs"


def rule_ids(text: str) -> list[str]:
    return [f.rule_id for f in explain_text(text).findings]


def signatures(text: str) -> list[str]:
    report = explain_text(text)
    return [m.signature for m in report.facts.log.matches] if report.facts.log else []


# ------------------------------------------------------------------------------------------ wordings
@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: No GPU found. A GPU is needed for quantization.",
        "No GPU found. A GPU is needed for quantization.",
        (
            "RuntimeError: None of the available devices `available_devices = None` are supported by the bitsandbytes "
            "version you have installed: `bnb_supported_devices = {'cuda', 'xpu'}`. Please check the docs"
        ),
        (
            "RuntimeError: None of the available devices `available_devices = {'mps'}` are supported by the "
            "bitsandbytes version you have installed: `bnb_supported_devices = {'cuda'}`."
        ),
        (
            "RuntimeError: CUDA is required but not available for bitsandbytes. Please consider installing the "
            "multi-platform enabled version of bitsandbytes"
        ),
        (
            "ImportError: The installed version of bitsandbytes (<0.43.1) requires CUDA, but CUDA is not available. "
            "You may need to install PyTorch with CUDA support or upgrade bitsandbytes to >=0.43.1."
        ),
    ],
)
def test_quantizer_no_gpu_in_every_wording(line: str) -> None:
    assert rule_ids(line)[:1] == ["BNB534"]


@pytest.mark.parametrize(
    ("context", "words"),
    [
        ("torch==2.3.1+cpu", "CPU-only"),
        ("torch.version.cuda = None", "CPU-only"),
        ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU", "driver"),
        (
            "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11070).",
            "initialise",
        ),
        ('File "/Users/me/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 3030', "MPS"),
        ("", "does not show why"),
    ],
)
def test_quantizer_no_gpu_says_which_cause_the_log_points_to(context: str, words: str) -> None:
    text = context + "\n" + "RuntimeError: No GPU found. A GPU is needed for quantization.\n"
    finding = next(f for f in explain_text(text).findings if f.rule_id == "BNB534")
    assert words in finding.title + finding.explanation, (finding.title, finding.explanation)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("TypeError: LlamaForCausalLM.__init__() got an unexpected keyword argument 'load_in_4bit'", "5.0"),
        ("TypeError: __init__() got an unexpected keyword argument 'load_in_8bit'", "load_in_8bit"),
        ("TypeError: __init__() got an unexpected keyword argument\n'load_in_4bit'", "load_in_4bit"),
        ("transformers==4.28.1\nTypeError: __init__() got an unexpected keyword argument 'load_in_4bit'", "predates"),
        ("transformers==5.1.0\nTypeError: X.__init__() got an unexpected keyword argument 'load_in_4bit'", "5.1.0"),
        ("transformers==4.44.2\nTypeError: X.__init__() got an unexpected keyword argument 'load_in_4bit'", "knows it"),
    ],
)
def test_load_in_kbit_keyword_by_transformers_version(text: str, words: str) -> None:
    finding = explain_text(text).findings[0]
    assert finding.rule_id == "BNB535" and words in finding.title + finding.explanation


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: `.to` is not supported for `4-bit` or `8-bit` bitsandbytes models. Please use the model as it is",
        "ValueError: `.to` is not supported for `4-bit` or `8-bit` models. Please use the model as it is",
        "ValueError: `.to` is not supported for `8-bit` bitsandbytes models. Please use the model as it is",
        "ValueError: `.cuda` is not supported for `4-bit` or `8-bit` quantized models. Please use the model as it is",
        "ValueError: Calling `cuda()` is not supported for `4-bit` or `8-bit` quantized models. Please use the model",
        (
            "ValueError: Calling `to()` is not supported for `4-bit` quantized models with the installed version of "
            "bitsandbytes. The current device is `cuda:0`. If you intended to move the model, please install "
            "bitsandbytes >= 0.43.2."
        ),
        "ValueError: You cannot cast a bitsandbytes model in a new `dtype`. Make sure to load the model using",
        "ValueError: `.half()` is not supported for quantized model. Please use the model as it is",
    ],
)
def test_kbit_model_moved_in_every_wording(line: str) -> None:
    assert rule_ids(line)[:1] == ["BNB536"]


def test_accelerate_other_device_in_both_wordings() -> None:
    old = (
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device than the "
        "one you're training on. Make sure you loaded the model on the correct device using for example "
        "`device_map={'':torch.cuda.current_device() or device_map={'':torch.xpu.current_device()}"
    )
    new = old.replace("8-bit precision", "8-bit or 4-bit precision").replace("you're", "you’re")
    assert rule_ids(old)[:1] == rule_ids(new)[:1] == ["BNB537"]


@pytest.mark.parametrize(
    ("line", "eight"),
    [
        ("ValueError: Must flatten tensors with uniform dtype but got torch.float16 and torch.int8", True),
        ("ValueError: Must flatten tensors with uniform dtype but got torch.uint8 and torch.bfloat16", False),
        ("ValueError: Cannot flatten integer dtype tensors", False),
    ],
)
def test_fsdp_integer_storage(line: str, eight: bool) -> None:
    finding = explain_text(line).findings[0]
    assert finding.rule_id == "BNB538" and ("8-bit" in finding.title) is eight


def test_compute_dtype_note_is_info_and_never_an_error() -> None:
    for tail in (" This will lead to slow inference.", " This will lead to slow inference or training speed."):
        text = "UserWarning: Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32 "
        report = explain_text(text + "(default)." + tail)
        assert [(f.rule_id, f.severity) for f in report.findings] == [("BNB539", Severity.INFO)]
        assert report.exit_code() == 0


def test_wsl_ldconfig_noise_is_never_the_root_cause() -> None:
    noise = "/sbin/ldconfig.real: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n"
    failure = (ROOT / "tests" / "data" / "synthetic_logs" / "wsl2_libcuda_not_found.txt").read_text(encoding="utf-8")
    alone, noisy = explain_text(failure), explain_text(noise + failure)
    assert noisy.findings[0].rule_id == alone.findings[0].rule_id != "BNB540"
    assert noisy.findings[-1].rule_id == "BNB540" and noisy.findings[-1].severity is Severity.INFO


def test_near_misses_match_no_k_bit_family() -> None:
    report = explain_text((OUTCOMES / "near_misses.txt").read_text(encoding="utf-8"))
    ours = {"BNB534", "BNB535", "BNB536", "BNB537", "BNB538", "BNB539", "BNB540"}
    assert not ours & {f.rule_id for f in report.findings}


# ------------------------------------------------------------------------------------------ outcomes
@pytest.mark.parametrize("data", [b"", b"\n\n  \n\t\n", b"\r\n\r\n"], ids=["empty", "blank", "crlf-blank"])
def test_empty_input_is_nothing_to_explain(data: bytes) -> None:
    report = explain_stream(io.BytesIO(data), "empty")
    assert not report.findings and report.exit_code() == 0
    text = render_explain_text(report)
    assert "Nothing to explain" in text and "No error in this log" not in text
    assert "Nothing to explain" in verdict(report)


@pytest.mark.parametrize("name", ["training_no_error.txt", "noise_only.txt"])
def test_a_log_without_an_error_says_so(name: str) -> None:
    report = explain_text((OUTCOMES / name).read_text(encoding="utf-8"))
    assert not [f for f in report.findings if f.severity is not Severity.INFO]
    assert "No error in this log" in render_explain_text(report) and report.exit_code() == 0


def test_garbage_is_a_log_without_an_error() -> None:
    report = explain_stream(io.BytesIO(bytes(range(256)) * 500), "garbage")
    assert not report.findings and "No error in this log" in render_explain_text(report)


@pytest.mark.parametrize(
    ("name", "line", "shown"),
    [("foreign_keyerror.txt", 10, "KeyError: 'labels'"), ("foreign_cuda_oom.txt", 8, "OutOfMemoryError")],
)
def test_an_error_no_family_names_is_a_warning_with_its_lines(name: str, line: int, shown: str) -> None:
    report = explain_text((OUTCOMES / name).read_text(encoding="utf-8"))
    assert [f.rule_id for f in report.findings] == ["BNB549"]
    finding = report.findings[0]
    assert finding.severity is Severity.WARNING and finding.log_lines == [line] and shown in finding.title
    assert "bnbdoctor --markdown" in finding.confirm and "bnbdoctor" in finding.confirm
    text = render_explain_text(report)
    assert "No known bitsandbytes failure" not in text and "No error in this log" not in text
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_the_facts_the_log_shows_come_with_an_unnamed_error() -> None:
    report = explain_text((OUTCOMES / "foreign_keyerror.txt").read_text(encoding="utf-8"))
    values = " ".join(e.value for e in report.findings[0].evidence)
    assert "bitsandbytes 0.45.3" in values and "windows" in values


def test_an_unnamed_error_next_to_a_named_one_is_left_out() -> None:
    named = "ValueError: Cannot flatten integer dtype tensors\n"
    assert rule_ids("KeyError: 'labels'\n" + named) == ["BNB538"]


def test_warnings_are_not_errors() -> None:
    text = "UserWarning: torch.utils.checkpoint: please pass in use_reentrant=True\nFutureWarning: deprecated\n"
    assert rule_ids(text) == []
