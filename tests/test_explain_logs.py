"""The log fact source (bnbdoctor.logs): what a log reveals goes into the probes' fact records, the
same rules judge it, and the ranking puts the root cause first. Messages are matched by their
structure (versions, library names, error families), so variants no test log contains are tested
here too."""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import pkgutil
from types import ModuleType

import pytest

from bnbdoctor.explain import explain_text
from bnbdoctor.knowledge.signatures import SIGNATURES
from bnbdoctor.logs import collectors
from bnbdoctor.logs.clean import ReadStats, read_lines, read_text
from bnbdoctor.logs.collectors import ANCHORS, COLLECTORS, FAMILIES, PATTERNS
from bnbdoctor.logs.extract import extract_text
from bnbdoctor.logs.gpus import compute_capability, find_gpus


def ids(text: str) -> list[str]:
    return [f.rule_id for f in explain_text(text).findings]


# ------------------------------------------------------------------------------------------ reading
def test_lines_are_numbered_as_in_an_editor() -> None:
    text = "a\r\nb\x1b[31mred\x1b[0m\n\nprogress 10%\rprogress 100%\nlast"
    assert list(read_text(text)) == [
        (1, "a"),
        (2, "bred"),
        (3, ""),
        (4, "progress 10%"),
        (5, "progress 100%"),
        (6, "last"),
    ]


def test_html_entities_and_control_bytes_are_cleaned() -> None:
    assert list(read_text("No module named &#39;scipy&#39;\x00\x07!")) == [(1, "No module named 'scipy' !")]


def test_long_lines_are_cut_and_counted() -> None:
    stats = ReadStats()
    lines = list(read_lines(io.BytesIO(b"x" * 10_000 + b"\nshort\n" + b"y" * 9_000), stats, max_line=100))
    assert [(n, len(t)) for n, t in lines] == [(1, 100), (2, 5), (3, 100)]
    assert stats.truncated_lines == 2 and stats.lines == 3


def test_utf16_from_powershell() -> None:
    stats = ReadStats()
    text = "héllo\nOSError: [WinError 193] %1 is not a valid Win32 application\n"
    assert [t for _, t in read_lines(io.BytesIO(text.encode("utf-16")), stats)][1].startswith("OSError")
    assert stats.encoding == "utf-16"


def test_every_pattern_key_has_an_anchor_and_every_signature_is_known() -> None:
    anchored = {i for indices in ANCHORS.values() for i in indices}
    assert anchored == set(range(len(PATTERNS)))
    for pattern in PATTERNS:
        assert all(any(anchor.decode() in key for anchor in ANCHORS) for key in pattern.keys), pattern.name
    for sig in SIGNATURES.values():
        assert sig.role in ("root", "consequence", "hint", "noise", "fact")


def _collector_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{collectors.__name__}.{info.name}")
        for info in pkgutil.iter_modules(collectors.__path__)
        if info.name != "base"
    ]


def test_every_collector_module_is_wired_and_declares_each_pattern_once() -> None:
    modules = _collector_modules()
    assert sorted(id(m.COLLECTOR) for m in modules) == sorted(id(c) for c in COLLECTORS)
    names = [p.name for p in PATTERNS]
    assert len(names) == len(set(names)), "a pattern name is declared twice"
    handlers = [f.handler for f in FAMILIES]
    assert len({id(h) for h in handlers}) == len(handlers), "a handler is declared for two patterns"
    for module in modules:
        for family in module.COLLECTOR.families:
            assert family.signature is None or family.signature in SIGNATURES, family.pattern.name
            if family.pattern.name == family.signature:  # recognises(): the family is its signature
                continue
            # collects(): the family is named after its handler, in its own module
            assert family.handler.__module__ == module.__name__, family.pattern.name
            assert getattr(family.handler, "__name__", "") == family.pattern.name, family.pattern.name


def test_every_handler_has_a_pattern_and_records_signatures_by_constant() -> None:
    declared = {(f.handler.__module__, getattr(f.handler, "__name__", "")) for f in FAMILIES}
    for module in _collector_modules():
        public = [
            f
            for name, f in inspect.getmembers(module, inspect.isfunction)
            if f.__module__ == module.__name__ and not name.startswith("_")
        ]
        undeclared = [f.__name__ for f in public if (f.__module__, f.__name__) not in declared]
        assert not undeclared, f"{module.__name__}: public functions that no family runs: {undeclared}"
        literal = [
            ast.unparse(call)
            for call in ast.walk(ast.parse(inspect.getsource(module)))
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("match", "seen", "count")
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "state"
            and any(isinstance(arg, ast.Constant) for arg in call.args[:1])
        ]
        assert not literal, f"{module.__name__} names a family by a string, not its constant: {literal}"


# ------------------------------------------------------------------------------------------ facts
def test_loader_abi_error_fills_native_and_load_facts() -> None:
    facts = extract_text(
        "CUDA SETUP: Loading binary /opt/venv/lib/python3.9/site-packages/bitsandbytes/libbitsandbytes_cuda117.so...\n"
        "/lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by "
        "/opt/venv/lib/python3.9/site-packages/bitsandbytes/libbitsandbytes_cuda117.so)\n"
    )
    platform, python, native, load = facts.platform, facts.python, facts.native, facts.load
    assert platform is not None and python is not None and native is not None and load is not None
    assert platform.os == "linux"
    assert python.version == "3.9"
    bnb = python.bitsandbytes
    assert bnb.installed and bnb.location == "/opt/venv/lib/python3.9/site-packages/bitsandbytes" and bnb.has_metadata
    assert bnb.native_libraries == ["libbitsandbytes_cuda117.so"] and bnb.legacy_cuda_setup
    need = native.abi[0]
    assert (need.library, need.provider, need.missing) == ("libstdc++.so.6", "/lib64/libstdc++.so.6", ["CXXABI_1.3.9"])
    assert native.selection is not None and native.selection.loaded_file == "libbitsandbytes_cuda117.so"
    assert load.ok is False and load.error is not None and "CXXABI_1.3.9" in load.error
    assert facts.source["kind"] == "log"


def test_versions_gpus_and_platform_from_a_diagnostics_printout() -> None:
    facts = extract_text("""=================== bitsandbytes v0.48.2 ===================
Platform: Linux-5.15.133.1-microsoft-standard-WSL2-x86_64-with-glibc2.35
  libc: glibc-2.35
Python: 3.12.12
PyTorch: 2.8.0+cu126
  CUDA: 12.6
  HIP: N/A
Related packages:
  accelerate: 1.10.1
  peft: 0.9.0
  transformers: 4.57.1
  triton: 3.4.0
GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-0000)
""")
    platform, python, gpu = facts.platform, facts.python, facts.gpu
    assert platform is not None and python is not None and gpu is not None
    assert (platform.os, platform.arch, platform.libc_version, platform.wsl) == ("linux", "x86_64", "2.35", 2)
    assert python.version == "3.12.12"
    assert (python.torch.version, python.torch.cuda) == ("2.8.0+cu126", "12.6")
    assert python.bitsandbytes.version == "0.48.2"
    assert python.packages == {"accelerate": "1.10.1", "peft": "0.9.0", "transformers": "4.57.1", "triton": "3.4.0"}
    assert [(d.name, d.cc) for d in gpu.devices] == [("NVIDIA GeForce RTX 3090", (8, 6))]


def test_windows_paths_and_a_windows_python() -> None:
    facts = extract_text(
        r"  File \"C:\Users\a\AppData\Local\Programs\Python\Python310\lib\site-packages"
        r"\bitsandbytes\cextension.py\", line 20"
    )
    assert facts.platform is not None and facts.platform.os == "windows"
    python = facts.python
    assert python is not None and python.version == "3.10"
    location = python.bitsandbytes.location
    assert location is not None and location.endswith(r"site-packages\bitsandbytes")


def test_unknown_facts_stay_unknown() -> None:
    facts = extract_text(
        "UserWarning: Merge lora module to 4-bit linear may get different generations due to rounding errors."
    )
    assert facts.platform is None and facts.gpu is None and facts.native is None
    python = facts.python
    assert python is not None
    assert not python.torch.installed and python.torch.error == "not shown in the log"
    assert python.bitsandbytes.version is None
    assert {run.name for run in facts.probes if run.skipped} >= {"platform", "gpu", "native"}


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("Tesla K80", (3, 7)),
        ("NVIDIA GeForce GTX 980 Ti", (5, 2)),
        ("Tesla P40", (6, 1)),
        ("Tesla V100-SXM2-16GB", (7, 0)),
        ("Tesla T4", (7, 5)),
        ("NVIDIA GeForce GTX 1650", (7, 5)),
        ("NVIDIA A100-SXM4-80GB", (8, 0)),
        ("NVIDIA RTX A6000", (8, 6)),
        ("NVIDIA GeForce RTX 4090", (8, 9)),
        ("NVIDIA H100 80GB HBM3", (9, 0)),
        ("NVIDIA GeForce GTX 750 Ti", (5, 0)),
    ],
)
def test_gpu_names_map_to_compute_capability(name: str, cc: tuple[int, int]) -> None:
    assert compute_capability(name) == cc


def test_gpu_lines_in_their_usual_shapes() -> None:
    assert find_gpus("GPU 1: Tesla T4 (UUID: GPU-123)")[0][:2] == ("Tesla T4", 1)
    assert find_gpus("|   0  Tesla K80                On   | 00000000:00:1E.0 Off |")[0].cc == (3, 7)
    assert find_gpus("loading model on NVIDIA GeForce RTX 3060 Ti ...")[0].cc == (8, 6)
    assert find_gpus("import torch; x = 3") == []


@pytest.mark.parametrize(
    ("line", "name", "cc"),
    [
        ("Found GPU0 NVIDIA GeForce GT 710 which is of cuda capability 3.5.", "NVIDIA GeForce GT 710", (3, 5)),
        ("Found GPU1 GRID K520 which is of cuda capability 3.0.", "GRID K520", (3, 0)),
        ("Quadro K2200, 5.0", "Quadro K2200", (5, 0)),
        ("0, NVIDIA GeForce RTX 3090, 8.6", "NVIDIA GeForce RTX 3090", (8, 6)),
    ],
)
def test_a_printed_compute_capability_covers_names_the_table_does_not_know(
    line: str, name: str, cc: tuple[int, int]
) -> None:
    assert [(g.name, g.cc) for g in find_gpus(line)] == [(name, cc)]
    assert find_gpus("name, compute_cap") == []


def test_a_kernel_error_on_a_gpu_the_log_shows_is_the_machine_rule() -> None:
    report = explain_text(
        "$ nvidia-smi --query-gpu=name,compute_cap --format=csv\nname, compute_cap\n"
        "Quadro K2200, 5.0\nCUDA error: no kernel image is available for execution on the device\n"
    )
    assert [f.rule_id for f in report.findings] == ["BNB103"]


def test_collect_env_shows_torchs_build_and_glibc() -> None:
    facts = extract_text(
        "PyTorch version: 2.1.0\nCUDA used to build PyTorch: 12.1\nROCM used to build PyTorch: N/A\n"
        "Libc version: glibc-2.35\nGPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB\n"
        '  File "/usr/lib/python3/dist-packages/torch/__init__.py", line 1\n'
    )
    python, platform = facts.python, facts.platform
    assert python is not None and platform is not None
    assert (python.torch.version, python.torch.cuda) == ("2.1.0", "12.1")
    assert (platform.os, platform.libc_version) == ("linux", "2.35")
    rocm = extract_text("CUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.0.32830-d62f6a171\n").python
    assert rocm is not None
    assert (rocm.torch.version, rocm.torch.hip, rocm.torch.cuda) == (None, "6.0", None)
    cpu = explain_text(
        "CUDA used to build PyTorch: None\n"
        "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n"
        "Could not load bitsandbytes native library: 'NoneType' object has no attribute 'split'\n"
    )
    assert [f.rule_id for f in cpu.findings] == ["BNB202"]


def test_ldd_version_is_the_glibc_version() -> None:
    facts = extract_text(
        "$ ldd --version\nldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\n/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    )
    platform = facts.platform
    assert platform is not None
    assert (platform.os, platform.libc, platform.libc_version) == ("linux", "glibc", "2.35")


def test_glibc_234_need_pins_the_release_line() -> None:
    facts = extract_text(
        "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by "
        "/opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda128.so)"
    )
    assert facts.python is not None and facts.python.bitsandbytes.version == "0.45.x"
    report = explain_text(
        "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by "
        "/opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda128.so)"
    )
    first = report.findings[0]
    assert first.rule_id == "BNB307" and "0.46.0" in first.remediation.text and "None" not in first.title


# ------------------------------------------------------------------------------------------ judging
def test_advice_text_quoting_an_error_is_not_the_error() -> None:
    assert "BNB505" not in ids(
        "If you get `CUDA error: invalid device function` errors, the above might be the "
        "cause and the solution is to make sure only one ['libcudart.so'] in the paths"
    )


def test_absence_is_never_concluded_from_a_log() -> None:
    # torch without a local version suffix, a GPU, an old bitsandbytes: the log does not show CPU torch,
    # missing scipy, missing torch or an uncompiled bitsandbytes, so none of those may be reported.
    found = ids("bitsandbytes==0.40.0\ntorch 2.1.0\nGPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n")
    assert not {"BNB201", "BNB202", "BNB203", "BNB208", "BNB308", "BNB309"} & set(found)
    assert "BNB208" in ids("bitsandbytes==0.40.0\nModuleNotFoundError: No module named 'scipy'\n")


def test_root_cause_before_symptoms() -> None:
    report = explain_text(
        "CUDA SETUP: Required library version not found: libbitsandbytes_cuda102.so. "
        "Maybe you need to compile it from source?\n"
        "CUDA SETUP: Defaulting to libbitsandbytes_cpu.so...\n"
        "/usr/lib/python3.10/site-packages/bitsandbytes/cextension.py:34: UserWarning: The installed version of "
        "bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit multiplication, and GPU quantization "
        "are unavailable.\n"
        "AttributeError: 'NoneType' object has no attribute 'cadam32bit_grad_fp32'\n"
    )
    order = [(f.rule_id, f.severity.value) for f in report.findings]
    assert order[0] == ("BNB516", "error")
    assert ("BNB519", "info") in order and ("BNB520", "info") in order
    assert "consequence" in report.findings[-1].explanation


def test_an_unexplained_symptom_is_the_failure() -> None:
    report = explain_text("AttributeError: 'NoneType' object has no attribute 'cquantize_blockwise_fp16_nf4'")
    assert [(f.rule_id, f.severity.value) for f in report.findings] == [("BNB520", "error")]


def test_noise_only_is_not_a_failure() -> None:
    report = explain_text(
        "The following directories listed in your path were found to be non-existent: {PosixPath('/env/python')}\n"
    )
    assert [(f.rule_id, f.severity.value, f.confidence) for f in report.findings] == [("BNB515", "info", "high")]
    assert report.exit_code() == 0


def test_a_twin_folds_into_the_machine_rule_that_fires() -> None:
    report = explain_text(
        "Found GPU0 NVIDIA GeForce GTX 980 Ti which is of cuda capability 5.2.\n"
        "Error no kernel image is available for execution on the device at line 479 in file "
        "D:\\ai\\tool\\bitsandbytes\\csrc\\ops.cu\n"
    )
    assert [f.rule_id for f in report.findings] == ["BNB103"]
    assert any("no kernel image" in e.value for e in report.findings[0].evidence)


def test_several_failures_in_one_log_are_all_reported() -> None:
    found = ids(
        "/lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by "
        "/v/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so)\n"
        "UserWarning: Merge lora module to 4-bit linear may get different generations due to rounding errors.\n"
    )
    assert found[:2] == ["BNB306", "BNB530"]


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("4.44.0", "under-packing bug (#46823)"),
        ("5.16.1", "fixed in 5.18.0"),
        ("5.20.0", "Not enough GPU memory"),
        (None, "too little GPU memory, or an under-packing bug"),
    ],
)
def test_dispatch_error_says_which_cause_by_transformers_version(version: str | None, words: str) -> None:
    text = (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to "
        "fit the quantized model.\n"
    )
    if version:
        text = f"transformers=={version}\n" + text
    first = explain_text(text).findings[0]
    assert first.rule_id == "BNB450" and words in first.title
    upgrade = any("transformers>=5.18.0" in c for c in first.remediation.commands)
    assert upgrade == (version is not None and version < "5.18")


def test_the_misnamed_offload_option_leads_when_it_follows_the_dispatch_error() -> None:
    report = explain_text(
        "ValueError: Some modules are dispatched on the CPU or the disk. ... you need to set "
        "`load_in_8bit_fp32_cpu_offload=True` and pass a custom `device_map`\n"
        "TypeError: __init__() got an unexpected keyword argument 'load_in_8bit_fp32_cpu_offload'\n"
    )
    assert [(f.rule_id, f.severity.value) for f in report.findings] == [("BNB451", "error"), ("BNB450", "warning")]


def test_wsl2_libcuda_is_the_machine_rule_with_the_export() -> None:
    report = explain_text(
        "Linux DESKTOP 5.15.133.1-microsoft-standard-WSL2 x86_64\n"
        "CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver installed?\n"
    )
    first = report.findings[0]
    assert first.rule_id == "BNB107"
    assert "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH" in first.remediation.commands


def test_every_finding_says_how_sure_it_is_and_what_to_run() -> None:
    report = explain_text("OSError: [WinError 193] %1 is not a valid Win32 application\n")
    for finding in report.findings:
        assert finding.confidence in ("high", "medium", "low")
        assert finding.confirm[-1] == "bnbdoctor" and finding.rank


def test_an_override_rejected_by_050_is_reported_by_the_machine_rule() -> None:
    first = explain_text(
        "RuntimeError: BNB_CUDA_VERSION='': value must be digits only (e.g. '124' for 12.4)."
    ).findings[0]
    assert first.rule_id == "BNB302" and first.severity.value == "error"
    assert "0.50" in first.title and "unset BNB_CUDA_VERSION" in first.remediation.commands


def test_a_missing_openmp_runtime_is_a_system_library() -> None:
    report = explain_text(
        "bitsandbytes library load error: libgomp.so.1: cannot open shared object file: No such file or directory"
    )
    assert report.facts.platform is not None and report.facts.platform.os == "linux"
    assert [f.rule_id for f in report.findings] == ["BNB316"]


def test_truncated_nvidia_smi_names_still_give_a_compute_capability() -> None:
    assert find_gpus("|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |")[0].cc == (6, 1)


def test_pip_s_error_lines_are_errors() -> None:
    """pip prints its failures as ``ERROR: ...`` with no exception (bitsandbytes#104, a misspelt package): the log
    is never "no error", and the line is quoted; its resolver's notice about conflicts it ignored is not one."""
    pasted = (
        "Looking in indexes: https://pypi.org/simple, https://us-python.pkg.dev/colab-wheels/public/simple/\n"
        "ERROR: Could not find a version that satisfies the requirement bitsandbyte (from versions: none)\n"
        "ERROR: No matching distribution found for bitsandbyte\n"
    )
    report = explain_text(pasted)
    assert report.findings, "a pip error is an error"
    quoted = [e.value for f in report.findings for e in f.evidence]
    assert "ERROR: No matching distribution found for bitsandbyte" in quoted
    notice = (
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.\n"
        "Successfully installed bitsandbytes-0.45.5\n"
    )
    assert explain_text(notice).findings == []


def test_comfyuis_banner_gives_the_torch_version() -> None:
    """ComfyUI prints ``pytorch version: 2.4.1+cpu`` at start-up, in every log its users paste."""
    report = explain_text(
        "Total VRAM 16308 MB, total RAM 16308 MB\npytorch version: 2.4.1+cpu\nSet vram state to: DISABLED\n"
    )
    assert report.facts.python is not None and report.facts.python.torch is not None
    assert report.facts.python.torch.version == "2.4.1+cpu"
    assert report.facts.python.torch.cuda is None
