"""transformers releases that matter to bitsandbytes users: the device_map under-packing fixes, the
range ``bnbdoctor fit`` replicates, and when its bitsandbytes check started to need a GPU.

The under-packing facts come from the shared dispatch research (../shared/reference/dispatch_fit.md
§1, §2.6): transformers #46823, fixed by #47203 (first in 5.14.0) and #47211 (first in 5.18.0).
"""

from __future__ import annotations

from dataclasses import dataclass

from bnbdoctor.fit_protocol import SUPPORTED_TRANSFORMERS_BELOW, SUPPORTED_TRANSFORMERS_MIN
from bnbdoctor.knowledge.ranges import VersionRange, full


@dataclass(frozen=True)
class Fix:
    """A transformers pull request and the releases that contain it."""

    pr: str  # "#47203"
    releases: VersionRange

    @property
    def first(self) -> str:
        """The first release with the fix, as texts name it: ``"5.14.0"``."""
        return full(self.releases.first_text)


#: The per-GPU buffer is sized from the largest no-split block.
NO_SPLIT_BLOCK_FIX = Fix("#47203", VersionRange("5.14", None, "dispatch_fit.md §2.6: #47203 first in 5.14.0"))
#: The buffer also covers the biggest leaf module (embed_tokens, lm_head).
BIGGEST_LEAF_FIX = Fix("#47211", VersionRange("5.18", None, "dispatch_fit.md §2.6: #47211 first in 5.18.0"))

#: The releases with the no-split-block fix but not yet the biggest-leaf one.
ONLY_NO_SPLIT_BLOCK_FIX = VersionRange(
    NO_SPLIT_BLOCK_FIX.releases.first, BIGGEST_LEAF_FIX.releases.first, "dispatch_fit.md §2.6", last="5.17.x"
)

#: The releases whose from_pretrained pipeline the fit engine replicates: the range lives in the fit
#: protocol, which the engine script carries into the patient interpreter (it cannot import this module).
FIT_ENGINE_TRANSFORMERS = VersionRange(
    ".".join(map(str, SUPPORTED_TRANSFORMERS_MIN)),
    ".".join(map(str, SUPPORTED_TRANSFORMERS_BELOW)),
    "bnbdoctor/fit_protocol.py, sent with the engine script",
    last=f"{SUPPORTED_TRANSFORMERS_BELOW[0] - 1}.x" if SUPPORTED_TRANSFORMERS_BELOW[1:] == (0,) else None,
)

#: Since about 4.3x is_bitsandbytes_available() also requires torch.cuda.is_available() (PR #30533).
BNB_CHECK_NEEDS_GPU_SINCE = "4.3x"


@dataclass(frozen=True)
class MisleadingImportError:
    """transformers releases whose from_pretrained(..., quantization_config=BitsAndBytesConfig(...)) raises an
    ImportError naming accelerate / "the latest version of bitsandbytes" when torch.cuda.is_available() is False,
    both packages installed. ``bnb_below``: only with a bitsandbytes older than this."""

    releases: VersionRange
    message: str  # the start of the ImportError text (the 4-bit quantizer says "4-bit" where it reads "8-bit")
    site: str  # where it is raised
    bnb_below: str | None = None


#: Read in the released wheels of every minor release 4.30-4.57 (their last patch, and the .0 of each
#: boundary): ``utils/import_utils.py`` is_bitsandbytes_available(), and the bnb check in
#: ``modeling_utils.py`` (< 4.38) or ``quantizers/quantizer_bnb_{4,8}bit.py`` validate_environment() (4.38+).
#: - 4.32 adds ``and torch.cuda.is_available()`` to is_bitsandbytes_available() (PR #24995), and the
#:   ImportError comes before any GPU check (4.32-4.35 in modeling_utils, 4.38-4.40 in the quantizers);
#: - 4.36-4.37 and 4.41-4.44 check torch.cuda.is_available() first and raise "No GPU found" instead;
#: - 4.45 needs CUDA only for a bitsandbytes older than 0.43.1 (which required it at import), so the
#:   "requires the latest version of bitsandbytes" ImportError remains for those;
#: - 4.53 names the cause: "The installed version of bitsandbytes (<0.43.1) requires CUDA".
IMPORTERROR_IN_MODELING_UTILS = MisleadingImportError(
    VersionRange(
        "4.32", "4.36", "transformers 4.32.0-4.35.2 modeling_utils.py, import_utils.py (PR #24995)", last="4.35"
    ),
    "Using `load_in_8bit=True` requires Accelerate: `pip install accelerate` and the latest version of bitsandbytes",
    "modeling_utils.from_pretrained",
)
IMPORTERROR_IN_QUANTIZERS = MisleadingImportError(
    VersionRange("4.38", "4.41", "transformers 4.38.0-4.40.2 quantizers/quantizer_bnb_8bit.py", last="4.40"),
    "Using `bitsandbytes` 8-bit quantization requires Accelerate: `pip install accelerate` and the latest "
    "version of bitsandbytes",
    "quantizer_bnb_8bit.validate_environment",
)
IMPORTERROR_FOR_OLD_BNB = MisleadingImportError(
    VersionRange("4.45", "4.53", "transformers 4.45.0-4.52.4 import_utils.py, quantizer_bnb_8bit.py", last="4.52"),
    "Using `bitsandbytes` 8-bit quantization requires the latest version of bitsandbytes: "
    "`pip install -U bitsandbytes`",
    "quantizer_bnb_8bit.validate_environment",
    bnb_below="0.43.1",
)
MISLEADING_BNB_IMPORTERRORS = (IMPORTERROR_IN_MODELING_UTILS, IMPORTERROR_IN_QUANTIZERS, IMPORTERROR_FOR_OLD_BNB)
#: The releases between them check torch.cuda.is_available() first and raise "No GPU found" instead (same wheels).
GPU_CHECKED_FIRST_IN_MODELING_UTILS = VersionRange(
    "4.36", "4.38", "transformers 4.36.0-4.37.2 modeling_utils.py", last="4.37"
)
GPU_CHECKED_FIRST_IN_QUANTIZERS = VersionRange(
    "4.41", "4.45", "transformers 4.41.0-4.44.2 quantizer_bnb_8bit.py", last="4.44"
)
#: From 4.45 is_bitsandbytes_available() needs CUDA only for a bitsandbytes older than 0.43.1 (which required
#: it at import): the transformers to upgrade to for bitsandbytes without CUDA (import_utils.py, 4.45.0).
BNB_CHECK_WITHOUT_CUDA = VersionRange("4.45", None, "transformers 4.45.0 import_utils.py is_bitsandbytes_available")


def misleading_importerror(transformers: str | None, bitsandbytes: str | None) -> MisleadingImportError | None:
    """The ImportError these versions raise when torch sees no CUDA device, or None (the versions raise another
    error, or none). Where only an old bitsandbytes triggers it, an unknown bitsandbytes version does not."""
    for entry in MISLEADING_BNB_IMPORTERRORS:
        if not entry.releases.contains(transformers):
            continue
        if entry.bnb_below is None:
            return entry
        if VersionRange(None, entry.bnb_below, entry.releases.source).contains(bitsandbytes):
            return entry
    return None
