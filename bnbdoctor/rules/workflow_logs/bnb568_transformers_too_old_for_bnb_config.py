"""BNB568 transformers-too-old-for-bnb-config: passes when the log shows no import of BitsAndBytesConfig failing in transformers."""

from __future__ import annotations

from bnbdoctor.facts import Facts
from bnbdoctor.findings import Hit, Severity
from bnbdoctor.knowledge import signatures as S
from bnbdoctor.knowledge.features import TRANSFORMERS_BNB_CONFIG
from bnbdoctor.rules import log_evidence as log
from bnbdoctor.rules.base import rule

TRANSFORMERS_VERSION = 'python -c "import sys, transformers; print(sys.executable, transformers.__version__)"'

FINDING = log.LogFinding(
    (S.TRANSFORMERS_LACKS_BNB_CONFIG,),
    title=f"The transformers that runs is older than BitsAndBytesConfig ({TRANSFORMERS_BNB_CONFIG.first_text})",
    explanation="BitsAndBytesConfig, transformers' class for bitsandbytes settings, exists from transformers "
    f"{TRANSFORMERS_BNB_CONFIG.first_text}; "
    "the application imports it, and the Python that runs it has an older transformers (often another Python than "
    "the one the application set up).",
    fix="Upgrade transformers in the Python that runs the application (or install the version it pins).",
    commands=(f'pip install -U "transformers{TRANSFORMERS_BNB_CONFIG.pip_spec()}"', TRANSFORMERS_VERSION),
    also_quoted=(S.PACKAGE_VERSION,),
    limit=2,
)


@rule(
    Severity.ERROR,
    "The log shows no import of BitsAndBytesConfig failing in transformers",
    needs=("log",),
    covers=("transformers_too_old_for_bnb_config",),
    references=(
        "https://github.com/oobabooga/text-generation-webui/issues/942",
        "https://github.com/Zuellni/ComfyUI-Custom-Nodes/issues/9",
    ),
    confirm=(TRANSFORMERS_VERSION,),
)
def transformers_too_old_for_bnb_config(facts: Facts) -> Hit | None:
    """## What it detects

    The rule fires on `ImportError: cannot import name 'BitsAndBytesConfig' from 'transformers'`, at an application's
    start (text-generation-webui's server, a ComfyUI custom node). A misspelt name (`BitssAndBytesConfig`) or the
    class imported from `bitsandbytes` is not this: bitsandbytes never had the class.

    ## Why it matters

    `BitsAndBytesConfig` is how transformers takes bitsandbytes quantization settings; it was added in
    transformers {{ features.TRANSFORMERS_BNB_CONFIG.first_text }} (March 2023). An application that imports it
    stops at start when its Python has an older transformers: often a system Python (`C:\\Python\\Python310`)
    rather than the environment the application's installer made, or an old pin kept by a reinstall. bitsandbytes
    has not even been imported yet.

    ## How to fix

    Upgrade transformers in the Python that runs the application (or install the version the application pins):

    ```bash
    <that python> -m pip install -U "transformers>={{ features.TRANSFORMERS_BNB_CONFIG.first_text }}"
    ```

    and check which Python that is (`where python` on Windows, `which python`, or the application's own
    environment).
    """
    return FINDING.hit(facts)
