"""What packages built on bitsandbytes demand of it, and where bnbdoctor reads that demand.

transformers 5 keeps its minimum bitsandbytes in one constant of its own source (PR #41283 added
``BITSANDBYTES_MIN_VERSION`` to ``utils/import_utils.py`` and made ``is_bitsandbytes_available()``
compare against it). The patient probe reads the constant from the installed transformers (ast,
never imported), so bnbdoctor follows the value that transformers release ships; nothing here
repeats the number. Before 5.0 transformers had no such constant: its quantizers only checked that
bitsandbytes imports (and, from 4.3x, that CUDA is available; see ``knowledge/transformers.py``).
"""

from __future__ import annotations

from bnbdoctor.knowledge.ranges import VersionRange

#: Where the probe reads transformers' minimum (kept in step with probes/patient_script.py).
TRANSFORMERS_BNB_CONSTANT = "BITSANDBYTES_MIN_VERSION"
TRANSFORMERS_BNB_FILE = "transformers/utils/import_utils.py"
#: The transformers releases that carry the constant.
TRANSFORMERS_WITH_BNB_MINIMUM = VersionRange(
    "5.0", None, "transformers PR #41283 ('[v5] Bump min version of bitsandbytes'), first in 5.0.0"
)
TRANSFORMERS_BNB_MINIMUM_PR = "https://github.com/huggingface/transformers/pull/41283"
TRANSFORMERS_IMPORT_UTILS = (
    "https://github.com/huggingface/transformers/blob/main/src/transformers/utils/import_utils.py"
)
