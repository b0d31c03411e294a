"""What the workflow rules share: helpers and constants used by more than one of them."""

from __future__ import annotations

import re

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.loader import LEGACY_CUDA_SETUP
from bnbdoctor.knowledge.platforms import WINDOWS_WHEELS
from bnbdoctor.knowledge.signatures import SignatureId
from bnbdoctor.rules import log_evidence as log

BNB_ERRORS = "https://huggingface.co/docs/bitsandbytes/main/en/errors"


PYTHON_M_BNB = "python -m bitsandbytes"


#: Upgrade commands several rules print, built from the boundaries they rest on.
UPGRADE_TO_WINDOWS_WHEELS = f'pip install -U "bitsandbytes{WINDOWS_WHEELS.pip_spec()}"'


UPGRADE_PAST_LEGACY_SETUP = f'pip install -U "bitsandbytes{LEGACY_CUDA_SETUP.after().pip_spec()}"'


#: Where bitsandbytes' kernel check names the source line it failed at (``at line 114 in file /src/ops.cu``).
_KERNEL_SITE = re.compile(r"at line (\d+) in file ([\w./\\:-]+)")


def kernel_site(text: str, template: str) -> str:
    """``template`` filled with the file name and line a bitsandbytes kernel check names, or "" when it names none."""
    found = _KERNEL_SITE.search(text)
    if found is None:
        return ""
    name = re.split(r"[\\/]", found.group(2))[-1]
    return template.format(f"{name}:{found.group(1)}")


def _severity_as_consequence(facts: Facts, *explained_by: SignatureId) -> tuple[Severity, str]:
    """Error when the log shows nothing that explains a consequence; info (and why) when it does."""
    roots = [s for s in log.roots_seen(facts) if s != S.SLOW_INT8_MATMUL]
    extra = [s for s in explained_by if log.seen(facts, s)]
    cause = log.consequence_of(facts) if roots else None
    if cause:
        return Severity.INFO, f" It is a consequence of the cause reported above ({cause})."
    if extra:
        return Severity.INFO, " It is a consequence of the CPU fallback reported above."
    return Severity.ERROR, ""
