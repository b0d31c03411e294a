"""bitsandbytes releases whose ``import bitsandbytes`` breaks because of another package.

Two are known: the triton.ops import (0.39-0.45.0, against triton 3.2+) and the undeclared scipy
import (0.39.0-0.41.x). ``rules/packages.py`` turns each into a rule (BNB207, BNB208) from one table;
``rules/workflow.py`` (BNB512) recognises their messages in logs.
"""

from __future__ import annotations

from bnbdoctor.knowledge.ranges import VersionRange

#: bitsandbytes/triton/ imports triton.ops.matmul_perf_model at import time from 0.39; PR #1413
#: removed the import (first in 0.45.1, tags 0.45.0 and 0.45.1 in the bitsandbytes repository).
TRITON_OPS_IMPORT = VersionRange("0.39.0", "0.45.1", "PR #1413; issue #1492", last="0.45.0")
#: Users report working installs from this release on (issue #1492).
TRITON_OPS_REPORTED_WORKING = "0.45.2"
#: triton 3.2 removed triton.ops; torch 2.6 is the first torch that ships it.
TRITON_WITHOUT_OPS = VersionRange("3.2", None, "triton 3.2 release notes; issue #1492")
TORCH_WITH_TRITON_WITHOUT_OPS = VersionRange("2.6", None, "torch 2.6 requires triton 3.2 (issue #1492)")

#: 0.39.0-0.41.x import scipy (for the NF4 data type) without declaring it as a dependency.
SCIPY_IMPORT = VersionRange("0.39.0", "0.42.0", "issue #426", last="0.41.x")
