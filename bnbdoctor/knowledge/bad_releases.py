"""bitsandbytes releases that shipped a regression, each with the release that fixed it.

One row per regression (a release can have several). ``rules/releases.py`` (BNB213) reports an
installed release inside a row's range and builds its upgrade command from the rows' ranges
(``VersionRange.after().pip_spec()``), so the table is the only place these releases are named.
Sources are the fixing pull requests and the issues that reported them; the release a fix first
shipped in is the first tag after its merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnbdoctor.knowledge.ranges import VersionRange, full
from bnbdoctor.knowledge.versions import release_tuple


@dataclass(frozen=True)
class Regression:
    """A regression shipped in ``releases`` (``first <= version < below``); ``below`` is the fix."""

    releases: VersionRange
    what: str  # what breaks, as a finding says it
    symptom: str  # how it shows, in the release's own words where it has any
    references: tuple[str, ...]

    @property
    def fixed_in(self) -> str:
        """The first release with the fix: ``"0.46.1"``."""
        return full(self.releases.below_text)


_BNB = "https://github.com/bitsandbytes-foundation/bitsandbytes/"

#: 0.36.0-0.41.0: the 8-bit optimizers' dynamic quantization map is built wrong. create_dynamic_map's
#: ``if additional_items > 0:`` block sits inside the loop over exponent bits in the 0.36.0 and 0.41.0 tags'
#: functional.py and after it in 0.35.0's and in the 0.41.1 sdist's (read there, not from a changelog).
DYNAMIC_MAP_INDENT = Regression(
    VersionRange(
        "0.36.0",
        "0.41.1",
        "functional.py create_dynamic_map at tags 0.35.0, 0.36.0, 0.41.0; 0.41.1 sdist",
        last="0.41.0",
    ),
    "the 8-bit optimizers' quantization map is built wrong (an if-block indented into a loop in "
    "create_dynamic_map), so training with AdamW8bit and the other 8-bit optimizers goes to a NaN loss",
    "no error: the loss becomes nan within a few steps",
    (_BNB + "issues/227", _BNB + "issues/152", "https://github.com/kohya-ss/sd-scripts/issues/523"),
)
#: 0.46.0: 4-bit parameters lose their quantized state on a device move.
PARAMS4BIT_REQUANTIZED = Regression(
    VersionRange("0.46.0", "0.46.1", "issue #1664, fixed by PR #1665 (first in 0.46.1)"),
    "Params4bit.to() returns a parameter that lost its bnb_quantized flag, so moving a 4-bit model between "
    "devices quantizes its already quantized weights again",
    "RuntimeError: Blockwise quantization only supports 16/32-bit floats, but got torch.uint8",
    (_BNB + "issues/1664", _BNB + "pull/1665"),
)
#: 0.48.0: 8-bit parameters moved between devices break pre-quantized 8-bit checkpoints.
INT8_DEVICE_MOVE = Regression(
    VersionRange("0.48.0", "0.48.1", "issue #1775, fixed by PR #1776 (first in 0.48.1)"),
    "moving 8-bit parameters between devices is broken, so pre-quantized 8-bit checkpoints loaded with "
    "transformers generate garbage",
    "no error: the model's output is wrong",
    (_BNB + "issues/1775", _BNB + "pull/1776"),
)
#: 0.48.0-0.48.1: int8 CPU/disk offload through accelerate fails.
INT8_OFFLOAD = Regression(
    VersionRange("0.48.0", "0.48.2", "PR #1786 (merged after 0.48.1, first in 0.48.2)", last="0.48.1"),
    "an 8-bit model spread over GPUs, the CPU and disk by accelerate (int8 CPU/disk offload) fails",
    "accelerate's int8 offload tests fail",
    (_BNB + "pull/1786",),
)
#: The shipped regressions, oldest first.
REGRESSIONS: tuple[Regression, ...] = (DYNAMIC_MAP_INDENT, PARAMS4BIT_REQUANTIZED, INT8_DEVICE_MOVE, INT8_OFFLOAD)

#: Downstream projects pin around these releases (unsloth: bitsandbytes!=0.46.0,!=0.48.0).
DOWNSTREAM_PINS = "https://github.com/unslothai/unsloth/issues/4518"


def regressions_in(version: str | None) -> list[Regression]:
    """The regressions the release ``version`` ships (none for an unknown or unparseable version)."""
    release = release_tuple(version)
    return [row for row in REGRESSIONS if row.releases.contains(release)] if release else []


def fixing_release(rows: list[Regression]) -> VersionRange:
    """The releases that fix every row: from the newest row's fix on."""
    newest = max(rows, key=lambda row: row.releases.below_release or ())
    return newest.releases.after()
