"""What transformers allows with a 4-bit/8-bit bitsandbytes model, release by release.

The boundaries the k-bit log rules (``rules/workflow_logs.py``) read, each with its source:

- the bare ``load_in_4bit=`` / ``load_in_8bit=`` keywords of ``from_pretrained``: ``load_in_4bit``
  arrived in transformers 4.30 (with ``BitsAndBytesConfig``'s 4-bit fields); transformers 5.0
  removed both keywords in favour of ``quantization_config`` (transformers PR #41287, trl PR #4262);
- moving a quantized model with ``.to()``/``.cuda()``: transformers refuses it for 4-bit models
  with bitsandbytes before 0.43.2 and for 8-bit models with bitsandbytes before 0.48 (the checks in
  ``PreTrainedModel.to``/``cuda``, transformers issue #38717); casting to another dtype is refused
  with every release.
"""

from __future__ import annotations

from bnbdoctor.knowledge.ranges import VersionRange

#: transformers releases whose from_pretrained knows ``load_in_4bit=``.
LOAD_IN_4BIT_KWARG = VersionRange("4.30", None, "failure catalog: the 4-bit keyword first in transformers 4.30")
#: transformers releases whose from_pretrained no longer takes ``load_in_4bit=``/``load_in_8bit=``.
KBIT_KWARGS_REMOVED = VersionRange("5.0", None, "transformers PR #41287 (first in 5.0)")
#: transformers releases whose from_pretrained takes both bare keywords.
BARE_KBIT_KWARGS = VersionRange(
    LOAD_IN_4BIT_KWARG.first, KBIT_KWARGS_REMOVED.first, "the two ranges above: 4.30 up to 5.0", last="4.x"
)
#: bitsandbytes releases with which transformers lets a 4-bit model move (``.to(device)``).
BNB_4BIT_MOVE = VersionRange("0.43.2", None, "transformers PreTrainedModel.to: 4-bit moves need bitsandbytes 0.43.2")
#: bitsandbytes releases with which transformers lets an 8-bit model move.
BNB_8BIT_MOVE = VersionRange("0.48", None, "transformers PreTrainedModel.to: 8-bit moves need bitsandbytes 0.48.0")

#: bitsandbytes on ROCm refused the 4-bit blocksize 64 (backends/cuda/ops.py: ``torch._check(blocksize in [4096, ...,
#: 128])`` under HIP, PR #1683); 0.49.0 added it on GPUs with 32-wide wavefronts (PR #1748), 0.49.2 on 64-wide ones,
#: the CDNA/Instinct GPUs (PR #1856). Forge#2462 shows the multi-backend preview's own refusal.
ROCM_BLOCKSIZE_64_REFUSED = VersionRange(
    "0.47.0", "0.49.2", "bitsandbytes PRs #1683 (0.47.0), #1748 (0.49.0), #1856 (0.49.2); unsloth#3279", last="0.49.1"
)
ROCM_BLOCKSIZE_64_WAVE32 = VersionRange(
    "0.49.0", None, "bitsandbytes PR #1748: blocksize 64 on 32-wide wavefront AMD GPUs"
)
ROCM_BLOCKSIZE_64_WAVE64 = VersionRange("0.49.2", None, "bitsandbytes PR #1856: kQuantizeBlockwise64 for ROCm")
