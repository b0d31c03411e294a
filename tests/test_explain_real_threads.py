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
        # "libbitsandbytes_cpu.so: undefined symbol:" with the symbol wrapped onto the next line
        ("h2oai/h2ogpt/issues/432", "BNB519", "cpu_lib_undefined_symbol_cget_col_row_stats"),
        # 0.40-0.41's warning spells the option bnb_4bit_compute_type
        ("h2oai/h2ogpt/issues/682", "BNB539", "bnb_4bit_compute_dtype_fp32_slow_warning"),
        # the legacy loader's "CUDA SETUP: CUDA 10.0 not supported", behind "> " quoting, the list flattened
        ("LianjiaTech/BELLE/issues/376", "BNB516", "cuda_lt_11_unsupported"),
        # transformers' "Calling `to()` is not supported for `4-bit` ..." with its backticks lost to Markdown
        ("ROCm/bitsandbytes/issues/59", "BNB536", "kbit_model_to_device_unsupported"),
        # macOS' "dlopen(.../libbitsandbytes_cpu.so, 0x0006): tried: ..." cut before its reason (also a Markdown link)
        ("bitsandbytes-foundation/bitsandbytes/issues/485", "BNB510", "macos_apple_silicon_no_native_lib"),
        ("bitsandbytes-foundation/bitsandbytes/issues/252", "BNB510", "macos_apple_silicon_no_native_lib"),
        # "undefined symbol: cget_col_row_stats" without the library's name (an issue title): the CPU library
        ("axolotl-ai-cloud/axolotl/issues/1802", "BNB519", "cpu_lib_undefined_symbol_cget_col_row_stats"),
        # only the "CUDA Setup failed" RuntimeError's second sentence (an issue title), a VS Code notebook header
        ("AUTOMATIC1111/stable-diffusion-webui/issues/14206", "BNB520", "cuda_setup_failed_despite_gpu_available"),
        # the legacy import probe's "'NoneType' object has no attribute 'cadam32bit_grad_fp32'" without its warning
        ("maitrix-org/llm-reasoners/issues/45", "BNB519", "compiled_without_gpu_support"),
        # "No module named 'bit" cut at the paste's end, raised inside bitsandbytes' cuda_setup: one of its modules
        ("kohya-ss/sd-scripts/issues/1062", "BNB216", "mixed_bnb_distributions_stale_files"),
        # "cannot import name ... from 'bitsandbytes.cuda_setup.main'" in a fresh `python -m bitsandbytes`: on disk
        ("bitsandbytes-foundation/bitsandbytes/issues/571", "BNB216", "mixed_bnb_distributions_stale_files"),
        # CUDA 10.0 detected on the paths beside a compute capability 8.0 GPU: another install's runtime
        ("bitsandbytes-foundation/bitsandbytes/issues/234", "BNB516", "conda_env_vs_system_cuda_mixup"),
        # a "CUDA version" of 6.2 in bitsandbytes' CUDASpecs is a ROCm torch's HIP version read as CUDA's (issue 24)
        ("huggingface/transformers/issues/35442", "BNB558", "rocm_hip_version_read_as_cuda"),
        # the library for the CUDA version missing from a source checkout (not site-packages): not built for it
        ("bitsandbytes-foundation/bitsandbytes/issues/427", "BNB516", "source_build_native_lib_missing"),
        # compute capability 8.7 (only a Jetson Orin has it) and no library for its CUDA: no build is for L4T
        ("bitsandbytes-foundation/bitsandbytes/issues/232", "BNB516", "jetson_l4t_aarch64_wheel_mismatch"),
        ("bitsandbytes-foundation/bitsandbytes/issues/221", "BNB516", "jetson_l4t_aarch64_wheel_mismatch"),
        # "NVIDIA TX2+jetpack 5+Ubuntu20.4: CUDA Setup failed despite GPU being available": a Jetson, as people write it
        ("bitsandbytes-foundation/bitsandbytes/issues/1154", "BNB520", "jetson_l4t_aarch64_wheel_mismatch"),
        # the legacy compile instructions' "CUDA_VERSION=124", a CUDA no legacy wheel shipped a library for: missing
        ("bitsandbytes-foundation/bitsandbytes/issues/1193", "BNB516", "cuda_binary_missing_for_torch_cuda_version"),
        # ... but "CUDA_VERSION=116 make cuda11x", which the wheels shipped, says nothing of which failure it was
        ("bitsandbytes-foundation/bitsandbytes/issues/463", "BNB520", "cuda_setup_failed_despite_gpu_available"),
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
        "CUDA SETUP: CUDA 11.8 not supported. Please use a different CUDA version.",
        "Calling to() on a 4-bit quantized model is not supported",
        "OSError: dlopen(/usr/local/lib/libfoo.so, 0x0006): tried: '/usr/local/lib/libfoo.so' (no such file)",
        "ImportError: /usr/lib/libfoo.so: undefined symbol: cget_col_row_stats_of_foo_v2x",
        "OSError: libtorch_cuda.so: undefined symbol: cudaGetDriverEntryPoint",
        (
            '  File "/venv/lib/site-packages/bitsandbytes/cuda_setup/main.py", line 21, in <module>\n'
            "ModuleNotFoundError: No module named 'bit'"
        ),
    ],
)
def test_near_misses_of_the_older_wordings(line: str) -> None:
    report = explain_text(line + "\n")
    assert {f.rule_id for f in report.findings}.isdisjoint(
        {"BNB510", "BNB516", "BNB519", "BNB521", "BNB536", "BNB537"}
    ), report.findings


# ------------------------------------------------------------------- errors outside bitsandbytes, quoted
@pytest.mark.parametrize(
    ("thread", "quoted"),
    [
        # an exception inside backticks or Markdown bold, after prose, after a label, after CJK prose
        ("huggingface/peft/issues/80", "RuntimeError: element 0 of tensors does not require grad"),
        ("unslothai/unsloth/issues/454", "RuntimeError: element 0 of tensors does not require grad"),
        ("oobabooga/text-generation-webui/issues/42", "RuntimeError: probability tensor contains either inf"),
        ("CoffeeVampir3/ez-trainer/issues/1", "ImportError: cannot import name 'prepare_model_for_kbit_training'"),
        ("hiyouga/LlamaFactory/issues/2268", "RuntimeError: element 0 of tensors does not require grad"),
        ("hiyouga/LlamaFactory/issues/3324", "RuntimeError: element 0 of tensors does not require grad"),
        ("baichuan-inc/Baichuan2/issues/48", "RuntimeError: probability tensor contains either `inf`"),
        # ComfyUI's "!!! Exception during processing !!! <message>" before a cut traceback
        ("aidenli/ComfyUI_NYJY/issues/21", "!!! Exception during processing !!! Cannot copy out of meta tensor"),
        # the bare "No module named ..." under transformers' "because of the following error"
        ("ROCm/bitsandbytes/issues/60", "No module named 'triton._C.libtriton.triton'"),
        # "CUDA out of memory" behind axolotl's logger prefix, no exception line after it: not the traceback header
        ("axolotl-ai-cloud/axolotl/issues/998", "CUDA out of memory. Tried to allocate 28.00 MiB"),
    ],
)
def test_an_unnamed_error_is_quoted_from_where_the_paste_has_it(thread: str, quoted: str) -> None:
    report = explain_text(pasted(thread))
    unnamed = [f for f in report.findings if f.rule_id == "BNB549"]
    shown = [(f.rule_id, f.title) for f in report.findings]
    assert unnamed and any(quoted in e.value for e in unnamed[0].evidence), shown
    assert quoted in said(report)


@pytest.mark.parametrize(
    "line",
    [
        "    except ImportError:",
        "try: import bitsandbytes; except ImportError: pass",
        "I think the ValueError comes from the config.",
        "the tensor_Error: field of the config",
        "A matching Triton is not available. Error caught was: No module named 'triton'",
        "ComfyUI: Exception during processing is logged with three exclamation marks",
    ],
)
def test_prose_and_code_that_name_an_exception_are_not_errors(line: str) -> None:
    report = explain_text(line + "\n")
    assert not any(f.rule_id == "BNB549" for f in report.findings), [(f.rule_id, f.title) for f in report.findings]


def test_the_unnamed_error_comes_before_a_finding_on_facts_alone() -> None:
    """The CUBLAS error no family names is the failure as far as the log goes: before the legacy-setup warning that
    rests on the bitsandbytes-0.37.1 folder name alone (the ranking's root tier)."""
    report = explain_text(pasted("bitsandbytes-foundation/bitsandbytes/issues/205"))
    assert top(report)[0] == "BNB549", [(f.rule_id, f.rank) for f in report.findings]
    assert "CUBLAS_STATUS_INVALID_VALUE" in report.findings[0].title
