"""What an NVIDIA driver can run: the driver each CUDA toolkit needs, minor-version compatibility, and the last
driver branch of each GPU architecture.

A fix that says "update the driver" must name a driver that exists for the GPU: a Kepler card's last branch is
R470 (CUDA 11.4), so no driver lets it run a CUDA 12 torch. Sources:

- :data:`TOOLKIT_DRIVER`: CUDA Toolkit Release Notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions"
  (the GA release of each minor; Linux x86_64 / Windows), docs.nvidia.com/cuda/cuda-toolkit-release-notes;
- :data:`MINOR_VERSION_DRIVER`: the same notes, Table 2 "CUDA Toolkit and Minimum Required Driver Version for
  CUDA Minor Version Compatibility" (a runtime of that major starts on an older driver of the same major,
  without PTX JIT), and docs.nvidia.com/deploy/cuda-compatibility;
- :data:`LAST_BRANCH`: NVIDIA's support notices: Kepler's last branch is R470 (a legacy branch, CUDA 11.4),
  Fermi's R390 (CUDA 9.1); Maxwell, Pascal and Volta are supported through R580 (CUDA 13.0), the last branch
  before their support ends (CUDA 13.0 release notes, "Deprecated and Dropped Features").
"""

from __future__ import annotations

from dataclasses import dataclass

#: CUDA toolkit (major.minor) -> (minimum Linux x86_64 driver, minimum Windows driver) for full compatibility.
TOOLKIT_DRIVER: dict[str, tuple[str, str]] = {
    "11.0": ("450.36.06", "451.22"),
    "11.1": ("455.23", "456.38"),
    "11.2": ("460.27.03", "460.82"),
    "11.3": ("465.19.01", "465.89"),
    "11.4": ("470.42.01", "471.11"),
    "11.5": ("495.29.05", "496.04"),
    "11.6": ("510.39.01", "511.23"),
    "11.7": ("515.43.04", "516.01"),
    "11.8": ("520.61.05", "520.06"),
    "12.0": ("525.60.13", "527.41"),
    "12.1": ("530.30.02", "531.14"),
    "12.2": ("535.54.03", "536.25"),
    "12.3": ("545.23.06", "545.84"),
    "12.4": ("550.54.14", "551.61"),
    "12.5": ("555.42.02", "555.85"),
    "12.6": ("560.28.03", "560.76"),
    "12.8": ("570.26", "570.65"),
    "12.9": ("575.51.03", "576.02"),
    "13.0": ("580.65.06", "580.88"),
}
#: CUDA major -> the oldest Linux driver on which any runtime of that major starts (minor-version compatibility).
MINOR_VERSION_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


@dataclass(frozen=True)
class LastBranch:
    """The last driver branch of an architecture, and the highest CUDA version it supports."""

    family: str
    branch: str
    cuda: tuple[int, int]


#: Compute capability major (and Volta's 7.0/7.2) -> the last driver branch that supports the GPU. Turing (7.5)
#: and newer are supported by current branches: no entry.
LAST_BRANCH: dict[tuple[int, int], LastBranch] = {
    (2, 0): LastBranch("Fermi", "R390", (9, 1)),
    (3, 0): LastBranch("Kepler", "R470", (11, 4)),
    (5, 0): LastBranch("Maxwell", "R580", (13, 0)),
    (6, 0): LastBranch("Pascal", "R580", (13, 0)),
    (7, 0): LastBranch("Volta", "R580", (13, 0)),
}


def last_branch(cc: tuple[int, int]) -> LastBranch | None:
    """The last driver branch for a GPU of compute capability ``cc``; None when current drivers support it."""
    if cc >= (7, 5):
        return None
    if cc[0] == 7:
        return LAST_BRANCH[(7, 0)]
    return LAST_BRANCH.get((cc[0], 0))


def driver_for(cuda: str, windows: bool = False) -> str | None:
    """The minimum driver for CUDA ``cuda`` ("12.4") with full compatibility; None when not recorded."""
    pair = TOOLKIT_DRIVER.get(".".join(cuda.split(".")[:2]))
    return None if pair is None else pair[1 if windows else 0]
