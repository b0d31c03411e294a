"""What bitsandbytes needs of a GPU, and which releases changed it.

Compute-capability thresholds (with the architecture that starts at each), the architectures the
PyPI wheels dropped and when, and the releases whose int8 matmul or library choice depended on the
GPU. Sources: ../shared/reference/bnb_internals.md §1 and §4 (read from bitsandbytes' tags, docs and
real wheels) unless an entry names another.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnbdoctor.knowledge.ranges import VersionRange, minor
from bnbdoctor.knowledge.releases import MIN_CC_INT8_MATMUL, MIN_CC_QUANTIZATION


@dataclass(frozen=True)
class Capability:
    """A compute-capability threshold and the GPU architecture that starts there."""

    cc: tuple[int, int]
    architecture: str
    source: str

    @property
    def text(self) -> str:
        """``"6.0"``: how texts write a compute capability."""
        return f"{self.cc[0]}.{self.cc[1]}"


#: 8-bit optimizers and 4/8-bit quantization: Pascal and newer (0.48+ docs).
QUANTIZATION_MIN = Capability(MIN_CC_QUANTIZATION, "Pascal", "bnb_internals.md §4, 0.48+ docs: Pascal 6.0+")
#: LLM.int8()'s fast matmul needs int8 tensor cores (has_cublaslt / has_imma: cc >= 7.5).
INT8_MATMUL_MIN = Capability(MIN_CC_INT8_MATMUL, "Turing", "bnb_internals.md §4: has_cublaslt = cc >= (7, 5)")
#: The first Maxwell capability: anything below it is Kepler or older.
MAXWELL_MIN = Capability((5, 0), "Maxwell", "CUDA C Programming Guide, compute capabilities: Maxwell is 5.x")


@dataclass(frozen=True)
class DroppedArchitecture:
    """A GPU architecture the PyPI wheels stopped shipping kernels for."""

    family: str
    major: int  # its compute-capability major
    removed_in: str  # the first release without its kernels
    last_with: str | None  # the last release with them, where a rule names it
    source: str
    deprecated_in: str | None = None  # the first release whose docs call it deprecated

    @property
    def last_with_minor(self) -> str:
        """The series of the last release with its kernels: ``"0.47"``."""
        if self.last_with is None:
            raise ValueError(f"no last release with {self.family} kernels is recorded")
        return minor(self.last_with)


KEPLER = DroppedArchitecture(
    "Kepler", 3, "0.39.1", None, "bnb_internals.md §4: Kepler binaries left pip in 0.39.0/0.39.1 (CHANGELOG 0.39.0)"
)
MAXWELL = DroppedArchitecture(
    "Maxwell",
    5,
    "0.48.0",
    "0.47.0",
    "bnb_internals.md §4: 0.48 docs 'Maxwell support is not included in PyPI "
    "distributions from v0.48.0'; wheels 0.48.2/0.49.2 have no sm_50; the 0.45-0.47 docs call Maxwell deprecated",
    deprecated_in="0.45",
)
DROPPED_ARCHITECTURES = (KEPLER, MAXWELL)

# The last driver branch of each architecture (Kepler's R470, ...) lives in knowledge/drivers.py.


def pre_pascal_family(cc: tuple[int, int]) -> str:
    """The architecture of a GPU below :data:`QUANTIZATION_MIN`, as texts name it."""
    for arch in DROPPED_ARCHITECTURES:
        if cc[0] == arch.major:
            return arch.family
    return f"pre-{QUANTIZATION_MIN.architecture}"


#: Releases before 0.37.0 have no int8 matmul for GPUs without int8 tensor cores ("Your GPU does
#: not support Int8 Matmul!"); 0.37.0 added the slower path (issue #529, CHANGELOG 0.37.0).
INT8_WITHOUT_FALLBACK = VersionRange(None, "0.37.0", "CHANGELOG 0.37.0; issue #529", last="0.36")
#: 0.37.0 crashes at import on cc < 7.5 ("NameError: name 'cuda_setup' is not defined"), fixed in
#: 0.37.1 (failure catalog: cuda_setup_nameerror_bnb_0_37).
INT8_NAMEERROR = VersionRange(
    "0.37.0",
    "0.37.1",
    "failure catalog cuda_setup_nameerror_bnb_0_37; CHANGELOG 0.37.1; tests/data/oracle/bnb_loader.json (0.37.0 raises "
    "NameError at import below cc 7.5, 0.37.1 does not)",
)
#: supports_igemmlt() excludes GPUs by name (NO_TENSOR_CORE_NAMES: GTX 16xx, cc 7.5 without tensor
#: cores); bnbdoctor counts it as used up to 0.44.x.
GTX16_NAME_CHECK = VersionRange(
    None,
    "0.45",
    "bnb_internals.md §4: supports_igemmlt(), repo@0.41.0 and 0.45.0:bitsandbytes/autograd/_functions.py",
    last="0.44.x",
)
#: Up to 0.44.x one native library (cuBLASLt or _nocublaslt) is chosen for the whole process from
#: the highest compute capability among visible GPUs; 0.45.0 dropped the _nocublaslt builds.
CC_CHOOSES_LIBRARY = VersionRange(
    None, "0.45", "bnb_internals.md §1.1-1.3: highest_compute_capability, _nocublaslt gone in 0.45.0", last="0.44.x"
)
#: The newest compute capability CUDA 10.x builds for (Turing, 7.5): Ampere (8.0) and newer need CUDA 11.0+ (CUDA 11.0
#: release notes), so a CUDA 10 runtime found beside such a GPU is not the one torch drives it with.
CUDA_10_NEWEST_CC = (7, 5)
#: The compute capabilities only Jetson's integrated GPUs have (CUDA C Programming Guide, compute capabilities):
#: 5.3 TX1/Nano, 6.2 TX2, 7.2 Xavier, 8.7 Orin. A log that shows one is a Jetson, whatever else it names.
JETSON_CCS = frozenset({(5, 3), (6, 2), (7, 2), (8, 7)})
