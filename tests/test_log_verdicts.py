"""The patient's verdict is evidence (issue 24, item 5).

A message in which torch, bitsandbytes, transformers, PEFT or accelerate states the failure is always
reported, with the cause where bnbdoctor knows it, and no inference from the facts contradicts it; a
log that holds an exception, a ``Traceback``, ``Killed``, a fatal signal or a non-zero exit status is
never "no error in this log". The log text below is quoted from the kept logs or from the public
threads named next to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bnbdoctor.explain import explain_text, render_explain_text
from bnbdoctor.findings import Severity
from bnbdoctor.knowledge.signatures import CONSEQUENCE, ROOT, SIGNATURES
from bnbdoctor.report import Report
from bnbdoctor.rules import get_rule

ROOT_DIR = Path(__file__).resolve().parents[1]
LOGS = sorted((ROOT_DIR / "tests" / "data").glob("*_logs/*.txt"))
NO_ERROR = "No error in this log"

#: What says a run failed, written here independently of the log reader: an exception line, a
#: traceback, the shell's "Killed", a fatal signal, a non-zero exit status.
FAILED = re.compile(
    r"^\s*(?:\[rank\d+\]:\s*)?(?:[\w]+\.)*[A-Z]\w*(?:Error|Exception):|Traceback \(most recent call last\)"
    r"|\bKilled\b|Segmentation fault|core dumped|\bSIGKILL\b|\bsignal 9\b"
    r"|exit (?:code|status):? ?-?[1-9]|exitcode: -?[1-9]|exited with code [1-9]|non-zero exit status"
)

#: torch's warning on an RTX 5090 with a wheel built up to sm_90 (https://github.com/xorbitsai/inference/issues/3603).
TORCH_5090 = (
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
    "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
    "If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at "
    "https://pytorch.org/get-started/locally/\n"
)


def _covers(rule_id: str) -> tuple[str, ...]:
    rule = get_rule(rule_id)
    return rule.covers if rule is not None else ()


def failures(report: Report) -> list[str]:
    return [f.rule_id for f in report.findings if f.severity is not Severity.INFO]


def says_no_error(report: Report) -> bool:
    return NO_ERROR in render_explain_text(report)


# ------------------------------------------------------------------------------------------ never "no error"
def _failing_logs() -> list[Path]:
    return [p for p in LOGS if any(FAILED.search(line) for line in p.read_text(encoding="utf-8").splitlines())]


@pytest.mark.parametrize("path", _failing_logs(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_kept_log_that_shows_a_failure_is_never_no_error(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    report = explain_text(text)
    assert failures(report) and not says_no_error(report), path.name


@pytest.mark.parametrize(
    "ending",
    [
        # the shell's report after tqdm's last redraw (https://github.com/PKU-YuanGroup/Video-LLaVA/issues/13)
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed",
        "Killed",
        "bash: line 1:  4321 Killed                  python train.py",
        "Segmentation fault (core dumped)",
        "Fatal Python error: Segmentation fault",
        "Aborted (core dumped)",
        # torchrun when a worker dies (as in tests/data/synthetic_logs/accelerate_kbit_model_on_other_device.txt)
        (
            "E1201 10:02:31.000000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
            "local_rank: 0 (pid: 1567) of binary: /opt/conda/bin/python"
        ),
        "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)",
        "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' returned non-zero exit status 1.",
        "app-1 exited with code 1",
        "Traceback (most recent call last):",
        # torch's message quoted without the exception's name (InvokeAI#7371, a GUI's error text)
        "Image generation fails with `Error(s) in loading state_dict for Flux`.",
        'Error loading "C:\\venv\\lib\\site-packages\\torch\\lib\\cudnn_adv_train64_8.dll" or one of its dependencies.',
        # a build's failures (pip building bitsandbytes from source, its CMake and nvcc)
        "error: subprocess-exited-with-error",
        "  \u2570\u2500> error: command '/usr/bin/gcc' failed with exit code 1",
        "CMake Error at CMakeLists.txt:10 (project):",
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        "/usr/bin/ld: cannot find -lcudart: No such file or directory",
        "csrc/ops.cu:1:10: fatal error: cuda_runtime.h: No such file or directory",
        "LINK : fatal error LNK1181: cannot open input file 'cublas.lib'",
        "make: *** [Makefile:25: cuda12x] Error 1",
        "collect2: error: ld returned 1 exit status",
        "fatal: unable to access 'https://github.com/bitsandbytes-foundation/bitsandbytes.git/': Could not resolve",
        # a native program's failures
        "terminate called after throwing an instance of 'c10::Error'",
        "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        "Process finished with exit code -1073741819 (0xC0000005)",
        # a record an application logged at an error level, framed and not
        "2024-05-01 10:00:00,123 - llamafactory.model - ERROR - Model loading failed",
        "[rank0]: ERROR 12-01 10:11:12 model_runner.py:123] Engine background task failed",
        "CRITICAL:root:Failed to quantize the model",
        "[ERROR] Failed to load model: bitsandbytes",
        "ERROR:Failed to load the model.",
        "ERROR conda.cli.main_run:execute(49): `conda run python train.py` failed. (See above for error)",
    ],
)
def test_how_a_run_ended_badly_is_never_no_error(ending: str) -> None:
    """Appended to a log without an error, and alone: an error finding or BNB549 quoting that very line."""
    quiet = (ROOT_DIR / "tests" / "data" / "outcome_logs" / "training_no_error.txt").read_text(encoding="utf-8")
    for text in (ending + "\n", quiet + ending + "\n"):
        report = explain_text(text)
        assert failures(report) and not says_no_error(report), (ending, [f.rule_id for f in report.findings])
        line = text.count("\n")
        quoted = [f for f in report.findings if line in f.log_lines]
        assert quoted and quoted[0].rule_id == "BNB549", [(f.rule_id, f.log_lines) for f in report.findings]


@pytest.mark.parametrize(
    "line",
    [
        "Process finished with exit code 0",
        "app-1 exited with code 0",
        "exit status 0",
        "UserWarning: torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly.",
        "the OOM killer is configured with vm.overcommit_memory=2",
        "signal handlers installed",
        "KeyboardInterrupt",
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
        # TensorFlow's start-up notice at glog's E level, harmless, in many Colab logs
        (
            "E0000 00:00:1730000000.123456    1234 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to "
            "register factory for plugin cuDNN when one has already been registered"
        ),
        "2024-05-01 10:00:00,123 - app - INFO - ERROR handling is enabled",
        "Process finished with exit code 0 (0x0)",
    ],
)
def test_what_is_not_a_failure_stays_no_error(line: str) -> None:
    report = explain_text(line + "\n")
    assert not failures(report) and says_no_error(report), [f.rule_id for f in report.findings]


def test_an_exception_beside_a_harmless_known_message_is_not_no_error() -> None:
    """Before, a specific family anywhere in the log silenced every unnamed exception line: here the
    override notice (an info finding) hid the KeyError, and the log read "no error"."""
    report = explain_text(
        "WARNING: BNB_CUDA_VERSION=124 environment variable detected; loading libbitsandbytes_cuda124.so.\n"
        "KeyError: 'lm_head'\n"
    )
    assert not says_no_error(report)
    assert any(f.rule_id == "BNB549" and 2 in f.log_lines for f in report.findings)


# ------------------------------------------------------------------------------------------ stated failures
def _stated_lines() -> list[tuple[str, str, str]]:
    """Every line of a kept log that a family stating a failure recognises: (family, log, line)."""
    seen: dict[tuple[str, str], str] = {}
    for path in LOGS:
        report = explain_text(path.read_text(encoding="utf-8"))
        for match in report.facts.log.matches if report.facts.log else []:
            family = SIGNATURES[match.signature]
            if family.role in (ROOT, CONSEQUENCE) and family.specific:
                seen.setdefault((match.signature, match.text), path.name)
    return [(family, log, text) for (family, text), log in sorted(seen.items())]


@pytest.mark.parametrize(("family", "log", "line"), _stated_lines(), ids=lambda v: str(v)[:40])
def test_every_stated_failure_of_a_kept_log_alone_is_reported(family: str, log: str, line: str) -> None:
    """The line alone, and after a log without an error: a finding rests on it (its line among the
    finding's lines or quoted) or comes from a rule that judges the family's catalog entry, or the
    family is not recognised without its context."""
    quiet = (ROOT_DIR / "tests" / "data" / "outcome_logs" / "training_no_error.txt").read_text(encoding="utf-8")
    for text in (line + "\n", quiet + line + "\n"):
        report = explain_text(text)
        number = text.count("\n")
        recognised = [m for m in report.facts.log.matches if m.line == number] if report.facts.log else []
        if family not in {m.signature for m in recognised}:
            continue  # the family needs the lines around it (bitsandbytes' context, a listing after an error)
        resting = [
            f
            for f in report.findings
            if number in f.log_lines
            or any(e.label == f"log line {number}" or e.value == line for e in f.evidence)
            or set(SIGNATURES[family].catalog) & set(_covers(f.rule_id))
        ]
        assert resting, (log, [(f.rule_id, f.log_lines) for f in report.findings])


@pytest.mark.parametrize(
    ("text", "rule_id"),
    [
        # bitsandbytes' own error, without the versions BNB213 needs (bitsandbytes issue #1664): the family found in
        # the corpus (a pre-quantized checkpoint quantized again), which names the 0.46.0 regression too
        ("RuntimeError: Blockwise quantization only supports 16/32-bit floats, but got torch.uint8", "BNB546"),
        # the loader, without the bitsandbytes message around it (tests/data/real_logs/rocm_hip_libraries_missing.txt)
        ("libhipblas.so.0: cannot open shared object file: No such file or directory", "BNB550"),
        # transformers' gate (tests/data/real_logs/transformers_importerror_requires_accelerate_bnb.txt)
        (
            (
                "ImportError: Using `bitsandbytes` 4-bit quantization requires the latest version of bitsandbytes: "
                "`pip install -U bitsandbytes`"
            ),
            "BNB521",
        ),
        ("ValueError: Cannot merge LORA layers when the model is loaded in 8-bit mode", "BNB531"),  # PEFT
        (
            (
                "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device "
                "than the one you're training on."
            ),
            "BNB537",
        ),  # accelerate
        (TORCH_5090, "BNB551"),
    ],
)
def test_what_the_software_says_is_the_finding(text: str, rule_id: str) -> None:
    report = explain_text(text + "\n")
    assert failures(report)[:1] == [rule_id], [(f.rule_id, f.title) for f in report.findings]
    assert report.findings[0].log_lines and report.findings[0].confidence == "high"


def test_a_restatement_gives_the_cause_the_catalog_knows() -> None:
    finding = explain_text("libhipblas.so.0: cannot open shared object file: No such file or directory\n")
    first = finding.findings[0]
    assert first.rule_id == "BNB550" and first.log_lines == [1]
    assert "hipBLAS" in first.explanation  # the catalog entry rocm_hip_libraries_missing
    assert first.references  # its sources


def test_a_stated_failure_another_finding_reports_is_not_restated() -> None:
    for name in ("real_logs/cxxabi_not_found.txt", "synthetic_logs/xpu_sycl_runtime_mismatch.txt"):
        report = explain_text((ROOT_DIR / "tests" / "data" / name).read_text(encoding="utf-8"))
        assert "BNB550" not in [f.rule_id for f in report.findings], name
        assert "BNB550" in [c.rule_id for c in report.passed], name  # what it checks holds: all is reported


def test_the_peft_rounding_warning_is_a_warning_when_restated() -> None:
    """BNB530 reports it; restated in a rule case (BNB550 alone), it stays a warning, never an error."""
    text = (ROOT_DIR / "tests" / "data" / "real_logs" / "peft_merge_lora_into_4bit_rounding_warning.txt").read_text()
    assert failures(explain_text(text)) == ["BNB530"]


# ------------------------------------------------------------------------------------------ never contradicted
def test_torch_saying_the_gpu_is_incompatible_is_reported_without_versions() -> None:
    """The example of the issue: torch's warning was recognised and gave no finding at all."""
    report = explain_text(TORCH_5090)
    assert failures(report) == ["BNB551"] and not says_no_error(report)
    first = report.findings[0]
    assert "RTX 5090 (sm_120)" in first.title and first.log_lines == [1, 2]
    assert any("--index-url https://download.pytorch.org/whl/cu12" in c for c in first.remediation.commands)


def test_an_inference_from_the_arch_list_does_not_overrule_torch() -> None:
    """torch's list holds PTX for an older architecture, which BNB120 counts and torch does not: BNB120
    would pass; torch's statement stands and BNB120 is "not checked", never passed."""
    report = explain_text(
        "torch                    2.6.0+cu124\n" + TORCH_5090.replace("sm_86 sm_90.", "sm_86 sm_90 compute_90.")
    )
    assert failures(report) == ["BNB551"]
    assert "BNB120" not in [c.rule_id for c in report.passed]
    (skipped,) = [c for c in report.skipped if c.rule_id == "BNB120"]
    assert skipped.blocked_by == "BNB551" and "says otherwise" in (skipped.reason or "")


def test_what_assumes_torch_runs_follows_from_torchs_statement() -> None:
    """journald's framing, then torch's own 'no kernel image' error: bitsandbytes' kernels are beside the
    point, BNB504 is listed under torch's statement (https://github.com/Janrupf/stable-diffusion-webui-nix/issues/9)."""
    prefix = "Oct 04 13:19:39 llm sd-webui-forge-start[394]: "
    text = "".join(prefix + line + "\n" for line in TORCH_5090.splitlines()) + (
        prefix + "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    report = explain_text(text)
    assert failures(report) == ["BNB551"]
    assert "BNB504" in [f.rule_id for f in report.findings[0].follows]


def test_when_the_facts_are_there_the_machine_rule_reports_it() -> None:
    """The kept log with torch's version and the GPU: BNB120 judges it, and torch's warning folds into it."""
    text = (ROOT_DIR / "tests" / "data" / "synthetic_logs" / "torch_build_lacks_gpu_arch.txt").read_text()
    assert failures(explain_text(text)) == ["BNB120"]
