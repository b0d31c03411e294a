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

#: The releases whose from_pretrained pipeline the fit engine replicates: the range lives in the fit
#: protocol, which the engine script carries into the patient interpreter (it cannot import this module).
FIT_ENGINE_TRANSFORMERS = VersionRange(
    ".".join(map(str, SUPPORTED_TRANSFORMERS_MIN)),
    ".".join(map(str, SUPPORTED_TRANSFORMERS_BELOW)),
    "bnbdoctor/fit_protocol.py, sent with the engine script",
)

#: Since about 4.3x is_bitsandbytes_available() also requires torch.cuda.is_available() (PR #30533).
BNB_CHECK_NEEDS_GPU_SINCE = "4.3x"
