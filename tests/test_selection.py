"""Library selection per bitsandbytes release family, against the behaviour documented from the
real cextension.py / cuda_setup at each tag (bnb_internals.md §1.3-1.4) and the real file lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bnbdoctor.knowledge.releases import kernel_runs_on, nearest_recorded_wheel, recorded_wheels
from bnbdoctor.knowledge.selection import (
    LibrarySelection,
    SelectionInput,
    override_reaching,
    override_variable,
    tag_misbuilt,
    underlying_selection,
)


def select(*, shipped: list[str], **inputs: Any) -> LibrarySelection | None:
    """The predicted choice for these inputs (``shipped`` as the list a test writes)."""
    return SelectionInput(shipped=tuple(shipped), **inputs).select()


def files(version: str, os_name: str = "linux") -> list[str]:
    wheel = next(w for w in recorded_wheels() if w.version == version and w.os == os_name)
    return list(wheel.libraries)


@pytest.mark.parametrize(
    ("torch_cuda", "loaded"),
    [
        ("12.9", "libbitsandbytes_cuda128.so"),
        ("12.0", "libbitsandbytes_cuda121.so"),
        ("11.7", "libbitsandbytes_cuda118.so"),
        ("13.1", "libbitsandbytes_cuda130.so"),
        ("12.4", "libbitsandbytes_cuda124.so"),
    ],
)
def test_050_nearest_same_major(torch_cuda: str, loaded: str) -> None:
    sel = select(
        bnb_version="0.50.2",
        os_name="linux",
        shipped=files("0.50.2"),
        torch_cuda=torch_cuda,
        gpu_available=True,
        highest_cc=(8, 0),
    )
    assert sel is not None and sel.loaded_file == loaded and sel.outcome == "loads"
    if loaded != f"libbitsandbytes_cuda{torch_cuda.replace('.', '')}.so":
        assert sel.message and sel.message.startswith(f"No prebuilt binary for CUDA {torch_cuda}")


def test_050_no_fallback_across_majors() -> None:
    sel = select(
        bnb_version="0.50.2",
        os_name="linux",
        shipped=files("0.50.2"),
        torch_cuda="10.2",
        gpu_available=True,
        highest_cc=(7, 0),
    )
    assert sel is not None and sel.outcome == "error_on_first_call" and sel.loaded_file is None
    assert sel.message == "No compatible CUDA binary found at libbitsandbytes_cuda102.so"


def test_050_empty_override_is_rejected() -> None:
    sel = select(
        bnb_version="0.50.0",
        os_name="linux",
        shipped=files("0.50.2"),
        torch_cuda="12.1",
        gpu_available=True,
        highest_cc=(8, 0),
        bnb_cuda_version="",
    )
    assert sel is not None and sel.outcome == "override_error"
    assert sel.message == "BNB_CUDA_VERSION='': value must be digits only (e.g. '124' for 12.4)."


def test_050_override_to_missing_version() -> None:
    sel = select(
        bnb_version="0.50.2",
        os_name="linux",
        shipped=files("0.50.2"),
        torch_cuda="12.1",
        gpu_available=True,
        highest_cc=(8, 0),
        bnb_cuda_version="117",
    )
    assert sel is not None and sel.expected_file == "libbitsandbytes_cuda117.so" and not sel.exists


def test_049_rocm_714_becomes_84() -> None:
    sel = select(
        bnb_version="0.49.2",
        os_name="linux",
        shipped=files("0.49.2"),
        torch_cuda=None,
        torch_hip="7.14.0",
        gpu_available=True,
        highest_cc=None,
    )
    assert sel is not None and sel.expected_file == "libbitsandbytes_rocm84.so"


def test_045_missing_binary_falls_back_to_cpu() -> None:
    sel = select(
        bnb_version="0.45.5",
        os_name="linux",
        shipped=files("0.45.5"),
        torch_cuda="12.9",
        gpu_available=True,
        highest_cc=(9, 0),
    )
    assert sel is not None and sel.outcome == "cpu_fallback" and sel.loaded_file == "libbitsandbytes_cpu.so"


def test_041_nocublaslt_override_slicing_bug() -> None:
    sel = select(
        bnb_version="0.41.1",
        os_name="linux",
        shipped=files("0.41.1"),
        torch_cuda="11.8",
        gpu_available=True,
        highest_cc=(6, 1),
        bnb_cuda_version="122",
    )
    assert sel is not None and sel.expected_file == "libbitsandbytes_cuda118_nocubla122.so"
    assert sel.outcome == "import_error"


def test_043_strip_digits_override_bug() -> None:
    sel = select(
        bnb_version="0.43.3",
        os_name="linux",
        shipped=files("0.43.3"),
        torch_cuda="12.4",
        gpu_available=True,
        highest_cc=(7, 0),
        bnb_cuda_version="124",
    )
    assert sel is not None and sel.expected_file == "libbitsandbytes_cuda124_nocublaslt124.so"


def test_windows_suffix_and_cpu_when_no_gpu() -> None:
    sel = select(
        bnb_version="0.50.2",
        os_name="windows",
        shipped=files("0.50.2", "windows"),
        torch_cuda="12.1",
        gpu_available=True,
        highest_cc=(8, 6),
    )
    assert sel is not None and sel.loaded_file == "libbitsandbytes_cuda121.dll"
    cpu = select(
        bnb_version="0.50.2",
        os_name="linux",
        shipped=files("0.50.2"),
        torch_cuda=None,
        gpu_available=False,
        highest_cc=None,
    )
    assert cpu is not None and cpu.outcome == "cpu_library" and cpu.loaded_file == "libbitsandbytes_cpu.so"


def test_live_bitsandbytes_on_this_machine_selects_cpu(bnb_dir: Path) -> None:
    shipped = sorted(p.name for p in bnb_dir.iterdir() if p.name.startswith("libbitsandbytes"))
    sel = select(
        bnb_version="0.50.2", os_name="linux", shipped=shipped, torch_cuda=None, gpu_available=False, highest_cc=None
    )
    assert sel is not None and sel.loaded_file == "libbitsandbytes_cpu.so" and sel.exists


def test_kernel_compatibility_rules() -> None:
    wheel = nearest_recorded_wheel("0.46.1", "linux")
    assert wheel is not None and wheel.version == "0.46.1"
    cu128 = wheel.libraries["libbitsandbytes_cuda128.so"]
    assert not kernel_runs_on(cu128, (7, 0))  # V100: sm_70 is missing from 0.46.1's CUDA 12.8 build
    assert kernel_runs_on(cu128, (8, 6)) and kernel_runs_on(cu128, (8, 7))  # sm_86 cubin runs on 8.7
    newest = nearest_recorded_wheel("0.50.0", "linux")
    assert newest is not None
    cu121 = newest.libraries["libbitsandbytes_cuda121.so"]
    assert kernel_runs_on(cu121, (12, 0))  # PTX compute_90 JIT-compiles forward
    assert not kernel_runs_on(cu121, (5, 2))
    same_minor = nearest_recorded_wheel("0.45.0", "linux")
    assert same_minor is not None and same_minor.version == "0.45.5"


def _inputs(version: str, **kw: object) -> SelectionInput:
    base: dict[str, object] = {
        "bnb_version": version,
        "os_name": "linux",
        "shipped": tuple(files(version)),
        "torch_cuda": "12.6",
        "torch_hip": None,
        "torch_xpu": None,
        "gpu_available": True,
        "highest_cc": (8, 6),
    }
    base.update(kw)
    return SelectionInput(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("version", "torch_cuda", "override", "in_force", "without"),
    [
        # 0.44.1 ships nothing for 12.6: the override loads cuda117, without it the CPU fallback.
        ("0.44.1", "12.6", "117", "libbitsandbytes_cuda117.so", "cpu_fallback"),
        # 0.42.0 has no 11.6 build: without the override the import fails.
        ("0.42.0", "11.6", "117", "libbitsandbytes_cuda117.so", "import_error"),
        ("0.50.2", "12.1", "117", None, "loads"),
    ],
)
def test_selection_without_the_override(
    version: str, torch_cuda: str, override: str, in_force: str | None, without: str
) -> None:
    inputs = _inputs(version, torch_cuda=torch_cuda, bnb_cuda_version=override)
    sel = inputs.select()
    assert sel is not None and sel.override == override and sel.loaded_file == in_force
    under = underlying_selection(inputs)
    assert under is not None and under.override is None and under.outcome == without
    assert underlying_selection(inputs.without_override()) is None  # no override, nothing underneath


def test_override_reaching_agrees_with_the_selection() -> None:
    # 0.42 with an A6000 as highest GPU: BNB_CUDA_VERSION=123 gives cuda123.so, never cuda123_nocublaslt.so.
    legacy = _inputs("0.42.0", torch_cuda="12.1")
    assert override_reaching(legacy, "libbitsandbytes_cuda123_nocublaslt.so") is None
    assert override_reaching(legacy, "libbitsandbytes_cuda123.so") == ("BNB_CUDA_VERSION", "123")
    # 0.43.x builds "..._nocublaslt124.so" from an override on GPUs below cc 7.5 (issue #1312).
    nocublaslt = _inputs("0.43.3", torch_cuda="12.1", highest_cc=(6, 1))
    assert override_reaching(nocublaslt, "libbitsandbytes_cuda124_nocublaslt.so") is None
    assert override_reaching(_inputs("0.44.1", highest_cc=(6, 1)), "libbitsandbytes_cuda124_nocublaslt.so") == (
        "BNB_CUDA_VERSION",
        "124",
    )
    # ROCm reads BNB_ROCM_VERSION from 0.50 only; 0.46-0.49 take no override at all.
    assert override_reaching(_inputs("0.49.2", torch_cuda=None, torch_hip="7.1"), "libbitsandbytes_rocm70.so") is None
    rocm050 = _inputs("0.50.2", torch_cuda=None, torch_hip="7.1")
    assert override_reaching(rocm050, "libbitsandbytes_rocm70.so") == ("BNB_ROCM_VERSION", "70")


def test_override_variables_by_release() -> None:
    assert override_variable("0.40.1", "cuda") is None  # 0.40.1.post1 is the first to read it (the oracle)
    assert override_variable("0.40.2", "cuda") == "BNB_CUDA_VERSION"
    assert override_variable("0.41.1", "cuda") == "BNB_CUDA_VERSION"
    assert override_variable("0.49.2", "rocm") is None
    assert override_variable("0.50.0", "rocm") == "BNB_ROCM_VERSION"
    assert override_variable("0.50.2", "xpu") is None


@pytest.mark.parametrize(
    ("version", "hip", "expected", "misbuilt"),
    [
        ("0.49.2", "7.14", "libbitsandbytes_rocm84.so", True),
        ("0.46.1", "7.10", "libbitsandbytes_rocm80.so", True),
        ("0.49.2", "7.2", "libbitsandbytes_rocm72.so", False),
        ("0.50.2", "7.14", "libbitsandbytes_rocm714.so", False),
    ],
)
def test_rocm_tag_of_046_049(version: str, hip: str, expected: str, misbuilt: bool) -> None:
    sel = _inputs(version, torch_cuda=None, torch_hip=hip).select()
    assert sel is not None and sel.expected_file == expected
    release = tuple(int(p) for p in version.split("."))
    assert tag_misbuilt(release, (int(hip.split(".", maxsplit=1)[0]), int(hip.split(".")[1]))) is misbuilt


def test_rocm_046_ignores_the_cuda_override() -> None:
    sel = _inputs("0.49.2", torch_cuda=None, torch_hip="7.1", bnb_cuda_version="118").select()
    assert sel is not None and sel.outcome == "override_error"  # 0.47-0.49 reject it
    shipped = (*files("0.46.1"), "libbitsandbytes_rocm63.so")
    sel = _inputs("0.46.1", shipped=shipped, torch_cuda=None, torch_hip="6.3", bnb_cuda_version="118").select()
    assert sel is not None and sel.override is None and sel.loaded_file == "libbitsandbytes_rocm63.so"
