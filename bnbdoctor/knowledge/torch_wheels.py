"""The GPU architectures PyTorch's own CUDA wheels are built for, per (torch release, CUDA flavor).

PyTorch's wheels carry SASS for the ``TORCH_CUDA_ARCH_LIST`` of their build (and PTX for the
entries marked ``+PTX``); a GPU that none of them can run gets "no kernel image is available" from
every torch op. bnbdoctor reads the real list from the installed library's fatbin headers
(:mod:`bnbdoctor.native.fatbin`); this table is the fallback when the library cannot be read, and
it is the list of published (torch, CUDA) pairs that the fix commands may name.

Only Linux x86-64 wheels are recorded: Windows builds use other lists (sm_37 and compute_37 in the
cu118 builds; no +PTX on Windows per pytorch#172352), so on Windows an unreadable library stays
"not checked". Releases not recorded are judged by the newest recorded row of the
same CUDA flavor before them, and a finding drawn from such a row says so (a warning, not an error).

Sources (each row names its own):

- ``.ci/manywheel/build_cuda.sh`` in github:pytorch/pytorch (the ``TORCH_CUDA_ARCH_LIST`` per CUDA
  version; the 2.8 file drops sm_50-sm_60 from 12.8/12.9 and keeps sm_70, pytorch#157517);
- torch's own warning, which prints ``torch.cuda.get_arch_list()``: "The current PyTorch install
  supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" (cu121/cu124, pytorch#150733)
  and "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120" (2.7 cu128);
- PyTorch's CUDA support matrix (RELEASE.md, quoted in pytorch#172352): cu130 is Turing (7.5) and newer;
- torch 2.13.0's own ``torch/cuda/__init__.py``: ``PYTORCH_RELEASES_CODE_CC`` ("kept in sync with
  .ci/manywheel/build_cuda.sh") for its cu126/cu129/cu130/cu132 builds, and ``DEVICE_REQUIREMENT``,
  which runs code for a discrete GPU's architecture on no integrated (Jetson) GPU of the same major.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnbdoctor.knowledge.ranges import VersionRange
from bnbdoctor.knowledge.versions import major_minor, release_tuple

TORCH_WHEEL_INDEX = "https://download.pytorch.org/whl/cu{nodot}"
#: torch.version.cuda of the flavor that first builds for Blackwell consumer GPUs (sm_120).
BLACKWELL_FIRST_CUDA = "12.8"


@dataclass(frozen=True)
class TorchBuild:
    """One published (torch release, CUDA flavor) of the Linux x86-64 wheels and its arch list."""

    release: str  # the release a command pins: "2.8.0"
    cuda: str  # torch.version.cuda: "12.8"
    arch_list: str  # TORCH_CUDA_ARCH_LIST as the build sets it: "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
    source: str

    @property
    def flavor(self) -> str:
        """``cu128``: the wheel index's and the local version's name for the CUDA version."""
        return "cu" + self.cuda.replace(".", "")

    @property
    def index_url(self) -> str:
        return TORCH_WHEEL_INDEX.format(nodot=self.cuda.replace(".", ""))

    @property
    def sass(self) -> tuple[int, ...]:
        return tuple(_arch(item) for item in self.arch_list.split(";"))

    @property
    def ptx(self) -> tuple[int, ...]:
        return tuple(_arch(item) for item in self.arch_list.split(";") if item.endswith("+PTX"))

    @property
    def minor(self) -> tuple[int, ...]:
        return (release_tuple(self.release) or (0, 0))[:2]

    def install_command(self) -> str:
        return f'pip install --force-reinstall "torch=={self.release}" --index-url {self.index_url}'


def _arch(item: str) -> int:
    major, minor = item.removesuffix("+PTX").split(".")
    return int(major) * 10 + int(minor)


_CU12_BASE = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_CU118_BASE = "3.7;" + _CU12_BASE
_SRC_25 = (
    "build_cuda.sh of 2.4-2.6 (base 5.0;6.0;7.0;7.5;8.0;8.6, +9.0 for 12.x, +3.7;9.0 for 11.8); "
    "warning text 'supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90' (pytorch#150733)"
)
_SRC_27 = (
    "build_cuda.sh of 2.7 (12.8: 7.5;8.0;8.6;9.0;10.0;12.0+PTX; 12.6: 5.0 ... 9.0); warning text "
    "'supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120'"
)
_SRC_28 = "build_cuda.sh of 2.8 (12.6: 5.0 ... 9.0; 12.8: 7.0 ... 12.0; 12.9: 7.0 ... 12.0+PTX; pytorch#157517)"
_SRC_213 = "torch 2.13.0 torch/cuda/__init__.py PYTORCH_RELEASES_CODE_CC, x86_64 (PTX not recorded there)"
_CU13_213 = "7.5;8.0;8.6;9.0;10.0;12.0"
_SRC_29 = "build_cuda.sh / RELEASE.md support matrix for 2.9 (cu126 5.0+, cu128 7.0+, cu130 7.5+ with 12.0+PTX)"

#: Every recorded (torch, CUDA) pair, oldest release first. Each is on download.pytorch.org/whl/cuXYZ.
TORCH_BUILDS: tuple[TorchBuild, ...] = (
    TorchBuild("2.4.1", "11.8", _CU118_BASE, _SRC_25),
    TorchBuild("2.4.1", "12.1", _CU12_BASE, _SRC_25),
    TorchBuild("2.4.1", "12.4", _CU12_BASE, _SRC_25),
    TorchBuild("2.5.1", "11.8", _CU118_BASE, _SRC_25),
    TorchBuild("2.5.1", "12.1", _CU12_BASE, _SRC_25),
    TorchBuild("2.5.1", "12.4", _CU12_BASE, _SRC_25),
    TorchBuild("2.6.0", "11.8", _CU118_BASE, _SRC_25),
    TorchBuild("2.6.0", "12.4", _CU12_BASE, _SRC_25),
    TorchBuild("2.6.0", "12.6", _CU12_BASE, _SRC_25),
    TorchBuild("2.7.1", "12.6", _CU12_BASE, _SRC_27),
    TorchBuild("2.7.1", "12.8", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", _SRC_27),
    TorchBuild("2.8.0", "12.6", _CU12_BASE, _SRC_28),
    TorchBuild("2.8.0", "12.8", "7.0;7.5;8.0;8.6;9.0;10.0;12.0", _SRC_28),
    TorchBuild("2.8.0", "12.9", "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX", _SRC_28),
    TorchBuild("2.9.0", "12.6", _CU12_BASE, _SRC_29),
    TorchBuild("2.9.0", "12.8", "7.0;7.5;8.0;8.6;9.0;10.0;12.0", _SRC_29),
    TorchBuild("2.9.0", "13.0", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", _SRC_29),
    TorchBuild("2.13.0", "12.6", _CU12_BASE, _SRC_213),
    TorchBuild("2.13.0", "12.9", _CU13_213, _SRC_213),
    TorchBuild("2.13.0", "13.0", _CU13_213, _SRC_213),
    TorchBuild("2.13.0", "13.2", _CU13_213, _SRC_213),
)

#: torch releases whose cu128 wheels have no Volta (sm_70): 2.7 builds 12.8 from 7.5, 2.8 restores 7.0.
CU128_WITHOUT_VOLTA = VersionRange("2.7", "2.8", f"{_SRC_27}; {_SRC_28}")

#: Integrated (Jetson/Tegra) GPUs: SASS built for the discrete GPUs of their major does not run on
#: them, only their own (torch 2.13 DEVICE_REQUIREMENT: 60 excludes 62, 70 excludes 72, ...).
INTEGRATED_CCS = ((5, 3), (6, 2), (7, 2), (8, 7))


def arch_runs_on(sass: tuple[int, ...] | list[int], ptx: tuple[int, ...] | list[int], cc: tuple[int, int]) -> bool:
    """CUDA's rules: SASS for sm_XY runs on sm_XZ with Z >= Y (same major); PTX for compute_XY is
    JIT-compiled by the driver for any GPU with cc >= XY."""
    major, minor = cc
    if cc in INTEGRATED_CCS:
        if major * 10 + minor in sass:
            return True
    elif any(arch // 10 == major and arch % 10 <= minor for arch in sass):
        return True
    return any((arch // 10, arch % 10) <= cc for arch in ptx)


@dataclass(frozen=True)
class RecordedList:
    """The table's answer for an installed torch: the row, and whether it is that exact release line."""

    build: TorchBuild
    exact: bool  # False: a newer torch judged by the newest recorded row of its CUDA flavor


def recorded_list(torch_version: str | None, torch_cuda: str | None) -> RecordedList | None:
    """The recorded arch list of this torch (``2.8.0+cu128``, CUDA ``12.8``), or None when unrecorded."""
    release = release_tuple(torch_version)
    cuda = major_minor(torch_cuda)
    if release is None or cuda is None:
        return None
    same_cuda = [b for b in TORCH_BUILDS if major_minor(b.cuda) == cuda]
    for build in same_cuda:
        if build.minor == release[:2]:
            return RecordedList(build, True)
    older = [b for b in same_cuda if b.minor < release[:2]]
    return RecordedList(max(older, key=lambda b: b.minor), False) if older else None


def builds_for(cc: tuple[int, int]) -> list[TorchBuild]:
    """Published builds whose arch list runs on ``cc``: newest release first, then newest CUDA."""
    good = [b for b in TORCH_BUILDS if arch_runs_on(b.sass, b.ptx, cc)]
    return sorted(good, key=lambda b: (b.minor, major_minor(b.cuda) or (0, 0)), reverse=True)
